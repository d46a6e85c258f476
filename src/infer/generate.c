/*
 * generate.c - the decoding loop shared by `generate`, `chat` and training's
 * samples: sample, stream the token's bytes, feed it back through the KV
 * cache; stop at n-predict, BOS, a stop string or a full context.
 * A stop string is never printed: the last len(longest stop) - 1 bytes are held back
 * until it is certain they do not start one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "util/error.h"
#include "util/json.h"
#include "util/perf.h"

/* Finds needle in hay[0..n); returns its offset or -1. */
static long find(const uint8_t *hay, size_t n, const char *needle, size_t k) {
    if (k == 0 || k > n) return -1;
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0) return (long)i;
    return -1;
}

/* One JSON line of --logprobs: the token drawn, and with n_probs the most likely ones. */
static void write_logprobs(FILE *f, const andrea_tokenizer *tok, const float *logits, int V,
                           int pos, int id, int n_probs, int32_t *top) {
    size_t nb = 0;
    const uint8_t *b = andrea_tokenizer_token_bytes(tok, id, &nb);
    fprintf(f, "{\"pos\":%d,\"id\":%d,\"logprob\":%.6f,\"text\":", pos, id,
            andrea_logprob(logits, V, id));
    andrea_json_write_string(f, b ? b : (const uint8_t *)"", b ? nb : 0);
    if (n_probs > 0) {
        int n = andrea_top_tokens(logits, V, n_probs, top);
        fputs(",\"top\":[", f);
        for (int k = 0; k < n; k++) {
            b = andrea_tokenizer_token_bytes(tok, top[k], &nb);
            fprintf(f, "%s{\"id\":%d,\"logprob\":%.6f,\"text\":", k ? "," : "", (int)top[k],
                    andrea_logprob(logits, V, top[k]));
            andrea_json_write_string(f, b ? b : (const uint8_t *)"", b ? nb : 0);
            fputs("}", f);
        }
        fputs("]", f);
    }
    fputs("}\n", f);
}

int andrea_generate(andrea_model *m, andrea_kv *kv, const andrea_tokenizer *tok,
                    const float *logits, const andrea_gen_options *g, andrea_rng *rng,
                    andrea_gen_result *res) {
    const andrea_config *c = andrea_model_config(m);
    int32_t bos = andrea_tokenizer_bos(tok);
    size_t stop_len = 0; /* the longest stop string */
    for (int i = 0; i < g->n_stops; i++)
        if (strlen(g->stops[i]) > stop_len) stop_len = strlen(g->stops[i]);
    int cap = g->n_context + g->n_predict + 1;
    int32_t *hist = malloc(sizeof(int32_t) * (size_t)cap);
    int32_t *top = g->n_probs > 0 ? malloc(sizeof(int32_t) * (size_t)g->n_probs) : NULL;
    andrea_bytes pending = {0};
    if (!hist || (g->n_probs > 0 && !top)) {
        free(hist);
        free(top);
        return andrea_set_error("out of memory");
    }
    if (g->n_context) memcpy(hist, g->context, sizeof(int32_t) * (size_t)g->n_context);
    int n_hist = g->n_context;
    res->n_generated = 0;
    res->stop_reason = "n-predict";
    int rc = 0;
    double t0 = andrea_now();
    while (res->n_generated < g->n_predict) {
        if (!logits) {
            rc = -1;
            break;
        }
        int next = andrea_sample_ex(logits, c->vocab, &g->sampler, hist, n_hist, rng);
        if (next < 0) {
            rc = andrea_set_error("out of memory while sampling");
            break;
        }
        if (g->logprobs)
            write_logprobs(g->logprobs, tok, logits, c->vocab, andrea_kv_pos(kv), next, g->n_probs,
                           top);
        if (next == bos) {
            res->stop_reason = "bos";
            break;
        }
        hist[n_hist++] = next;
        res->n_generated++;
        size_t nb = 0;
        const uint8_t *b = andrea_tokenizer_token_bytes(tok, next, &nb);
        if (b && nb && andrea_bytes_append(&pending, b, nb)) {
            rc = andrea_set_error("out of memory");
            break;
        }
        long at = -1; /* the earliest occurrence of any stop string */
        for (int i = 0; i < g->n_stops; i++) {
            long a = find(pending.data, pending.len, g->stops[i], strlen(g->stops[i]));
            if (a >= 0 && (at < 0 || a < at)) at = a;
        }
        if (at >= 0) {
            if (at > 0) g->emit(pending.data, (size_t)at, g->user);
            pending.len = 0;
            res->stop_reason = "stop string";
            break;
        }
        /* emit all but the bytes that could still begin the stop string */
        size_t keep = stop_len > 0 ? stop_len - 1 : 0;
        if (pending.len > keep) {
            size_t out = pending.len - keep;
            g->emit(pending.data, out, g->user);
            memmove(pending.data, pending.data + out, keep);
            pending.len = keep;
        }
        if (res->n_generated >= g->n_predict) break;
        if (andrea_kv_pos(kv) >= c->ctx) {
            if (!g->context_shift) {
                res->stop_reason = "context full";
                break;
            }
            /* positions are absolute, so the kept half is re-encoded from position 0:
             * one batched pass over the last ctx/2 tokens (llama.cpp's context shift) */
            int half = c->ctx / 2 < n_hist ? c->ctx / 2 : n_hist;
            andrea_kv_reset(kv);
            logits = andrea_kv_prefill(m, kv, hist + n_hist - half, half);
            continue;
        }
        logits = andrea_kv_step(m, kv, next);
    }
    if (pending.len) g->emit(pending.data, pending.len, g->user);
    res->seconds = andrea_now() - t0;
    andrea_bytes_free(&pending);
    free(hist);
    free(top);
    return rc;
}
