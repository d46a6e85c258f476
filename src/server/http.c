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
 *   - idle connections: MHD's --conn-timeout; open connections: --max-conns, and
 *     --max-conns-per-client from one address (slow clients at one address cannot take
 *     them all);
 *   - web pages of other sites: POST bodies must be application/json (415), which a page
 *     cannot send without a CORS preflight, and CORS headers only with --cors ORIGIN;
 *   - a client that goes away mid-answer: routes.c (a reset, a failed write, the worker's
 *     EOF) cancels its job, which leaves the batch at the next step.
 * GETs are answered on MHD's last call for the request, so the connection stays open
 * (keep-alive) and pipelined requests are answered in order.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "respond.h"
#include "util/perf.h"

static void on_signal(int sig) { serve_stop_signal = sig; }

/* ---- the access handler ------------------------------------------------------------------ */

static int route_of(const char *url) {
    for (int i = 0; i < R_NONE; i++)
        if (strcmp(url, serve_route_path[i]) == 0) return i;
    if (strcmp(url, "/index.html") == 0) return R_PAGE;
    if (strncmp(url, "/v1/models/", 11) == 0 && url[11]) return R_MODELS;
    return R_NONE;
}

static int is_post_route(int route) {
    return route == R_COMPLETIONS || route == R_CHAT || route == R_EMBEDDINGS ||
           route == R_TOKENIZE || route == R_DETOKENIZE;
}

/* The routes behind --api-key: everything that runs the model or describes it. */
static int needs_key(int route) {
    return is_post_route(route) || route == R_MODELS || route == R_ATTENTION || route == R_PROPS;
}

static int authorized(const server *sv, struct MHD_Connection *c, int route) {
    if (!sv->cfg->api_key || !needs_key(route)) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return 0; /* the scheme is case-insensitive */
    h += 7;
    while (*h == ' ') h++;
    return strcmp(h, sv->cfg->api_key) == 0;
}

/* A POST body must say it is JSON: a web page can send text/plain, form or untyped
 * bodies to any server without asking first (a CORS "simple request"), JSON it cannot. */
static int json_body(struct MHD_Connection *c) {
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (!t || strncasecmp(t, "application/json", 16) != 0) return 0;
    return t[16] == '\0' || t[16] == ';' || t[16] == ' ';
}

static void set_busy(server *sv, conn_track *t) {
    pthread_mutex_lock(&sv->track_mu);
    t->busy = 1;
    pthread_mutex_unlock(&sv->track_mu);
}

static enum MHD_Result too_big(server *sv, struct MHD_Connection *c, int route) {
    char msg[128];
    snprintf(msg, sizeof msg, "the body is larger than the server's limit of %zu bytes", sv->cfg->max_body);
    return serve_respond_fail(sv, c, route, 413, "invalid_request_error", "body_too_large", msg);
}

/* --cors: the preflight of a cross-origin request. */
static enum MHD_Result preflight(server *sv, struct MHD_Connection *c, int route) {
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    serve_cors_headers(sv, r);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
    MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    enum MHD_Result ok = MHD_queue_response(c, 204, r);
    MHD_destroy_response(r);
    serve_metrics_request(&sv->mx, route, 204);
    return ok;
}

/* The first call, headers in: every refusal that needs no body is decided here. */
static enum MHD_Result on_headers(server *sv, struct MHD_Connection *c, request *r, const char *method) {
    int post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    int post_route = is_post_route(r->route);
    r->post = post;
    if (r->route == R_NONE)
        return serve_respond_fail(sv, c, R_NONE, 404, "invalid_request_error", "not_found",
                                  "no such route: docs/server.md lists them (/v1/completions, "
                                  "/v1/chat/completions, /v1/embeddings, /v1/models, /tokenize, "
                                  "/detokenize, /props, /health, /metrics, /attention, /)");
    if (strcmp(method, "OPTIONS") == 0 && sv->cfg->cors) return preflight(sv, c, r->route);
    if ((post_route && !post) || (!post_route && !get && !(post && r->route == R_ATTENTION)))
        return serve_respond_fail(sv, c, r->route, 405, "invalid_request_error", "method_not_allowed",
                                  post_route ? "use POST" : "use GET");
    if (!authorized(sv, c, r->route))
        return serve_respond_fail(sv, c, r->route, 401, "authentication_error", "invalid_api_key",
                                  "missing or wrong API key: send 'Authorization: Bearer KEY'");
    if (post && !json_body(c))
        return serve_respond_fail(sv, c, r->route, 415, "invalid_request_error", "unsupported_media_type",
                                  "POST bodies are JSON: send 'Content-Type: application/json'");
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno || end == cl || n > sv->cfg->max_body) return too_big(sv, c, r->route);
    }
    return MHD_YES; /* a body follows, or the last call (a GET) answers */
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    server *sv = cls;
    request *r = *con_cls;
    (void)version;
    if (!r) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        if (!(r = calloc(1, sizeof *r)) || !ci || !ci->socket_context) {
            free(r);
            return MHD_NO;
        }
        *con_cls = r;
        r->route = route_of(url);
        r->url = url;
        r->ct = ci->socket_context;
        r->t0 = andrea_now();
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
     * first token may come after a long queue); --timeout and a reset peer bound it */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    if (r->too_big) return too_big(sv, c, r->route);
    return r->post ? serve_route_post(sv, c, r) : serve_route_get(sv, c, r);
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
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_conns_per_client,
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
    int v6 = strchr(cfg->host, ':') != NULL; /* a URL writes an IPv6 address in brackets */
    fprintf(stderr, "serve: listening on http://%s%s%s:%u/ | %d slots, queue %d, timeout %g s%s%s%s\n",
            v6 ? "[" : "", cfg->host, v6 ? "]" : "", di ? di->port : (unsigned)cfg->port,
            cfg->parallel, cfg->queue, cfg->timeout, cfg->api_key ? " | API key required" : "",
            cfg->cors ? " | CORS: " : "", cfg->cors ? cfg->cors : "");
    fflush(stderr);
    struct sigaction act = {0};
    act.sa_handler = on_signal;
    sigaction(SIGINT, &act, NULL);
    sigaction(SIGTERM, &act, NULL);
    while (!serve_stop_signal) {
        struct timespec ts = {0, 250 * 1000 * 1000};
        nanosleep(&ts, NULL);
        watchdog_pass(&sv);
    }
    fprintf(stderr, "serve: signal %d, stopping\n", (int)serve_stop_signal);
    MHD_stop_daemon(d);
    serve_sched_stop(sv.sched);
    pthread_mutex_destroy(&sv.track_mu);
    return 0;
}
