/*
 * test_batch_decode.c - weights apart from per-call state:
 * - batched decoding: 4 sequences of different lengths advancing one token per step in one
 *   andrea_kv_batch_step give the logits that 4 separate andrea_kv_step decodes give, to
 *   the bit (the decoding product's multi-input dots sum each input as its single dot
 *   does), in fp32, bf16, int8, q8_0 and q4_0 weights, and a failing step moves no cache;
 * - contexts: forward passes in several contexts over one model (also from two threads at
 *   once) equal the model's own forward, and a prefill in a caller's context equals one in
 *   the model's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "test_util.h"

enum { NSEQ = 4, STEPS = 24 };

static andrea_model *small_model(uint64_t seed) {
    andrea_config c;
    andrea_config_preset("tiny", &c); /* 2 layers, 2 heads, C 32, ctx 32, V 257 */
    c.ctx = 64;
    return andrea_model_create(&c, seed);
}

static int32_t rand_token(int V) { return (int32_t)(tu_rng_u64() % (uint64_t)V); }

/* Prompts of 1, 5, 12 and 30 tokens, prefilled into both sets of caches; then STEPS tokens
 * per sequence, batched into `batched` and one by one into `single`, logits compared. */
static void check_batched_equals_single(andrea_model *m, const char *what) {
    const andrea_config *c = andrea_model_config(m);
    static const int prompt_len[NSEQ] = {1, 5, 12, 30};
    andrea_kv *single[NSEQ], *batched[NSEQ];
    andrea_kv_batch *b = andrea_kv_batch_create(m, NSEQ);
    CHECK(b != NULL);
    tu_rng_seed(42);
    for (int s = 0; s < NSEQ; s++) {
        int32_t prompt[32];
        for (int i = 0; i < prompt_len[s]; i++) prompt[i] = rand_token(c->vocab);
        single[s] = andrea_kv_create(m);
        batched[s] = andrea_kv_create(m);
        CHECK(andrea_kv_prefill(m, single[s], prompt, prompt_len[s]) != NULL);
        CHECK(andrea_kv_prefill(m, batched[s], prompt, prompt_len[s]) != NULL);
    }
    double worst = 0.0;
    for (int step = 0; step < STEPS; step++) {
        int32_t tok[NSEQ];
        for (int s = 0; s < NSEQ; s++) tok[s] = rand_token(c->vocab);
        const float *lb = andrea_kv_batch_step(m, b, batched, tok, NSEQ);
        CHECK(lb != NULL);
        if (!lb) break;
        for (int s = 0; s < NSEQ; s++) {
            const float *ls = andrea_kv_step(m, single[s], tok[s]);
            const float *row = lb + (size_t)s * c->vocab;
            CHECK(ls != NULL);
            CHECK(andrea_kv_logits(batched[s]) != NULL &&
                  memcmp(andrea_kv_logits(batched[s]), row, sizeof(float) * c->vocab) == 0);
            CHECK(andrea_kv_pos(batched[s]) == andrea_kv_pos(single[s]));
            for (int v = 0; ls && v < c->vocab; v++) {
                double d = fabs((double)row[v] - ls[v]);
                if (d > worst) worst = d;
            }
        }
    }
    printf("%s: 4 sequences (prompts 1, 5, 12, 30) x %d batched steps: max |logit diff| %.3g\n",
           what, STEPS, worst);
    CHECK(worst == 0.0);
    for (int s = 0; s < NSEQ; s++) {
        andrea_kv_free(single[s]);
        andrea_kv_free(batched[s]);
    }
    andrea_kv_batch_free(b);
}

/* Errors: checked for every sequence before any cache moves. */
static void check_batched_errors(andrea_model *m) {
    const andrea_config *c = andrea_model_config(m);
    andrea_kv_batch *b = andrea_kv_batch_create(m, 2);
    andrea_kv *kv[2] = {andrea_kv_create(m), andrea_kv_create(m)};
    int32_t ok[2] = {1, 2}, bad[2] = {1, c->vocab};
    CHECK(andrea_kv_batch_step(m, b, kv, bad, 2) == NULL);
    CHECK(strstr(andrea_error(), "sequence 1") != NULL);
    CHECK(andrea_kv_pos(kv[0]) == 0 && andrea_kv_pos(kv[1]) == 0);
    andrea_kv *same[2] = {kv[0], kv[0]};
    CHECK(andrea_kv_batch_step(m, b, same, ok, 2) == NULL);
    CHECK(strstr(andrea_error(), "share") != NULL);
    CHECK(andrea_kv_batch_step(m, b, kv, ok, 3) == NULL); /* more than the batch holds */
    for (int i = 0; i < c->ctx; i++) CHECK(andrea_kv_step(m, kv[1], 1) != NULL);
    CHECK(andrea_kv_batch_step(m, b, kv, ok, 2) == NULL);
    CHECK(strstr(andrea_error(), "sequence 1") && strstr(andrea_error(), "full"));
    CHECK(andrea_kv_pos(kv[0]) == 0);
    andrea_kv_free(kv[0]);
    andrea_kv_free(kv[1]);
    andrea_kv_batch_free(b);
    CHECK(andrea_kv_batch_create(m, 0) == NULL);
}

