/*
 * http.c - the HTTP side of `andrea serve`, on libmicrohttpd with a thread per
 * connection: a connection's thread may block while its request is decoded (a
 * non-streamed answer) or while it waits for the next chunk (MHD_create_response_from_
 * callback for Server-Sent Events), so the scheduler never waits on a socket.
 *
 * Defences, each against one way a client can hold the server:
 *   - bodies over --max-body: 413 from Content-Length before a byte is read, or when a
 *     chunked body passes the limit (the rest is read and dropped);
 *   - a client that sends a request slowly (a byte a second keeps MHD's idle timeout
 *     from firing): the header watchdog shuts a connection down when a whole request has
 *     not arrived --header-timeout seconds after the connection opened or its last
 *     request ended;
 *   - idle connections: MHD's --conn-timeout; open connections: --max-conns;
 *   - a client that goes away mid-answer: its failed write (streams) or the peer's EOF,
 *     checked while waiting, cancels the job, which leaves the batch at the next step.
 */
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "explorer.h"
#include "metrics.h"
#include "request.h"
#include "scheduler.h"
#include "server.h"
#include "sse.h"
#include "util/json.h"
#include "util/perf.h"

enum { R_COMPLETIONS, R_CHAT, R_MODELS, R_HEALTH, R_METRICS, R_PAGE, R_ATTENTION, R_NONE };
static const char *const ROUTE[] = {"/v1/completions", "/v1/chat/completions", "/v1/models",
                                    "/health", "/metrics", "/", "/attention", "other"};

typedef struct conn_track { /* one open connection, for the header watchdog */
    int fd;
    double since;           /* opened, or its last request ended */
    int busy, killed;       /* busy: a whole request arrived and is being answered */
    struct conn_track *prev, *next;
} conn_track;

typedef struct {
    const serve_config *cfg;
    serve_sched *sched;
    serve_metrics mx;
    pthread_mutex_t track_mu;
    conn_track *tracked;
} server;

typedef struct { /* one request (MHD's con_cls) */
    int route;
    andrea_buffer body;
    int too_big;
    conn_track *ct;
    serve_job *job; /* the connection's reference */
} request;

/* set by SIGINT/SIGTERM: waiting connections give up, then the daemon stops */
static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

/* ---- responses ------------------------------------------------------------------------ */

static enum MHD_Result respond(server *sv, struct MHD_Connection *c, int route, int status,
                               const char *type, const void *data, size_t n) {
    struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    if (status == 429) MHD_add_response_header(r, "Retry-After", "1");
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    serve_metrics_request(&sv->mx, ROUTE[route], status);
    return ok;
}

static enum MHD_Result respond_buf(server *sv, struct MHD_Connection *c, int route, int status,
                                   const char *type, andrea_buffer *b) {
    enum MHD_Result ok = respond(sv, c, route, status, type, b->data ? b->data : "", b->len);
    andrea_buffer_free(b);
    return ok;
}

static enum MHD_Result respond_error(server *sv, struct MHD_Connection *c, int route,
                                     const serve_error *e) {
    andrea_buffer b = {0};
    andrea_writer w = andrea_writer_buffer(&b);
    serve_error_json(&w, e);
    return respond_buf(sv, c, route, e->status, "application/json", &b);
}

static enum MHD_Result fail(server *sv, struct MHD_Connection *c, int route, int status,
                            const char *type, const char *code, const char *msg) {
    serve_error e;
    serve_fail(&e, status, type, NULL, code, "%s", msg);
    return respond_error(sv, c, route, &e);
}

/* Has the client closed its side? (poll + a peeked read of 0 bytes: EOF) */
static int peer_closed(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 1;
    struct pollfd p = {ci->connect_fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return 1;
    char ch;
    ssize_t k = recv(ci->connect_fd, &ch, 1, MSG_PEEK);
    return k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR);
}

/* ---- streams -------------------------------------------------------------------------- */

