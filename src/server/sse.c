/*
 * sse.c - what the OpenAI API returns, byte for byte the shapes its clients parse:
 *   chat:        chat.completion / chat.completion.chunk, message or delta, logprobs as
 *                {"content":[{"token","logprob","bytes","top_logprobs":[...]}]}
 *   completions: text_completion, logprobs as {"tokens","token_logprobs","top_logprobs",
 *                "text_offset"}
 *   usage:       prompt_tokens, completion_tokens, total_tokens
 * Streams are Server-Sent Events: "data: {json}\n\n" per chunk, "data: [DONE]\n\n" last.
 * Token text may be part of a UTF-8 character; strings keep such bytes (KEEP_BYTES) and
 * "bytes" gives them exactly.
 */
#include "sse.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

static void str(andrea_writer *w, const void *s, size_t n) {
    andrea_json_string(w, s, n, ANDREA_JSON_KEEP_BYTES);
}

static void cstr(andrea_writer *w, const char *s) {
    if (s) str(w, s, strlen(s));
    else andrea_write_str(w, "null");
}

/* NaN: no log-probability (an echoed text's first token) */
static void number(andrea_writer *w, float x) {
    if (isfinite(x)) andrea_writef(w, "%.9g", (double)x);
    else andrea_write_str(w, isnan(x) ? "null" : "-9999"); /* OpenAI's stand-in for an impossible token */
}

static const uint8_t *token_text(const andrea_tokenizer *tok, int32_t id, size_t *n) {
    const uint8_t *b = andrea_tokenizer_token_bytes(tok, id, n);
    if (!b) *n = 0;
    return b ? b : (const uint8_t *)"";
}

/* {"token","logprob","bytes"} of one token (chat) */
static void chat_token(andrea_writer *w, const andrea_tokenizer *tok, int32_t id, float lp) {
    size_t n;
    const uint8_t *b = token_text(tok, id, &n);
    andrea_write_str(w, "{\"token\":");
    str(w, b, n);
    andrea_write_str(w, ",\"logprob\":");
    number(w, lp);
    andrea_write_str(w, ",\"bytes\":[");
    for (size_t i = 0; i < n; i++) andrea_writef(w, "%s%u", i ? "," : "", b[i]);
    andrea_write_str(w, "]");
}

static void chat_logprobs(andrea_writer *w, const andrea_tokenizer *tok, const serve_tokprob *lp, int n) {
    andrea_write_str(w, "{\"content\":[");
    for (int i = 0; i < n; i++) {
        if (i) andrea_write_str(w, ",");
        chat_token(w, tok, lp[i].id, lp[i].logprob);
        andrea_write_str(w, ",\"top_logprobs\":[");
        for (int k = 0; k < lp[i].n_top; k++) {
            if (k) andrea_write_str(w, ",");
            chat_token(w, tok, lp[i].top_id[k], lp[i].top_lp[k]);
            andrea_write_str(w, "}");
        }
        andrea_write_str(w, "]}");
    }
    andrea_write_str(w, "]}");
}

/* offset: bytes of the completion before these tokens */
static void completion_logprobs(andrea_writer *w, const andrea_tokenizer *tok, const serve_tokprob *lp,
                                int n, size_t offset) {
    size_t len;
    andrea_write_str(w, "{\"tokens\":[");
    for (int i = 0; i < n; i++) {
        const uint8_t *b = token_text(tok, lp[i].id, &len);
        if (i) andrea_write_str(w, ",");
        str(w, b, len);
    }
    andrea_write_str(w, "],\"token_logprobs\":[");
    for (int i = 0; i < n; i++) {
        if (i) andrea_write_str(w, ",");
        number(w, lp[i].logprob);
    }
    andrea_write_str(w, "],\"top_logprobs\":[");
    for (int i = 0; i < n; i++) {
        if (isnan(lp[i].logprob)) { /* a text's first token: nothing to compare with */
            andrea_write_str(w, i ? ",null" : "null");
            continue;
        }
        andrea_write_str(w, i ? ",{" : "{");
        for (int k = 0; k < lp[i].n_top; k++) { /* an object: token text -> logprob */
            const uint8_t *b = token_text(tok, lp[i].top_id[k], &len);
            if (k) andrea_write_str(w, ",");
            str(w, b, len);
            andrea_write_str(w, ":");
            number(w, lp[i].top_lp[k]);
        }
        andrea_write_str(w, "}");
    }
    andrea_write_str(w, "],\"text_offset\":[");
    for (int i = 0; i < n; i++) {
        andrea_writef(w, "%s%zu", i ? "," : "", offset);
        token_text(tok, lp[i].id, &len);
        offset += len;
    }
    andrea_write_str(w, "]}");
}

