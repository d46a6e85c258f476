/*
 * request.c - one /v1/completions or /v1/chat/completions body, parsed with jansson and
 * checked field by field against OpenAI's types and the server's limits. Every failure
 * names the field (error.param) so a client can tell what to fix; nothing is clamped
 * silently, and a field the server does not know is refused, not ignored. Chat messages
 * become ANDREA's turn format (transcript.c); response_format, grammar and tools a grammar
 * (schema.c, src/infer/grammar.h).
 */
#include "request.h"

#include "schema.h"
#include "transcript.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int serve_fail(serve_error *e, int status, const char *type, const char *param, const char *code,
               const char *fmt, ...) {
    e->status = status;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

int serve_check_model(const serve_config *cfg, const char *name, serve_error *e) {
    if (!name || strcmp(name, cfg->model_name) == 0) return 0;
    return serve_fail(e, 404, "invalid_request_error", "model", "model_not_found",
                      "the model '%.80s' does not exist: this server serves '%.80s'", name,
                      cfg->model_name);
}

#define BAD(e, param, ...) serve_fail(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__)

/* A number field in [lo, hi] into *out; absent or null keeps *out. */
static int get_number(json_t *o, const char *key, double lo, double hi, float *out, serve_error *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v)) return BAD(e, key, "'%s' must be a number", key);
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi)) return BAD(e, key, "'%s' must be between %g and %g (got %g)", key, lo, hi, x);
    *out = (float)x;
    return 0;
}

/* An integer field in [lo, hi]; returns 1 when present. */
static int get_int(json_t *o, const char *key, long long lo, long long hi, long long *out,
                   serve_error *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) return BAD(e, key, "'%s' must be an integer", key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return BAD(e, key, "'%s' must be between %lld and %lld (got %lld)", key, lo, hi, x);
    *out = x;
    return 1;
}