typedef struct {
    server *sv;
    serve_job *job;
    struct MHD_Connection *conn;
} stream;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    stream *st = cls;
    for (;;) {
        size_t n = 0;
        int finished = serve_job_take(st->sv->sched, st->job, buf, max, &n, 0.25);
        if (n) return (ssize_t)n;
        if (finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (peer_closed(st->conn) || stop_signal) {
            serve_job_cancel(st->sv->sched, st->job);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
}

static void stream_free(void *cls) {
    stream *st = cls;
    serve_job_release(st->sv->sched, st->job);
    free(st);
}

/* ---- the routes ------------------------------------------------------------------------- */

static enum MHD_Result completion(server *sv, struct MHD_Connection *c, request *r) {
    serve_params p;
    serve_error e;
    int kind = r->route == R_CHAT ? SERVE_CHAT : SERVE_COMPLETION;
    if (serve_parse_request(sv->cfg, kind, r->body.data ? r->body.data : "", r->body.len, &p, &e)) {
        serve_params_free(&p);
        return respond_error(sv, c, r->route, &e);
    }
    serve_job *j = serve_job_new(&p, sv->cfg->model_name);
    if (!j) {
        serve_params_free(&p);
        return fail(sv, c, r->route, 500, "server_error", NULL, "out of memory");
    }
    r->job = j;
    if (serve_sched_submit(sv->sched, j))
        return fail(sv, c, r->route, 429, "rate_limit_error", "queue_full",
                    "the server is busy: every batch slot is taken and the queue is full; retry later");
    if (j->p.stream) {
        stream *st = malloc(sizeof *st);
        struct MHD_Response *resp = NULL;
        if (st) {
            *st = (stream){sv, j, c};
            serve_job_retain(sv->sched, j);
            resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_free);
            if (!resp) stream_free(st);
        }
        if (!resp) {
            serve_job_cancel(sv->sched, j);
            return fail(sv, c, r->route, 500, "server_error", NULL, "out of memory");
        }
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        enum MHD_Result ok = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        serve_metrics_request(&sv->mx, ROUTE[r->route], 200);
        return ok;
    }
    while (!serve_job_wait_done(sv->sched, j, 0.25))
        if (peer_closed(c) || stop_signal) {
            serve_job_cancel(sv->sched, j);
            return MHD_NO; /* nobody to answer */
        }
    if (j->failed) return respond_error(sv, c, r->route, &j->err);
    andrea_buffer b = {0};
    andrea_writer w = andrea_writer_buffer(&b);
    if (serve_response_json(&w, j, sv->cfg->tok)) {
        andrea_buffer_free(&b);
        return fail(sv, c, r->route, 500, "server_error", NULL, "out of memory");
    }
    return respond_buf(sv, c, r->route, 200, "application/json", &b);
}

static enum MHD_Result attention(server *sv, struct MHD_Connection *c, request *r, int post) {
    const char *text = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "text");
    size_t n = text ? strlen(text) : 0;
    json_t *o = NULL;
    if (post) { /* {"text": "..."} */
        json_error_t je;
        o = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, &je);
        json_t *t = o ? json_object_get(o, "text") : NULL;
        if (!json_is_string(t)) {
            json_decref(o);
            return fail(sv, c, R_ATTENTION, 400, "invalid_request_error", NULL,
                        "POST /attention takes a JSON object with a string 'text'");
        }
        text = json_string_value(t);
        n = json_string_length(t);
    }
    if (!text) return fail(sv, c, R_ATTENTION, 400, "invalid_request_error", NULL,
                           "GET /attention?text=... (URL-encoded), or POST {\"text\": ...}");
    andrea_buffer page = {0};
    serve_error e;
    int rc = serve_explorer(sv->cfg, text, n, &page, &e);
    json_decref(o);
    if (rc) {
        andrea_buffer_free(&page);
        return respond_error(sv, c, R_ATTENTION, &e);
    }
    return respond_buf(sv, c, R_ATTENTION, 200, "text/html; charset=utf-8", &page);
}