/* Forward passes in two contexts at once (two threads) equal the model's own. */
static void check_contexts(andrea_model *m) {
    const andrea_config *c = andrea_model_config(m);
    enum { B = 2, T = 16 };
    int32_t in[2][B * T], tg[2][B * T];
    tu_rng_seed(7);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < B * T; i++) in[k][i] = rand_token(c->vocab), tg[k][i] = rand_token(c->vocab);
    float want[2];
    float *want_logits[2];
    for (int k = 0; k < 2; k++) {
        want[k] = andrea_model_forward(m, in[k], tg[k], B, T);
        andrea_model_forward(m, in[k], NULL, B, T);
        want_logits[k] = tu_dup(andrea_model_logits(m), (size_t)B * T * c->vocab);
    }
    andrea_context *ctx[2] = {andrea_context_create(m), andrea_context_create(m)};
    float got[2];
#pragma omp parallel for num_threads(2)
    for (int k = 0; k < 2; k++) got[k] = andrea_context_forward(m, ctx[k], in[k], tg[k], B, T);
    for (int k = 0; k < 2; k++) CHECK(got[k] == want[k]);
#pragma omp parallel for num_threads(2)
    for (int k = 0; k < 2; k++) andrea_context_forward(m, ctx[k], in[k], NULL, B, T);
    for (int k = 0; k < 2; k++)
        CHECK(memcmp(andrea_context_logits(ctx[k]), want_logits[k],
                     sizeof(float) * B * T * c->vocab) == 0);
    /* explicit attention in one context while the other stays flash */
    andrea_context_set_flash_attention(ctx[0], 0);
    andrea_context_set_flash_attention(ctx[1], 1);
    andrea_context_forward(m, ctx[0], in[0], NULL, B, T);
    andrea_context_forward(m, ctx[1], in[0], NULL, B, T);
    CHECK(andrea_context_attention(ctx[0], 0) != NULL);
    CHECK(andrea_context_attention(ctx[1], 0) == NULL);
    tu_check_array("flash vs explicit logits", andrea_context_logits(ctx[1]),
                   andrea_context_logits(ctx[0]), (size_t)B * T * c->vocab, 1e-5, 1e-5);
    /* a prefill in a caller's context equals one in the model's (same attention kind) */
    andrea_context_set_flash_attention(ctx[1], 0);
    andrea_kv *k1 = andrea_kv_create(m), *k2 = andrea_kv_create(m);
    const float *l1 = andrea_kv_prefill(m, k1, in[0], 20);
    const float *l2 = andrea_kv_prefill_ctx(m, ctx[1], k2, in[0], 20);
    CHECK(l1 && l2 && memcmp(l1, l2, sizeof(float) * c->vocab) == 0);
    CHECK(memcmp(andrea_kv_step(m, k1, 3), andrea_kv_step(m, k2, 3), sizeof(float) * c->vocab) == 0);
    /* a context of another model is refused */
    andrea_config other = *c;
    other.n_layer = 1;
    andrea_model *m2 = andrea_model_create(&other, 1);
    CHECK(isnan(andrea_context_forward(m2, ctx[0], in[0], NULL, B, T)));
    CHECK(strstr(andrea_error(), "another model") != NULL);
    andrea_model_free(m2);
    andrea_kv_free(k1);
    andrea_kv_free(k2);
    for (int k = 0; k < 2; k++) {
        andrea_context_free(ctx[k]);
        free(want_logits[k]);
    }
}

int main(void) {
    andrea_model *m = small_model(1337);
    if (!m) return fprintf(stderr, "model: %s\n", andrea_error()), 1;
    check_batched_equals_single(m, "fp32");
    check_batched_errors(m);
    check_contexts(m);
    CHECK(andrea_model_quantize(m, ANDREA_QUANT_BF16) == 0);
    check_batched_equals_single(m, "bf16");
    CHECK(andrea_model_quantize(m, ANDREA_QUANT_INT8) == 0);
    check_batched_equals_single(m, "int8");
    CHECK(andrea_model_quantize(m, ANDREA_QUANT_Q8_0) == 0);
    check_batched_equals_single(m, "q8_0");
    CHECK(andrea_model_quantize(m, ANDREA_QUANT_Q4_0) == 0);
    check_batched_equals_single(m, "q4_0");
    andrea_model_free(m);
    return tu_finish("test_batch_decode");
}