static int get_bool(json_t *o, const char *key, int *out, serve_error *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return BAD(e, key, "'%s' must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

static int add_stop(serve_params *p, const char *s, size_t n, serve_error *e) {
    if (n == 0) return BAD(e, "stop", "'stop' strings must not be empty");
    if (n > 64) return BAD(e, "stop", "'stop' strings are at most 64 bytes");
    if (p->n_stops == SERVE_MAX_STOPS) return BAD(e, "stop", "'stop' has at most 4 strings");
    char *c = malloc(n + 1);
    if (!c) return serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    memcpy(c, s, n);
    c[n] = '\0';
    p->stops[p->n_stops++] = c;
    return 0;
}

static int get_stops(json_t *o, serve_params *p, serve_error *e) {
    json_t *v = json_object_get(o, "stop");
    if (!v || json_is_null(v)) return 0;
    if (json_is_string(v)) return add_stop(p, json_string_value(v), json_string_length(v), e);
    if (!json_is_array(v)) return BAD(e, "stop", "'stop' must be a string or an array of strings");
    if (json_array_size(v) > 4) return BAD(e, "stop", "'stop' has at most 4 strings");
    size_t i;
    json_t *s;
    json_array_foreach(v, i, s) {
        if (!json_is_string(s)) return BAD(e, "stop", "'stop' must be a string or an array of strings");
        if (add_stop(p, json_string_value(s), json_string_length(s), e)) return -1;
    }
    return 0;
}

/* prompt: a string, [string] or [token ids]. Encodes into p->prompt. */
static int completion_prompt(const serve_config *cfg, json_t *v, serve_params *p, serve_error *e) {
    /* a batch of one ([text] or [[ids]]: lm-eval-harness sends its prompts so) */
    json_t *first = json_is_array(v) ? json_array_get(v, 0) : NULL;
    if (json_is_array(v) && (json_is_string(first) || json_is_array(first))) {
        if (json_array_size(v) > 1)
            return BAD(e, "prompt", "one prompt per request: send the %zu prompts as %zu requests "
                       "(they share the batch)", json_array_size(v), json_array_size(v));
        v = first;
    }
    if (json_is_string(v)) {
        if (andrea_tokenizer_encode(cfg->tok, json_string_value(v), json_string_length(v), 0, &p->prompt))
            return BAD(e, "prompt", "cannot encode 'prompt': %s", andrea_error());
        return 0;
    }
    if (!json_is_array(v)) return BAD(e, "prompt", "'prompt' must be a string or an array of token ids");
    const andrea_config *c = andrea_model_config((andrea_model *)cfg->m);
    size_t i;
    json_t *id;
    json_array_foreach(v, i, id) {
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= c->vocab)
            return BAD(e, "prompt", "'prompt' holds one string, or token ids in [0, %d)", c->vocab);
        if (andrea_ids_push(&p->prompt, (int32_t)json_integer_value(id)))
            return serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    return 0;
}

/* logit_bias: {"token id": bias in [-100, 100]}, as OpenAI's */
static int get_bias(json_t *o, int vocab, serve_params *p, serve_error *e) {
    json_t *v = json_object_get(o, "logit_bias");
    if (!v || json_is_null(v)) return 0;
    if (!json_is_object(v)) return BAD(e, "logit_bias", "'logit_bias' must be an object of token id: bias");
    if (json_object_size(v) > SERVE_MAX_BIAS) return BAD(e, "logit_bias", "'logit_bias' has at most %d entries", SERVE_MAX_BIAS);
    const char *key;
    json_t *b;
    json_object_foreach(v, key, b) {
        char *end;
        long id = strtol(key, &end, 10);
        if (*end || end == key || id < 0 || id >= vocab)
            return BAD(e, "logit_bias", "'logit_bias' keys are token ids in [0, %d)", vocab);
        if (!json_is_number(b) || !(fabs(json_number_value(b)) <= 100))
            return BAD(e, "logit_bias", "'logit_bias' values are numbers in [-100, 100]");
        p->bias_id[p->n_bias] = (int32_t)id;
        p->bias[p->n_bias++] = (float)json_number_value(b);
    }
    return 0;
}

static int parse_logprobs(json_t *o, int kind, serve_params *p, serve_error *e) {
    long long k = 0;
    if (kind == SERVE_CHAT) {
        if (get_bool(o, "logprobs", &p->logprobs, e)) return -1;
        int r = get_int(o, "top_logprobs", 0, SERVE_MAX_TOP, &k, e);
        if (r < 0) return -1;
        if (r && !p->logprobs) return BAD(e, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
        p->top_logprobs = (int)k;
        return 0;
    }
    int r = get_int(o, "logprobs", 0, 5, &k, e); /* completions: how many alternatives */
    if (r < 0) return -1;
    p->logprobs = r == 1;
    p->top_logprobs = (int)k;
    return 0;
}

/* The fields each kind knows. Anything else is refused by name: a field that would change
 * the answer must never be dropped silently. "user",
 * "metadata", "store" and "parallel_tool_calls" (at most one call is made) are accepted
 * and change nothing. */
static const char *const COMMON_FIELDS[] = {
    "model", "max_tokens", "temperature", "top_p", "stop", "seed", "n", "logprobs", "logit_bias",
    "stream", "stream_options", "user", "frequency_penalty", "presence_penalty", "top_k", "min_p",
    "repeat_penalty", "repeat_last_n", "cache_prompt", "grammar", "response_format", NULL};
static const char *const COMPLETION_FIELDS[] = {"prompt", "echo", "best_of", "suffix", NULL};
static const char *const CHAT_FIELDS[] = {
    "messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice",
    "parallel_tool_calls", "metadata", "store", NULL};

static int listed(const char *const *list, const char *key) {
    for (; *list; list++)
        if (strcmp(*list, key) == 0) return 1;
    return 0;
}

static int check_fields(const serve_config *cfg, int kind, json_t *o, serve_error *e) {
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (listed(COMMON_FIELDS, key) || listed(kind == SERVE_CHAT ? CHAT_FIELDS : COMPLETION_FIELDS, key))
            continue;
        return BAD(e, key, "unsupported field '%.60s' for %s: the server refuses what it would "
                   "otherwise ignore (docs/server.md lists the fields)", key,
                   kind == SERVE_CHAT ? "/v1/chat/completions" : "/v1/completions");
    }
    json_t *model = json_object_get(o, "model");
    if (model && !json_is_null(model) && !json_is_string(model)) return BAD(e, "model", "'model' must be a string");
    return serve_check_model(cfg, json_string_value(model), e);
}

/* Fields of /v1/completions that only make sense with other models or other servers. */
static int completion_only(json_t *o, serve_params *p, serve_error *e) {
    json_t *v = json_object_get(o, "suffix");
    if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
        return BAD(e, "suffix", "'suffix' (insertion) is not supported: ANDREA's models only "
                   "continue a text; they were not trained to fill in the middle");
    long long best = p->n;
    if (get_int(o, "best_of", 1, SERVE_MAX_N, &best, e) < 0) return -1;
    if (best != p->n)
        return BAD(e, "best_of", "'best_of' other than n is not supported: every choice generated "
                   "is returned (ask n choices and rank them by their logprobs)");
    return get_bool(o, "echo", &p->echo, e);
}

/* Per-request sampling beyond OpenAI's (llama-server's names). */
static int sampler_fields(json_t *o, andrea_sampler *s, serve_params *p, serve_error *e) {
    long long k = s->top_k, last = s->repeat_last_n;
    if (get_number(o, "temperature", 0, 2, &s->temperature, e) ||
        get_number(o, "top_p", 0, 1, &s->top_p, e) || get_number(o, "min_p", 0, 1, &s->min_p, e) ||
        get_number(o, "repeat_penalty", 0.01, 10, &s->repeat_penalty, e) ||
        get_number(o, "frequency_penalty", -2, 2, &p->frequency_penalty, e) ||
        get_number(o, "presence_penalty", -2, 2, &p->presence_penalty, e) ||
        get_int(o, "top_k", 0, 1 << 30, &k, e) < 0 || get_int(o, "repeat_last_n", 0, 1 << 30, &last, e) < 0)
        return -1;
    if (s->top_p <= 0) return BAD(e, "top_p", "'top_p' must be > 0");
    s->top_k = (int)k;
    s->repeat_last_n = (int)last;
    return 0;
}

/* The prompt: chat messages in ANDREA's turn format, or the completion's prompt. */
static int parse_prompt(const serve_config *cfg, int kind, json_t *o, serve_params *p, serve_error *e) {
    const char *param = kind == SERVE_CHAT ? "messages" : "prompt";
    if (kind == SERVE_CHAT) {
        andrea_bytes t = {0};
        int rc = serve_chat_transcript(json_object_get(o, "messages"), &t, e);
        if (!rc && andrea_tokenizer_encode(cfg->tok, t.data, t.len, 0, &p->prompt))
            rc = BAD(e, "messages", "cannot encode the messages: %s", andrea_error());
        andrea_bytes_free(&t);
        if (rc || add_stop(p, "\n>", 2, e)) return -1;
    } else {
        json_t *v = json_object_get(o, "prompt");
        if (!v) return BAD(e, "prompt", "'prompt' is required");
        if (completion_prompt(cfg, v, p, e)) return -1;
    }
    if (p->prompt.len == 0) return BAD(e, param, "the prompt is empty");
    const andrea_config *c = andrea_model_config((andrea_model *)cfg->m);
    /* room for a reply, unless nothing is generated (echo scoring a whole context) */
    int room = p->max_tokens ? c->ctx - 1 : c->ctx;
    int max_prompt = cfg->max_prompt < room ? cfg->max_prompt : room;
    if (!p->max_tokens && cfg->max_prompt == c->ctx - 1) max_prompt = c->ctx;
    if ((long)p->prompt.len > max_prompt)
        return serve_fail(e, 400, "invalid_request_error", param, "context_length_exceeded",
                          "the prompt is %zu tokens; this server takes at most %d (the model's "
                          "context is %d, with room for a reply)", p->prompt.len, max_prompt, c->ctx);
    return 0;
}

/* The GBNF text for response_format, or nothing (rc 0, empty w) for plain text. */
static int response_format_gbnf(json_t *rf, andrea_writer *w, serve_error *e) {
    json_t *type = json_object_get(rf, "type");
    const char *t = json_string_value(type);
    if (!json_is_object(rf) || !t)
        return BAD(e, "response_format", "'response_format' is {\"type\": \"text\" | \"json_object\" | \"json_schema\"}");
    if (!strcmp(t, "text")) return 0;
    json_t *schema = json_object_get(rf, "schema"); /* llama-server's json_object + schema */
    if (!strcmp(t, "json_schema")) {
        json_t *js = json_object_get(rf, "json_schema");
        schema = json_object_get(js, "schema");
        if (!schema) return BAD(e, "response_format", "'response_format.json_schema.schema' is required");
    } else if (strcmp(t, "json_object")) {
        return BAD(e, "response_format", "'response_format.type' '%.40s' is not text, json_object or json_schema", t);
    }
    if (!schema) return serve_gbnf_json_object(w), 0;
    return serve_gbnf_schema(schema, w, "response_format", e);
}

/* tools + tool_choice (chat): the GBNF of the calls, or nothing when no call may be made. */
static int tools_gbnf(json_t *o, serve_params *p, andrea_writer *w, serve_error *e) {
    json_t *tools = json_object_get(o, "tools"), *choice = json_object_get(o, "tool_choice");
    const char *c = json_string_value(choice), *only = NULL;
    if (!tools || json_is_null(tools)) {
        if (choice && !json_is_null(choice) && !(c && !strcmp(c, "none")))
            return BAD(e, "tool_choice", "'tool_choice' needs 'tools'");
        return 0;
    }
    if (c && !strcmp(c, "none")) return 0;
    if (json_is_object(choice)) {
        only = json_string_value(json_object_get(json_object_get(choice, "function"), "name"));
        if (!only) return BAD(e, "tool_choice", "'tool_choice' is \"none\", \"auto\", \"required\" or "
                              "{\"type\":\"function\",\"function\":{\"name\":...}}");
    } else if (choice && !json_is_null(choice) && !(c && (!strcmp(c, "auto") || !strcmp(c, "required")))) {
        return BAD(e, "tool_choice", "'tool_choice' is \"none\", \"auto\", \"required\" or an object");
    }
    p->tools = 1;
    return serve_gbnf_tools(tools, only, !only && !(c && !strcmp(c, "required")), w, e);
}

/* Structured output: response_format, llama-server's grammar (GBNF) or tools, at most one,
 * compiled into p->grammar. */
static int structured_fields(json_t *o, serve_params *p, serve_error *e) {
    json_t *rf = json_object_get(o, "response_format"), *gr = json_object_get(o, "grammar");
    andrea_buffer b = {0};
    andrea_writer w = andrea_writer_buffer(&b);
    const char *param = "grammar";
    int rc = 0, given = 0;
    if (gr && !json_is_null(gr)) {
        if (!json_is_string(gr)) return BAD(e, "grammar", "'grammar' must be a string (GBNF)");
        andrea_write(&w, json_string_value(gr), json_string_length(gr));
        given++;
    }
    if (rf && !json_is_null(rf)) {
        size_t before = b.len;
        rc = response_format_gbnf(rf, &w, e);
        given += b.len > before;
        if (b.len > before) param = "response_format";
    }
    if (!rc) {
        size_t before = b.len;
        rc = tools_gbnf(o, p, &w, e);
        given += b.len > before;
        if (b.len > before) param = "tools";
    }
    if (!rc && given > 1) rc = BAD(e, param, "use one of 'grammar', 'response_format' and 'tools' at a time");
    if (!rc && given && andrea_writer_status(&w, "grammar")) rc = serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    if (!rc && given && !(p->grammar = andrea_grammar_parse(b.data, b.len)))
        rc = BAD(e, param, "%s", andrea_error());
    andrea_buffer_free(&b);
    return rc;
}

static int parse_fields(const serve_config *cfg, int kind, json_t *o, serve_params *p, serve_error *e) {
    const andrea_config *c = andrea_model_config((andrea_model *)cfg->m);
    if (check_fields(cfg, kind, o, e)) return -1;
    long long x = 1;
    int nmax = cfg->parallel < SERVE_MAX_N ? cfg->parallel : SERVE_MAX_N;
    if (get_int(o, "n", 1, nmax, &x, e) < 0) return -1;
    p->n = (int)x;
    if (kind == SERVE_COMPLETION && completion_only(o, p, e)) return -1;
    /* echo with max_tokens 0 scores the prompt alone (lm-eval-harness's loglikelihood) */
    x = cfg->max_tokens;
    const char *mt = json_object_get(o, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (get_int(o, mt, p->echo ? 0 : 1, cfg->max_tokens, &x, e) < 0) return -1;
    p->max_tokens = (int)x;
    if (parse_prompt(cfg, kind, o, p, e) || sampler_fields(o, &p->sampler, p, e) || get_stops(o, p, e) ||
        get_bool(o, "stream", &p->stream, e) || parse_logprobs(o, kind, p, e) ||
        get_bias(o, c->vocab, p, e) || structured_fields(o, p, e))
        return -1;
    p->cache_prompt = 1;
    if (get_bool(o, "cache_prompt", &p->cache_prompt, e)) return -1;
    int r = get_int(o, "seed", INT64_MIN, INT64_MAX, &x, e);
    if (r < 0) return -1;
    p->seed_given = r;
    p->seed = r ? (uint64_t)x : 0;
    json_t *so = json_object_get(o, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return BAD(e, "stream_options", "'stream_options' must be an object");
        if (get_bool(so, "include_usage", &p->include_usage, e)) return -1;
    }
    return 0;
}

int serve_parse_request(const serve_config *cfg, int kind, const char *body, size_t len,
                        serve_params *p, serve_error *e) {
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->sampler = cfg->sampler;
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) return BAD(e, NULL, "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line, je.column);
    int rc = 0;
    if (!json_is_object(o)) rc = BAD(e, NULL, "the body must be a JSON object");
    else rc = parse_fields(cfg, kind, o, p, e);
    json_decref(o);
    return rc;
}

void serve_params_free(serve_params *p) {
    andrea_grammar_free(p->grammar);
    p->grammar = NULL;
    for (int i = 0; i < p->n_stops; i++) free(p->stops[i]);
    p->n_stops = 0;
    andrea_ids_free(&p->prompt);
}
