/*
 * explorer.c - GET/POST /attention: the page `andrea attention --html` writes, for any
 * text, through the library's inspect API (andrea_attn_tokens_encode,
 * andrea_attention_inspect, andrea_attention_render_html into a buffer writer). The
 * server adds nothing to the page; a better explorer in the library is a better one here.
 * A long text keeps its last tokens (the answer, rather than the start of the chat).
 */
#include "explorer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_inspect.h"

/* One inspection at a time: each holds 4 L NH T^2 floats and uses every core. */
static pthread_mutex_t explorer_mu = PTHREAD_MUTEX_INITIALIZER;

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

int serve_explorer(const serve_config *cfg, const char *text, size_t n, andrea_buffer *out,
                   serve_error *e) {
    const andrea_config *c = andrea_model_config((andrea_model *)cfg->m);
    if (n == 0) return serve_fail(e, 400, "invalid_request_error", "text", NULL, "'text' is empty");
    if (memchr(text, 0, n))
        return serve_fail(e, 400, "invalid_request_error", "text", NULL, "'text' contains a NUL byte");
    int max_T = cfg->attn_max_tokens < c->ctx ? cfg->attn_max_tokens : c->ctx;
    andrea_bytes tail = {0};
    andrea_attn_tokens tk = {0};
    andrea_attn_maps maps = {0};
    int rc = last_tokens(cfg, text, n, max_T, &tail, e);
    pthread_mutex_lock(&explorer_mu);
    if (!rc && (andrea_attn_tokens_encode(cfg->tok, (const char *)tail.data, 0, c->ctx, &tk) ||
                andrea_attention_inspect(cfg->m, tk.ids, tk.T, ANDREA_VIEWS_ALL, &maps)))
        rc = serve_fail(e, 400, "invalid_request_error", "text", NULL, "%s", andrea_error());
    if (!rc) {
        andrea_attn_export x = {cfg->model_name, (const char *)tail.data, &tk, &maps, NULL, NULL, 0, 0};
        andrea_writer w = andrea_writer_buffer(out);
        if (andrea_attention_render_html(&w, &x))
            rc = serve_fail(e, 500, "server_error", NULL, NULL, "%s", andrea_error());
    }
    pthread_mutex_unlock(&explorer_mu);
    andrea_attn_maps_free(&maps);
    andrea_attn_tokens_free(&tk);
    andrea_bytes_free(&tail);
    return rc;
}
