/*
 * routes.c - what each route answers, once its request is whole (http.c checked the
 * method, the key, the content type and the size):
 *   POST /v1/completions, /v1/chat/completions  a job for the scheduler, answered whole or
 *        streamed (Server-Sent Events from MHD's content-reader callback)
 *   POST /v1/embeddings, GET|POST /attention    a task for the worker thread (worker.c)
 *   POST /tokenize, /detokenize; GET /v1/models[/{id}], /props, /health, /metrics, /,
 *        /favicon.ico                           answered here
 * A connection that waits asks four times a second whether its client is gone, the server
 * is stopping or --timeout passed. EOF alone does not tell a client that went away from
 * one that only shut its sending side (a half-close) and waits: a completion goes on (a
 * reset ends it; max_tokens and --timeout bound it), a stream is probed once a second
 * with an SSE comment, whose failed write ends it; worker tasks are given up.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "embeddings.h"
#include "explorer.h"
#include "info.h"
#include "respond.h"
#include "sse.h"
#include "util/perf.h"
#include "worker.h"

/* ---- streams -------------------------------------------------------------------------- */

typedef struct {
    server *sv;
    serve_job *job;
    struct MHD_Connection *conn;
    double probed;
} stream;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    stream *st = cls;
    (void)pos;
    for (;;) {
        size_t n = 0;
        int finished = serve_job_take(st->sv->sched, st->job, buf, max, &n, 0.25);
        if (n) return (ssize_t)n;
        if (finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (serve_peer_gone(st->conn) || serve_stop_signal) {
            serve_job_cancel(st->sv->sched, st->job);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        /* EOF: half-closed, or gone; a write tells (a closed socket answers with a reset) */
        static const char probe[] = ": waiting\n\n";
        if (max >= sizeof probe - 1 && serve_peer_eof(st->conn) && andrea_now() - st->probed >= 1) {
            st->probed = andrea_now();
            memcpy(buf, probe, sizeof probe - 1);
            return (ssize_t)(sizeof probe - 1);
        }
    }
}

static void stream_free(void *cls) {
    stream *st = cls;
    serve_job_release(st->sv->sched, st->job);
    free(st);
}

static enum MHD_Result stream_response(server *sv, struct MHD_Connection *c, request *r, serve_job *j) {
    stream *st = malloc(sizeof *st);
    struct MHD_Response *resp = NULL;
    if (st) {
        *st = (stream){sv, j, c, 0};
        serve_job_retain(sv->sched, j);
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_free);
        if (!resp) stream_free(st);
    }
    if (!resp) {
        serve_job_cancel(sv->sched, j);
        return serve_respond_fail(sv, c, r->route, 500, "server_error", NULL, "out of memory");
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    serve_cors_headers(sv, resp);
    enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    serve_metrics_request(&sv->mx, r->route, 200);
    return ok;
}

/* ---- completions ------------------------------------------------------------------------ */

static enum MHD_Result completion(server *sv, struct MHD_Connection *c, request *r) {
    serve_params p;
    serve_error e;
    int kind = r->route == R_CHAT ? SERVE_CHAT : SERVE_COMPLETION;
    if (serve_parse_request(sv->cfg, kind, r->body.data ? r->body.data : "", r->body.len, &p, &e)) {
        serve_params_free(&p);
        return serve_respond_error(sv, c, r->route, &e);
    }
    serve_job *j = serve_job_new(&p, sv->cfg->model_name);
    if (!j) {
        serve_params_free(&p);
        return serve_respond_fail(sv, c, r->route, 500, "server_error", NULL, "out of memory");
    }
    r->job = j;
    if (serve_sched_submit(sv->sched, j))
        return serve_respond_fail(sv, c, r->route, 429, "rate_limit_error", "queue_full",
                                  "the server is busy: every batch slot is taken and the queue "
                                  "is full; retry later");
    if (j->p.stream) return stream_response(sv, c, r, j);
    while (!serve_job_wait_done(sv->sched, j, 0.25))
        if (serve_peer_gone(c) || serve_stop_signal) {
            serve_job_cancel(sv->sched, j);
            return MHD_NO; /* nobody to answer */
        }
    if (j->failed) return serve_respond_error(sv, c, r->route, &j->err);
    andrea_buffer b = {0};
    andrea_writer w = andrea_writer_buffer(&b);
    if (serve_response_json(&w, j, sv->cfg->tok)) {
        andrea_buffer_free(&b);
        return serve_respond_fail(sv, c, r->route, 500, "server_error", NULL, "out of memory");
    }
    return serve_respond_buf(sv, c, r->route, 200, "application/json", &b);
}

/* ---- worker tasks ------------------------------------------------------------------------ */

typedef struct {
    struct MHD_Connection *c;
    double deadline;
    int gone;
} waiter;

/* The worker is one thread for every client: work is not done on the chance that a
 * client that sent EOF only half-closed (it gets nothing then; completions, decoded in
 * the batch, do answer it). */
static int give_up(void *user) {
    waiter *wt = user;
    wt->gone = serve_peer_eof(wt->c) || serve_stop_signal;
    return wt->gone || andrea_now() > wt->deadline;
}

/* The answer of a worker task: the page or JSON in out, or e; nothing for a gone client. */
static enum MHD_Result task_answer(server *sv, struct MHD_Connection *c, int route, int rc,
                                   const waiter *wt, const serve_error *e, andrea_buffer *out,
                                   const char *type) {
    if (rc && wt->gone) {
        andrea_buffer_free(out);
        return MHD_NO;
    }
    if (rc) {
        andrea_buffer_free(out);
        return serve_respond_error(sv, c, route, e);
    }
    return serve_respond_buf(sv, c, route, 200, type, out);
}

static enum MHD_Result attention(server *sv, struct MHD_Connection *c, request *r) {
    const char *text = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "text");
    size_t n = text ? strlen(text) : 0;
    json_t *o = NULL;
    if (r->post) { /* {"text": "..."} */
        json_error_t je;
        o = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, &je);
        json_t *t = o ? json_object_get(o, "text") : NULL;
        if (!json_is_string(t)) {
            json_decref(o);
            return serve_respond_fail(sv, c, R_ATTENTION, 400, "invalid_request_error", NULL,
                                      "POST /attention takes a JSON object with a string 'text'");
        }
        text = json_string_value(t);
        n = json_string_length(t);
    }
    if (!text)
        return serve_respond_fail(sv, c, R_ATTENTION, 400, "invalid_request_error", NULL,
                                  "GET /attention?text=... (URL-encoded), or POST {\"text\": ...}");
    andrea_buffer page = {0};
    serve_error e;
    waiter wt = {c, r->t0 + sv->cfg->timeout, 0};
    int rc = serve_explorer(sv->cfg, text, n, &page, &e, give_up, &wt);
    json_decref(o);
    return task_answer(sv, c, R_ATTENTION, rc, &wt, &e, &page, "text/html; charset=utf-8");
}

