/*
 * embeddings.c - POST /v1/embeddings, OpenAI's shape. An input's embedding is the mean
 * over its tokens of the model's final hidden state (after the last norm: what the LM
 * head reads), scaled to unit length, as llama-server's default (mean pooling, L2): a
 * causal model's last position alone sees the whole text but mostly predicts the next
 * token; the mean weighs every token. Inputs: a string, an array of strings, an array of
 * token ids or an array of such arrays, each at most the model's context. encoding_format
 * "float" (numbers) or "base64" (the little-endian float32 bytes, what the openai
 * clients ask by default). The forward passes run on the server's worker thread.
 */
#include "embeddings.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/json.h"
#include "worker.h"

enum { MAX_INPUTS = 256 };

#define BAD(e, param, ...) serve_fail(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__)

typedef struct {
    serve_task task;
    const serve_config *cfg;
    andrea_ids *in;      /* (n_in) */
    int n_in, base64;
    andrea_buffer *out;
    serve_error *e;
} embed_task;

/* One input: a string or an array of token ids, into ids. */
static int input_ids(const serve_config *cfg, json_t *v, size_t i, andrea_ids *ids, serve_error *e) {
    const andrea_config *c = andrea_model_config((andrea_model *)cfg->m);
    if (json_is_string(v)) {
        if (andrea_tokenizer_encode(cfg->tok, json_string_value(v), json_string_length(v), 0, ids))
            return BAD(e, "input", "input %zu: cannot encode: %s", i, andrea_error());
    } else if (json_is_array(v)) {
        size_t k;
        json_t *id;
        json_array_foreach(v, k, id) {
            if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= c->vocab)
                return BAD(e, "input", "input %zu: token ids are integers in [0, %d)", i, c->vocab);
            if (andrea_ids_push(ids, (int32_t)json_integer_value(id)))
                return serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
        }
    } else {
        return BAD(e, "input", "'input' is a string, an array of strings, token ids, or arrays of token ids");
    }
    if (ids->len == 0) return BAD(e, "input", "input %zu is empty", i);
    if ((int)ids->len > c->ctx)
        return serve_fail(e, 400, "invalid_request_error", "input", "context_length_exceeded",
                          "input %zu is %zu tokens; the model's context is %d", i, ids->len, c->ctx);
    return 0;
}

/* 0 when the input is one text (a string, or token ids), 1 when it is a batch. */
static int is_batch(json_t *v) {
    if (!json_is_array(v) || json_array_size(v) == 0) return 0;
    json_t *first = json_array_get(v, 0);
    return json_is_string(first) || json_is_array(first);
}

static int parse(const serve_config *cfg, json_t *o, embed_task *t, serve_error *e) {
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
        if (strcmp(key, "input") && strcmp(key, "model") && strcmp(key, "encoding_format") &&
            strcmp(key, "dimensions") && strcmp(key, "user"))
            return BAD(e, key, "unsupported field '%.60s' for /v1/embeddings", key);
    v = json_object_get(o, "model");
    if (v && !json_is_null(v) && !json_is_string(v)) return BAD(e, "model", "'model' must be a string");
    if (serve_check_model(cfg, json_string_value(v), e)) return -1;
    v = json_object_get(o, "encoding_format");
    if (v && !json_is_null(v)) {
        const char *f = json_is_string(v) ? json_string_value(v) : "";
        if (strcmp(f, "float") && strcmp(f, "base64"))
            return BAD(e, "encoding_format", "'encoding_format' is \"float\" or \"base64\"");
        t->base64 = strcmp(f, "base64") == 0;
    }
    int C = andrea_model_config((andrea_model *)cfg->m)->d_model;
    v = json_object_get(o, "dimensions");
    if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == C))
        return BAD(e, "dimensions", "'dimensions' can only be the model's width, %d", C);
    json_t *in = json_object_get(o, "input");
    if (!in) return BAD(e, "input", "'input' is required");
    size_t n = is_batch(in) ? json_array_size(in) : 1;
    if (n > MAX_INPUTS) return BAD(e, "input", "at most %d inputs per request", MAX_INPUTS);
    if (!(t->in = calloc(n, sizeof *t->in))) return serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    t->n_in = (int)n;
    for (size_t i = 0; i < n; i++)
        if (input_ids(cfg, is_batch(in) ? json_array_get(in, i) : in, i, &t->in[i], e)) return -1;
    return 0;
}