static void head(andrea_writer *w, const serve_job *j, const char *object) {
    andrea_writef(w, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%ld,\"model\":", j->id, object,
                  j->created);
    cstr(w, j->model);
}

static void usage(andrea_writer *w, const serve_job *j) {
    long gen = 0;
    for (int c = 0; c < j->p.n; c++) gen += j->choices[c].n_tokens;
    andrea_writef(w, "\"usage\":{\"prompt_tokens\":%zu,\"completion_tokens\":%ld,\"total_tokens\":%ld}",
                  j->p.prompt.len, gen, (long)j->p.prompt.len + gen);
}

int sse_chunk(andrea_writer *w, const serve_job *j, const andrea_tokenizer *tok, int index,
              const void *text, size_t n, const serve_tokprob *lp, int n_lp, const char *finish,
              int first) {
    int chat = j->p.kind == SERVE_CHAT;
    andrea_write_str(w, "data: ");
    head(w, j, chat ? "chat.completion.chunk" : "text_completion");
    andrea_writef(w, ",\"choices\":[{\"index\":%d,", index);
    if (chat) {
        andrea_write_str(w, "\"delta\":{");
        if (first) andrea_write_str(w, "\"role\":\"assistant\",\"content\":\"\"");
        else if (n || !finish) andrea_write_str(w, "\"content\":"), str(w, text, n);
        andrea_write_str(w, "},\"logprobs\":");
        if (j->p.logprobs && n_lp) chat_logprobs(w, tok, lp, n_lp);
        else andrea_write_str(w, "null");
    } else {
        andrea_write_str(w, "\"text\":");
        str(w, text, n);
        andrea_write_str(w, ",\"logprobs\":");
        if (j->p.logprobs) completion_logprobs(w, tok, lp, n_lp, j->choices[index].text.len);
        else andrea_write_str(w, "null");
    }
    andrea_write_str(w, ",\"finish_reason\":");
    cstr(w, finish);
    andrea_write_str(w, "}]}\n\n");
    return andrea_writer_status(w, "stream chunk");
}

int sse_end(andrea_writer *w, const serve_job *j) {
    if (j->p.include_usage) {
        andrea_write_str(w, "data: ");
        head(w, j, j->p.kind == SERVE_CHAT ? "chat.completion.chunk" : "text_completion");
        andrea_write_str(w, ",\"choices\":[],");
        usage(w, j);
        andrea_write_str(w, "}\n\n");
    }
    andrea_write_str(w, "data: [DONE]\n\n");
    return andrea_writer_status(w, "stream end");
}

int serve_error_json(andrea_writer *w, const serve_error *e) {
    andrea_write_str(w, "{\"error\":{\"message\":");
    cstr(w, e->message);
    andrea_write_str(w, ",\"type\":");
    cstr(w, e->type);
    andrea_write_str(w, ",\"param\":");
    cstr(w, e->param[0] ? e->param : NULL);
    andrea_write_str(w, ",\"code\":");
    cstr(w, e->code);
    andrea_write_str(w, "}}");
    return andrea_writer_status(w, "error");
}

int sse_error(andrea_writer *w, const serve_error *e) {
    andrea_write_str(w, "data: ");
    serve_error_json(w, e);
    andrea_write_str(w, "\n\ndata: [DONE]\n\n");
    return andrea_writer_status(w, "stream error");
}