static enum MHD_Result get_route(server *sv, struct MHD_Connection *c, request *r) {
    andrea_buffer b = {0};
    andrea_writer w = andrea_writer_buffer(&b);
    int queued, active;
    serve_sched_load(sv->sched, &queued, &active);
    switch (r->route) {
    case R_PAGE:
        return respond(sv, c, R_PAGE, 200, "text/html; charset=utf-8", serve_page_html, serve_page_html_len);
    case R_HEALTH:
        andrea_writef(&w, "{\"status\":\"ok\",\"slots\":%d,\"active\":%d,\"queued\":%d}",
                      sv->cfg->parallel, active, queued);
        return respond_buf(sv, c, R_HEALTH, 200, "application/json", &b);
    case R_MODELS: {
        const andrea_config *mc = andrea_model_config((andrea_model *)sv->cfg->m);
        andrea_write_str(&w, "{\"object\":\"list\",\"data\":[{\"id\":");
        andrea_json_string(&w, sv->cfg->model_name, strlen(sv->cfg->model_name), 0);
        andrea_writef(&w, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"andrea\","
                      "\"context_length\":%d,\"vocab_size\":%d}]}", mc->ctx, mc->vocab);
        return respond_buf(sv, c, R_MODELS, 200, "application/json", &b);
    }
    case R_METRICS:
        serve_metrics_write(&sv->mx, &w, queued, active, sv->cfg->parallel);
        return respond_buf(sv, c, R_METRICS, 200, "text/plain; version=0.0.4", &b);
    default:
        return attention(sv, c, r, 0);
    }
}

/* ---- the access handler ------------------------------------------------------------------ */

static int route_of(const char *url) {
    for (int i = 0; i < R_NONE; i++)
        if (strcmp(url, ROUTE[i]) == 0) return i;
    if (strcmp(url, "/index.html") == 0) return R_PAGE;
    return R_NONE;
}

static int authorized(const server *sv, struct MHD_Connection *c, int route) {
    if (!sv->cfg->api_key || (route != R_COMPLETIONS && route != R_CHAT && route != R_MODELS &&
                              route != R_ATTENTION))
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && strncmp(h, "Bearer ", 7) == 0 && strcmp(h + 7, sv->cfg->api_key) == 0;
}

static void set_busy(server *sv, conn_track *t) {
    pthread_mutex_lock(&sv->track_mu);
    t->busy = 1;
    pthread_mutex_unlock(&sv->track_mu);
}

/* The first call, headers in: everything that needs no body is decided here. */
static enum MHD_Result on_headers(server *sv, struct MHD_Connection *c, request *r, const char *method) {
    int post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    int post_route = r->route == R_COMPLETIONS || r->route == R_CHAT;
    if (r->route == R_NONE)
        return fail(sv, c, R_NONE, 404, "invalid_request_error", "not_found",
                    "no such route: the server answers /v1/completions, /v1/chat/completions, "
                    "/v1/models, /health, /metrics, /attention and /");
    if ((post_route && !post) || (!post_route && !get && !(post && r->route == R_ATTENTION)))
        return fail(sv, c, r->route, 405, "invalid_request_error", "method_not_allowed",
                    post_route ? "use POST" : "use GET");
    if (!authorized(sv, c, r->route))
        return fail(sv, c, r->route, 401, "authentication_error", "invalid_api_key",
                    "missing or wrong API key: send 'Authorization: Bearer KEY'");
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > sv->cfg->max_body) {
        char msg[128];
        snprintf(msg, sizeof msg, "the body is larger than the server's limit of %zu bytes", sv->cfg->max_body);
        return fail(sv, c, r->route, 413, "invalid_request_error", "body_too_large", msg);
    }
    if (get) {
        set_busy(sv, r->ct);
        return get_route(sv, c, r);
    }
    return MHD_YES; /* the body follows */
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    server *sv = cls;
    request *r = *con_cls;
    if (!r) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        if (!(r = calloc(1, sizeof *r)) || !ci || !ci->socket_context) {
            free(r);
            return MHD_NO;
        }
        *con_cls = r;
        r->route = route_of(url);
        r->ct = ci->socket_context;
        return on_headers(sv, c, r, method);
    }
    if (*upload_size) { /* a piece of the body */
        if (r->body.len + *upload_size > sv->cfg->max_body) r->too_big = 1;
        if (!r->too_big) {
            andrea_writer w = andrea_writer_buffer(&r->body);
            if (andrea_write(&w, upload, *upload_size)) r->too_big = 1;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    set_busy(sv, r->ct); /* a whole request arrived: the watchdog lets it be */
    /* and MHD's idle timeout too: while we decode, the connection is quiet by design (a
     * first token may come after a long queue); --timeout and the peer's EOF bound it */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    if (r->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "the body is larger than the server's limit of %zu bytes", sv->cfg->max_body);
        return fail(sv, c, r->route, 413, "invalid_request_error", "body_too_large", msg);
    }
    if (r->route == R_ATTENTION) return attention(sv, c, r, 1);
    return completion(sv, c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    server *sv = cls;
    request *r = *con_cls;
    if (!r) return;
    if (r->job) {
        if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) serve_job_cancel(sv->sched, r->job);
        serve_job_release(sv->sched, r->job);
    }
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)sv->cfg->conn_timeout);
    pthread_mutex_lock(&sv->track_mu);
    r->ct->busy = 0; /* the next request on this connection starts its own clock */
    r->ct->since = andrea_now();
    pthread_mutex_unlock(&sv->track_mu);
    andrea_buffer_free(&r->body);
    free(r);
    *con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    server *sv = cls;
    pthread_mutex_lock(&sv->track_mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_track *t = calloc(1, sizeof *t);
        if (t && ci) {
            t->fd = ci->connect_fd;
            t->since = andrea_now();
            t->next = sv->tracked;
            if (t->next) t->next->prev = t;
            sv->tracked = t;
        } else {
            free(t);
            t = NULL;
        }
        *socket_context = t;
    } else if (*socket_context) {
        conn_track *t = *socket_context;
        if (t->prev) t->prev->next = t->next;
        else sv->tracked = t->next;
        if (t->next) t->next->prev = t->prev;
        free(t);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&sv->track_mu);
}