static enum MHD_Result embeddings(server *sv, struct MHD_Connection *c, request *r) {
    andrea_buffer out = {0};
    serve_error e;
    waiter wt = {c, r->t0 + sv->cfg->timeout, 0};
    int rc = serve_embeddings(sv->cfg, r->body.data ? r->body.data : "", r->body.len, &out, &e,
                              give_up, &wt);
    return task_answer(sv, c, R_EMBEDDINGS, rc, &wt, &e, &out, "application/json");
}

/* ---- the routes ------------------------------------------------------------------------- */

/* A tiny "a" in the page's blue, as SVG (browsers take it at /favicon.ico). */
static const char FAVICON[] =
    "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\"><rect width=\"16\" "
    "height=\"16\" rx=\"3\" fill=\"#1f4e79\"/><text x=\"8\" y=\"12.5\" font-size=\"12\" "
    "text-anchor=\"middle\" fill=\"#fff\" font-family=\"sans-serif\">a</text></svg>";

enum MHD_Result serve_route_get(server *sv, struct MHD_Connection *c, request *r) {
    andrea_buffer b = {0};
    andrea_writer w = andrea_writer_buffer(&b);
    int queued, active;
    serve_sched_load(sv->sched, &queued, &active);
    switch (r->route) {
    case R_PAGE:
        return serve_respond(sv, c, R_PAGE, 200, "text/html; charset=utf-8", serve_page_html, serve_page_html_len);
    case R_FAVICON:
        return serve_respond(sv, c, R_FAVICON, 200, "image/svg+xml", FAVICON, sizeof FAVICON - 1);
    case R_HEALTH: {
        int w_queued, w_running;
        long withdrawn;
        serve_task_load(&w_queued, &w_running, &withdrawn);
        andrea_writef(&w, "{\"status\":\"ok\",\"slots\":%d,\"active\":%d,\"queued\":%d,"
                      "\"worker_queued\":%d,\"worker_running\":%d,\"worker_withdrawn\":%ld}",
                      sv->cfg->parallel, active, queued, w_queued, w_running, withdrawn);
        return serve_respond_buf(sv, c, R_HEALTH, 200, "application/json", &b);
    }
    case R_MODELS: {
        const char *id = r->url + strlen("/v1/models");
        if (*id == '/') { /* /v1/models/{id} */
            serve_error e;
            if (serve_check_model(sv->cfg, id + 1, &e)) return serve_respond_error(sv, c, R_MODELS, &e);
        }
        serve_models_json(sv->cfg, &w, *id != '/');
        return serve_respond_buf(sv, c, R_MODELS, 200, "application/json", &b);
    }
    case R_PROPS:
        serve_props_json(sv->cfg, &w, queued, active);
        return serve_respond_buf(sv, c, R_PROPS, 200, "application/json", &b);
    case R_METRICS:
        serve_metrics_write(&sv->mx, &w, queued, active, sv->cfg->parallel);
        return serve_respond_buf(sv, c, R_METRICS, 200, "text/plain; version=0.0.4", &b);
    default:
        return attention(sv, c, r);
    }
}

enum MHD_Result serve_route_post(server *sv, struct MHD_Connection *c, request *r) {
    const char *body = r->body.data ? r->body.data : "";
    if (r->route == R_ATTENTION) return attention(sv, c, r);
    if (r->route == R_EMBEDDINGS) return embeddings(sv, c, r);
    if (r->route == R_TOKENIZE || r->route == R_DETOKENIZE) {
        andrea_buffer b = {0};
        andrea_writer w = andrea_writer_buffer(&b);
        serve_error e;
        int rc = r->route == R_TOKENIZE ? serve_tokenize(sv->cfg, body, r->body.len, &w, &e)
                                        : serve_detokenize(sv->cfg, body, r->body.len, &w, &e);
        if (rc) {
            andrea_buffer_free(&b);
            return serve_respond_error(sv, c, r->route, &e);
        }
        return serve_respond_buf(sv, c, r->route, 200, "application/json", &b);
    }
    return completion(sv, c, r);
}
