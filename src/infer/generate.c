/*
 * generate.c - the decoding loop shared by `generate`, `chat` and training's
 * samples: sample, stream the token's bytes, feed it back through the KV
 * cache; stop at n-predict, BOS, a stop string or a full context.
 * A stop string is never printed, nor half of a UTF-8 character: infer/stops.c holds
 * back what could still begin one, the same code as the server's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "infer/stops.h"
#include "util/error.h"
#include "util/json.h"
#include "util/perf.h"

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

/* Adds token id's bytes to the held text and streams what can no longer begin a stop
 * string: 1 when a stop string ended the text (it and what follows are dropped), 0, or
 * -1 on out of memory. */
static int stream_token(andrea_stops *st, const andrea_tokenizer *tok, int id,
                        const andrea_gen_options *g) {
    size_t nb = 0, rel = 0;
    const uint8_t *b = andrea_tokenizer_token_bytes(tok, id, &nb);
    if (b && andrea_stops_push(st, b, nb)) return andrea_set_error("out of memory");
    int stop = andrea_stops_check(st, &rel);
    if (rel) g->emit(st->pend.data, rel, g->user);
    andrea_stops_release(st, stop ? st->pend.len : rel);
    return stop;
}

/* The logits after hist's last token: one step, or with the context full the last ctx/2
 * tokens re-encoded from position 0 in one batched pass (positions are absolute; this is
 * llama.cpp's context shift). NULL on failure. */
static const float *feed(andrea_model *m, andrea_kv *kv, const int32_t *hist, int n_hist) {
    int ctx = andrea_model_config(m)->ctx;
    if (andrea_kv_pos(kv) < ctx) return andrea_kv_step(m, kv, hist[n_hist - 1]);
    int half = ctx / 2 < n_hist ? ctx / 2 : n_hist;
    andrea_kv_reset(kv);
    return andrea_kv_prefill(m, kv, hist + n_hist - half, half);
}

int andrea_generate(andrea_model *m, andrea_kv *kv, const andrea_tokenizer *tok,
                    const float *logits, const andrea_gen_options *g, andrea_rng *rng,
                    andrea_gen_result *res) {
    const andrea_config *c = andrea_model_config(m);
    int32_t bos = andrea_tokenizer_bos(tok);
    int cap = g->n_context + g->n_predict + 1;
    int32_t *hist = malloc(sizeof(int32_t) * (size_t)cap);
    int32_t *top = g->n_probs > 0 ? malloc(sizeof(int32_t) * (size_t)g->n_probs) : NULL;
    andrea_stops pending;
    andrea_stops_init(&pending, g->stops, g->n_stops);
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
        int stop = stream_token(&pending, tok, next, g);
        if (stop < 0) {
            rc = -1;
            break;
        }
        if (stop) {
            res->stop_reason = "stop string";
            break;
        }
        if (res->n_generated >= g->n_predict) break;
        if (andrea_kv_pos(kv) >= c->ctx && !g->context_shift) {
            res->stop_reason = "context full";
            break;
        }
        logits = feed(m, kv, hist, n_hist);
    }
    if (pending.pend.len) g->emit(pending.pend.data, pending.pend.len, g->user); /* no stop in it */
    res->seconds = andrea_now() - t0;
    andrea_stops_free(&pending);
    free(hist);
    free(top);
    return rc;
}