/* A choice of a request with tools whose text is a whole call ({"name","arguments"}, the
 * grammar's): null content and OpenAI's tool_calls, the arguments as a JSON string. 1 when
 * written, 0 when the text is an ordinary answer. */
static int tool_call(andrea_writer *w, const serve_job *j, int c, int streamed) {
    const serve_choice *ch = &j->choices[c];
    if (!j->p.tools || !ch->text.len || ch->text.data[0] != '{' || !ch->finish || strcmp(ch->finish, "stop"))
        return 0;
    json_error_t je;
    json_t *o = json_loadb((const char *)ch->text.data, ch->text.len, 0, &je);
    json_t *name = json_object_get(o, "name"), *args = json_object_get(o, "arguments");
    char *a = json_is_string(name) && args ? json_dumps(args, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (a) {
        andrea_writef(w, "null,\"tool_calls\":[{%s\"id\":\"call_%s_%d\",\"type\":\"function\","
                      "\"function\":{\"name\":", streamed ? "\"index\":0," : "", j->id, c);
        cstr(w, json_string_value(name));
        andrea_write_str(w, ",\"arguments\":");
        cstr(w, a);
        andrea_write_str(w, "}}]");
    }
    free(a);
    json_decref(o);
    return a != NULL;
}

int sse_tool_answer(andrea_writer *w, const serve_job *j, const andrea_tokenizer *tok, int index) {
    const serve_choice *ch = &j->choices[index];
    andrea_buffer call = {0};
    andrea_writer cw = andrea_writer_buffer(&call);
    int is_call = tool_call(&cw, j, index, 1);
    if (is_call) {
        andrea_write_str(w, "data: ");
        head(w, j, "chat.completion.chunk");
        andrea_writef(w, ",\"choices\":[{\"index\":%d,\"delta\":{\"content\":", index);
        andrea_write(w, call.data, call.len);
        andrea_write_str(w, "},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    } else if (ch->text.len) {
        sse_chunk(w, j, tok, index, ch->text.data, ch->text.len, NULL, 0, NULL, 0);
    }
    andrea_buffer_free(&call);
    return sse_chunk(w, j, tok, index, "", 0, NULL, 0, is_call ? "tool_calls" : ch->finish, 0);
}

int serve_response_json(andrea_writer *w, const serve_job *j, const andrea_tokenizer *tok) {
    int chat = j->p.kind == SERVE_CHAT;
    head(w, j, chat ? "chat.completion" : "text_completion");
    andrea_write_str(w, ",\"choices\":[");
    for (int c = 0; c < j->p.n; c++) {
        const serve_choice *ch = &j->choices[c];
        andrea_writef(w, "%s{\"index\":%d,", c ? "," : "", c);
        const char *finish = ch->finish;
        if (chat) {
            andrea_write_str(w, "\"message\":{\"role\":\"assistant\",\"content\":");
            if (tool_call(w, j, c, 0)) {
                finish = "tool_calls";
            } else {
                str(w, ch->text.len ? (const void *)ch->text.data : "", ch->text.len);
            }
            andrea_write_str(w, "},\"logprobs\":");
            if (j->p.logprobs) chat_logprobs(w, tok, ch->lp, ch->n_lp);
            else andrea_write_str(w, "null");
        } else {
            andrea_write_str(w, "\"text\":");
            str(w, ch->text.len ? (const void *)ch->text.data : "", ch->text.len);
            andrea_write_str(w, ",\"logprobs\":");
            if (j->p.logprobs) completion_logprobs(w, tok, ch->lp, ch->n_lp, 0);
            else andrea_write_str(w, "null");
        }
        andrea_write_str(w, ",\"finish_reason\":");
        cstr(w, finish);
        andrea_write_str(w, "}");
    }
    andrea_write_str(w, "],");
    usage(w, j);
    andrea_write_str(w, "}");
    return andrea_writer_status(w, "response");
}
