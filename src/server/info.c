/*
 * info.c - what a client asks about the model before it sends text: OpenAI's model objects,
 * and llama-server's /props, /tokenize and /detokenize in llama-server's shapes
 * ({"tokens":[ids]} or, with "with_pieces", [{"id","piece"}]; {"content": text}).
 */
#include "info.h"

#include <jansson.h>
#include <string.h>

#include "util/json.h"

#define BAD(e, param, ...) serve_fail(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__)

static const andrea_config *config(const serve_config *cfg) {
    return andrea_model_config((andrea_model *)cfg->m);
}

static void jstr(andrea_writer *w, const void *s, size_t n) {
    andrea_json_string(w, s, n, ANDREA_JSON_KEEP_BYTES);
}

void serve_models_json(const serve_config *cfg, andrea_writer *w, int list) {
    const andrea_config *c = config(cfg);
    if (list) andrea_write_str(w, "{\"object\":\"list\",\"data\":[");
    andrea_write_str(w, "{\"id\":");
    jstr(w, cfg->model_name, strlen(cfg->model_name));
    andrea_writef(w, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"andrea\","
                  "\"context_length\":%d,\"vocab_size\":%d}", c->ctx, c->vocab);
    if (list) andrea_write_str(w, "]}");
}

void serve_props_json(const serve_config *cfg, andrea_writer *w, int queued, int active) {
    const andrea_config *c = config(cfg);
    const andrea_sampler *s = &cfg->sampler;
    andrea_write_str(w, "{\"model\":");
    jstr(w, cfg->model_name, strlen(cfg->model_name));
    andrea_writef(w, ",\"n_ctx\":%d,\"n_vocab\":%d,\"n_embd\":%d,\"n_layer\":%d,\"n_head\":%d,"
                  "\"total_slots\":%d,\"slots_active\":%d,\"queued\":%d,\"max_tokens\":%d,"
                  "\"max_prompt\":%d,\"tokenizer\":\"%s\",\"bos_token\":%d,"
                  "\"chat_template\":\"andrea-turns\",\"default_generation_settings\":{"
                  "\"temperature\":%g,\"top_k\":%d,\"top_p\":%g,\"min_p\":%g,\"repeat_penalty\":%g,"
                  "\"repeat_last_n\":%d}}",
                  c->ctx, c->vocab, c->d_model, c->n_layer, c->n_head, cfg->parallel, active, queued,
                  cfg->max_tokens, cfg->max_prompt,
                  andrea_tokenizer_kind_name(andrea_tokenizer_kind(cfg->tok)),
                  (int)andrea_tokenizer_bos(cfg->tok), (double)s->temperature, s->top_k,
                  (double)s->top_p, (double)s->min_p, (double)s->repeat_penalty, s->repeat_last_n);
}

static json_t *body_object(const char *body, size_t len, serve_error *e) {
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o || !json_is_object(o)) {
        BAD(e, NULL, "the body must be a JSON object%s%s", o ? "" : ": ", o ? "" : je.text);
        json_decref(o);
        return NULL;
    }
    return o;
}

int serve_tokenize(const serve_config *cfg, const char *body, size_t len, andrea_writer *w,
                   serve_error *e) {
    json_t *o = body_object(body, len, e);
    if (!o) return -1;
    json_t *content = json_object_get(o, "content"), *pieces = json_object_get(o, "with_pieces");
    andrea_ids ids = {0};
    int rc = 0;
    if (!json_is_string(content)) rc = BAD(e, "content", "'content' must be a string");
    else if (pieces && !json_is_boolean(pieces)) rc = BAD(e, "with_pieces", "'with_pieces' must be true or false");
    else if (andrea_tokenizer_encode(cfg->tok, json_string_value(content), json_string_length(content), 0, &ids))
        rc = BAD(e, "content", "cannot encode 'content': %s", andrea_error());
    if (!rc) {
        andrea_write_str(w, "{\"tokens\":[");
        for (size_t i = 0; i < ids.len; i++) {
            if (i) andrea_write_str(w, ",");
            if (!json_is_true(pieces)) {
                andrea_writef(w, "%d", (int)ids.data[i]);
                continue;
            }
            size_t nb = 0;
            const uint8_t *b = andrea_tokenizer_token_bytes(cfg->tok, ids.data[i], &nb);
            andrea_writef(w, "{\"id\":%d,\"piece\":", (int)ids.data[i]);
            jstr(w, b ? (const void *)b : "", b ? nb : 0);
            andrea_write_str(w, "}");
        }
        andrea_write_str(w, "]}");
    }
    andrea_ids_free(&ids);
    json_decref(o);
    return rc;
}

int serve_detokenize(const serve_config *cfg, const char *body, size_t len, andrea_writer *w,
                     serve_error *e) {
    json_t *o = body_object(body, len, e);
    if (!o) return -1;
    json_t *tokens = json_object_get(o, "tokens");
    andrea_ids ids = {0};
    andrea_bytes text = {0};
    int rc = json_is_array(tokens) ? 0 : BAD(e, "tokens", "'tokens' must be an array of token ids");
    size_t i;
    json_t *id;
    json_array_foreach(tokens, i, id) {
        if (rc) break;
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= config(cfg)->vocab)
            rc = BAD(e, "tokens", "tokens[%zu] is not a token id in [0, %d)", i, config(cfg)->vocab);
        else if (andrea_ids_push(&ids, (int32_t)json_integer_value(id)))
            rc = serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (!rc && andrea_tokenizer_decode(cfg->tok, ids.data, ids.len, &text))
        rc = BAD(e, "tokens", "cannot decode: %s", andrea_error());
    if (!rc) {
        andrea_write_str(w, "{\"content\":");
        jstr(w, text.len ? (const void *)text.data : "", text.len);
        andrea_write_str(w, "}");
    }
    andrea_bytes_free(&text);
    andrea_ids_free(&ids);
    json_decref(o);
    return rc;
}