/* Shuts down connections that have not delivered a whole request in time: MHD's own
 * timeout only counts idle time, so a byte a second would hold a thread forever. */
static void watchdog_pass(server *sv) {
    double now = andrea_now();
    pthread_mutex_lock(&sv->track_mu);
    for (conn_track *t = sv->tracked; t; t = t->next)
        if (!t->busy && !t->killed && now - t->since > sv->cfg->header_timeout) {
            shutdown(t->fd, SHUT_RDWR); /* MHD sees EOF and closes it */
            t->killed = 1;
        }
    pthread_mutex_unlock(&sv->track_mu);
}

/* ---- the server ------------------------------------------------------------------------- */


static struct MHD_Daemon *start_daemon(server *sv, struct sockaddr_storage *sa) {
    const serve_config *cfg = sv->cfg;
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->port);
    int gai = getaddrinfo(cfg->host, port, &hints, &ai);
    if (gai) {
        fprintf(stderr, "andrea serve: --host '%s': %s\n", cfg->host, gai_strerror(gai));
        return NULL;
    }
    memcpy(sa, ai->ai_addr, ai->ai_addrlen);
    unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    freeaddrinfo(ai);
    return MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, sv,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)sa,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_conns,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->conn_timeout,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, sv,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, sv,
                            MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
                            MHD_OPTION_END);
}

int serve_run(const serve_config *cfg) {
    server sv = {0};
    sv.cfg = cfg;
    serve_metrics_init(&sv.mx);
    pthread_mutex_init(&sv.track_mu, NULL);
    signal(SIGPIPE, SIG_IGN);
    sv.sched = serve_sched_start(cfg, &sv.mx);
    if (!sv.sched) {
        fprintf(stderr, "andrea serve: %s\n", andrea_error());
        return 1;
    }
    struct sockaddr_storage sa;
    struct MHD_Daemon *d = start_daemon(&sv, &sa);
    if (!d) {
        fprintf(stderr, "andrea serve: cannot listen on %s:%d (in use? try another --port)\n",
                cfg->host, cfg->port);
        serve_sched_stop(sv.sched);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "serve: listening on http://%s:%u/ | %d slots, queue %d, timeout %g s%s\n",
            cfg->host, di ? di->port : (unsigned)cfg->port, cfg->parallel, cfg->queue, cfg->timeout,
            cfg->api_key ? " | API key required" : "");
    fflush(stderr);
    struct sigaction act = {0};
    act.sa_handler = on_signal;
    sigaction(SIGINT, &act, NULL);
    sigaction(SIGTERM, &act, NULL);
    while (!stop_signal) {
        struct timespec ts = {0, 250 * 1000 * 1000};
        nanosleep(&ts, NULL);
        watchdog_pass(&sv);
    }
    fprintf(stderr, "serve: signal %d, stopping\n", (int)stop_signal);
    MHD_stop_daemon(d);
    serve_sched_stop(sv.sched);
    pthread_mutex_destroy(&sv.track_mu);
    return 0;
}