/* On the worker: one forward pass per input, the pooled vectors into the response. */
static int run(serve_task *task) {
    embed_task *t = (embed_task *)task;
    const andrea_config *c = andrea_model_config((andrea_model *)t->cfg->m);
    int C = c->d_model;
    andrea_context *ctx = andrea_context_create(t->cfg->m);
    float *vec = malloc(sizeof(float) * (size_t)C);
    if (!ctx || !vec) {
        andrea_context_free(ctx);
        free(vec);
        return serve_fail(t->e, 500, "server_error", NULL, NULL, "out of memory");
    }
    andrea_writer w = andrea_writer_buffer(t->out);
    andrea_write_str(&w, "{\"object\":\"list\",\"data\":[");
    size_t tokens = 0;
    int rc = 0;
    for (int i = 0; i < t->n_in && !rc; i++) {
        int T = (int)t->in[i].len;
        if (isnan(andrea_context_forward(t->cfg->m, ctx, t->in[i].data, NULL, 1, T))) {
            rc = serve_fail(t->e, 500, "server_error", NULL, NULL, "forward pass: %s", andrea_error());
            break;
        }
        const float *h = andrea_context_hidden(ctx);
        double norm = 0;
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int p = 0; p < T; p++) s += h[(size_t)p * C + k];
            vec[k] = (float)(s / T);
            norm += (double)vec[k] * vec[k];
        }
        float scale = norm > 0 ? (float)(1 / sqrt(norm)) : 0;
        for (int k = 0; k < C; k++) vec[k] *= scale;
        tokens += (size_t)T;
        andrea_writef(&w, "%s{\"object\":\"embedding\",\"index\":%d,\"embedding\":", i ? "," : "", i);
        if (t->base64) { /* float32 little-endian, as OpenAI's */
            andrea_write_str(&w, "\"");
            andrea_base64_write(&w, vec, sizeof(float) * (size_t)C);
            andrea_write_str(&w, "\"");
        } else {
            for (int k = 0; k < C; k++) andrea_writef(&w, "%s%.9g", k ? "," : "[", (double)vec[k]);
            andrea_write_str(&w, "]");
        }
        andrea_write_str(&w, "}");
    }
    andrea_write_str(&w, "],\"model\":");
    andrea_json_string(&w, t->cfg->model_name, strlen(t->cfg->model_name), 0);
    andrea_writef(&w, ",\"usage\":{\"prompt_tokens\":%zu,\"total_tokens\":%zu}}", tokens, tokens);
    if (!rc && andrea_writer_status(&w, "embeddings"))
        rc = serve_fail(t->e, 500, "server_error", NULL, NULL, "out of memory");
    andrea_context_free(ctx);
    free(vec);
    return rc;
}

int serve_embeddings(const serve_config *cfg, const char *body, size_t len, andrea_buffer *out,
                     serve_error *e, int (*give_up)(void *user), void *user) {
    embed_task t = {{run, NULL, 0, 0, NULL}, cfg, NULL, 0, 0, out, e};
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    int rc = -1;
    if (!o || !json_is_object(o))
        BAD(e, NULL, "the body must be a JSON object (%s)", o ? "not an object" : je.text);
    else if (!parse(cfg, o, &t, e)) {
        rc = serve_task_run(&t.task, cfg->queue, "embeddings", e, give_up, user);
    }
    json_decref(o);
    for (int i = 0; i < t.n_in; i++) andrea_ids_free(&t.in[i]);
    free(t.in);
    return rc;
}
