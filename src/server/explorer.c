/*
 * explorer.c - GET/POST /attention: the page `andrea attention --html` writes, for any
 * text, through the library's inspect API (andrea_attn_tokens_encode,
 * andrea_attention_inspect, andrea_attention_render_html into a buffer writer). The
 * server adds nothing to the page; a better explorer in the library is a better one here.
 * A long text keeps its last tokens (the answer, rather than the start of the chat).
 *
 * Inspections run on the server's worker thread (worker.c): one at a time, queued up to
 * --queue, withdrawn when their client gives up.
 */
#include "explorer.h"

#include <stdlib.h>
#include <string.h>

#include "andrea_inspect.h"
#include "worker.h"

typedef struct {
    serve_task task;
    const serve_config *cfg;
    const char *tail;    /* NUL-terminated */
    andrea_buffer *out;
    serve_error *e;
} explorer_task;

/* The bytes of the last max_T tokens of text, NUL-terminated, into tail. */
static int last_tokens(const serve_config *cfg, const char *text, size_t n, int max_T,
                       andrea_bytes *tail, serve_error *e) {
    andrea_ids ids = {0};
    int rc = 0;
    if (andrea_tokenizer_encode(cfg->tok, text, n, 0, &ids))
        rc = serve_fail(e, 400, "invalid_request_error", "text", NULL, "cannot encode the text: %s",
                        andrea_error());
    size_t from = ids.len > (size_t)max_T ? ids.len - (size_t)max_T : 0;
    for (size_t i = from; !rc && i < ids.len; i++) {
        size_t nb = 0;
        const uint8_t *b = andrea_tokenizer_token_bytes(cfg->tok, ids.data[i], &nb);
        if (b && nb && andrea_bytes_append(tail, b, nb))
            rc = serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (!rc && andrea_bytes_append(tail, "", 1))
        rc = serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    andrea_ids_free(&ids);
    return rc;
}

/* On the worker: tokens, maps, page. */
static int render(const serve_config *cfg, const char *tail, andrea_buffer *out, serve_error *e) {
    const andrea_config *c = andrea_model_config((andrea_model *)cfg->m);
    andrea_attn_tokens tk = {0};
    andrea_attn_maps maps = {0};
    int rc = 0;
    if (andrea_attn_tokens_encode(cfg->tok, tail, 0, c->ctx, &tk) ||
        andrea_attention_inspect(cfg->m, tk.ids, tk.T, ANDREA_VIEWS_ALL, &maps))
        rc = serve_fail(e, 400, "invalid_request_error", "text", NULL, "%s", andrea_error());
    if (!rc) {
        andrea_attn_export x = {.model = cfg->model_name, .prompt = tail, .tokens = &tk,
                                .maps = &maps}; /* all layers and heads, English */
        andrea_writer w = andrea_writer_buffer(out);
        if (andrea_attention_render_html(&w, &x))
            rc = serve_fail(e, 500, "server_error", NULL, NULL, "%s", andrea_error());
    }
    andrea_attn_maps_free(&maps);
    andrea_attn_tokens_free(&tk);
    return rc;
}

static int run_task(serve_task *t) {
    explorer_task *x = (explorer_task *)t;
    return render(x->cfg, x->tail, x->out, x->e);
}

int serve_explorer(const serve_config *cfg, const char *text, size_t n, andrea_buffer *out,
                   serve_error *e, int (*give_up)(void *user), void *user) {
    const andrea_config *c = andrea_model_config((andrea_model *)cfg->m);
    if (n == 0) return serve_fail(e, 400, "invalid_request_error", "text", NULL, "'text' is empty");
    if (memchr(text, 0, n))
        return serve_fail(e, 400, "invalid_request_error", "text", NULL, "'text' contains a NUL byte");
    int max_T = cfg->attn_max_tokens < c->ctx ? cfg->attn_max_tokens : c->ctx;
    andrea_bytes tail = {0};
    if (last_tokens(cfg, text, n, max_T, &tail, e)) {
        andrea_bytes_free(&tail);
        return -1;
    }
    explorer_task t = {{run_task, NULL, 0, 0, NULL}, cfg, (const char *)tail.data, out, e};
    int rc = serve_task_run(&t.task, cfg->queue, "an attention page", e, give_up, user);
    andrea_bytes_free(&tail);
    return rc;
}
