/*
 * test_prefill.c - a prefill runs prefill.c's pass (one layer's buffers, the final norm
 * and LM head for the last prompt positions only), and keeps every position's logits when
 * asked (andrea_kv_prefill_all, the server's echo with logprobs):
 * - a prefill's attention is the fused (flash) kernel's, whatever the context is set to
 *   (and the context's setting is left as it was; none of the training forward's
 *   activations are allocated);
 * - the last row's logits equal those of the full flash forward over the prompt, to the bit on
 *   the built-in fp32 kernels (the tail runs through the same gemm), within 1e-5 of the
 *   scale where an engine picks its kernel by the product's shape (BLAS, bf16);
 * - andrea_kv_prefill_all leaves every row's logits (and hidden states) in the context,
 *   equal to the full forward's; after a last-row prefill the context hands out none;
 * - the caches either prefill fills are the same: the steps after them give equal logits;
 * - a batch of several sequences gets each sequence's last row;
 * on every backend this machine runs (cpu-guarded included: everything read back through
 * the API's host copies or the backend's download).
 */
#include <string.h>

#include "backend/backend.h"
#include "model/model.h"
#include "test_util.h"

enum { CTX = 64, STEPS = 4 };

/* 0: bit-identical expected; else the relative tolerance */
static double tolerance(const andrea_backend *be) {
    if (be == &andrea_backend_cpu_guarded) return 1e-5; /* cpu's engine: tuned per shape */
    const andrea_cpu_engine *e = andrea_backend_cpu_engine(be);
    if (e && e->engine == ANDREA_MATMUL_BUILTIN && e->precision == ANDREA_PRECISION_FP32) return 0;
    return andrea_backend_precision(be) == ANDREA_PRECISION_BF16 ? 2e-2 : 1e-5;
}


static void check_prompt(andrea_model *m, const int32_t *prompt, int n, double rel) {
    const andrea_config *c = andrea_model_config(m);
    size_t V = (size_t)c->vocab, C = (size_t)c->d_model;
    char what[128];
    /* the reference: the full forward with flash attention (a prefill's), every row's
     * logits and hidden states; the explicit attention's within float noise */
    andrea_context *ref = andrea_context_create(m);
    CHECK(ref != NULL);
    CHECK(andrea_context_forward(m, ref, prompt, NULL, 1, n) == 0.0f);
    float *full_explicit = tu_dup(andrea_context_logits(ref), (size_t)n * V);
    andrea_context_set_flash_attention(ref, 1);
    CHECK(andrea_context_forward(m, ref, prompt, NULL, 1, n) == 0.0f);
    float *full = tu_dup(andrea_context_logits(ref), (size_t)n * V);
    float *hid = tu_dup(andrea_context_hidden(ref), (size_t)n * C);
    snprintf(what, sizeof what, "%s, %d tokens: flash vs explicit attention", m->be->name, n);
    tu_same(what, full, full_explicit, (size_t)n * V, rel > 1e-5 ? rel : 1e-5);

    /* a one-token prompt is a KV step, not a forward: the decoding products, whose sums
     * run in another order */
    double rel_last = n == 1 && rel == 0.0 ? 1e-5 : rel;
    /* last row only (the default prefill), in a caller's context and in the model's */
    andrea_context *c1 = andrea_context_create(m), *c2 = andrea_context_create(m);
    andrea_kv *k1 = andrea_kv_create(m), *k2 = andrea_kv_create(m), *k3 = andrea_kv_create(m);
    CHECK(c1 && c2 && k1 && k2 && k3);
    snprintf(what, sizeof what, "%s, %d tokens: last-row prefill", m->be->name, n);
    tu_same(what, andrea_kv_prefill_ctx(m, c1, k1, prompt, n), full + (size_t)(n - 1) * V, V, rel_last);
    snprintf(what, sizeof what, "%s, %d tokens: last-row prefill, the model's context", m->be->name, n);
    tu_same(what, andrea_kv_prefill(m, k3, prompt, n), full + (size_t)(n - 1) * V, V, rel_last);
    if (n > 1) { /* prefill.c's pass: the context's setting (explicit) as it was, none of
                  * the training forward's activations allocated, no rows or maps handed out */
        CHECK(c1->flash == 0 && c1->act_mem == NULL && c1->pf_mem != NULL);
        CHECK(andrea_context_attention(c1, 0) == NULL);
        CHECK(andrea_context_logits(c1) == NULL);
        CHECK(andrea_context_hidden(c1) == NULL);
    }

    /* every row kept */
    snprintf(what, sizeof what, "%s, %d tokens: all-rows prefill, its return", m->be->name, n);
    tu_same(what, andrea_kv_prefill_all(m, c2, k2, prompt, n), full + (size_t)(n - 1) * V, V, rel_last);
    if (n > 1) {
        snprintf(what, sizeof what, "%s, %d tokens: all-rows prefill, every row", m->be->name, n);
        tu_same(what, andrea_context_logits(c2), full, (size_t)n * V, rel);
        snprintf(what, sizeof what, "%s, %d tokens: all-rows prefill, hidden", m->be->name, n);
        tu_same(what, andrea_context_hidden(c2), hid, (size_t)n * C, rel);
    }

    /* the caches are the same: the next steps agree (the products ahead of the head are
     * the same in both passes, so these are equal to the bit on every backend) */
    for (int s = 0; s < STEPS && n + s < c->ctx; s++) {
        int32_t t = (int32_t)((17 * s + 5) % c->vocab);
        float *a = tu_dup(andrea_kv_step(m, k1, t), V);
        snprintf(what, sizeof what, "%s, %d tokens: step %d after the prefills", m->be->name, n, s);
        tu_same(what, andrea_kv_step(m, k2, t), a, V, 0.0);
        tu_same(what, andrea_kv_step(m, k3, t), a, V, 0.0);
        free(a);
    }

    /* a last-row pass, then a full one in the same context: every row again */
    if (n > 1) {
        andrea_context_set_flash_attention(c1, 1);
        CHECK(andrea_context_forward(m, c1, prompt, NULL, 1, n) == 0.0f);
        snprintf(what, sizeof what, "%s, %d tokens: full forward after a last-row one", m->be->name, n);
        tu_same(what, andrea_context_logits(c1), full, (size_t)n * V, 0.0);
    }
    andrea_kv_free(k1), andrea_kv_free(k2), andrea_kv_free(k3);
    andrea_context_free(c1), andrea_context_free(c2), andrea_context_free(ref);
    free(full);
    free(full_explicit);
    free(hid);
}

/* B sequences through andrea_context_forward_last: each one's last row as the full pass */
static void check_batch(andrea_model *m, double rel) {
    enum { B = 3, T = 20 };
    const andrea_config *c = andrea_model_config(m);
    size_t V = (size_t)c->vocab;
    int32_t x[B * T];
    for (int i = 0; i < B * T; i++) x[i] = (int32_t)((i * 37 + 11) % c->vocab);
    andrea_context *ref = andrea_context_create(m), *ctx = andrea_context_create(m);
    CHECK(ref && ctx);
    CHECK(andrea_context_forward(m, ref, x, NULL, B, T) == 0.0f);
    const float *full = andrea_context_logits(ref);
    CHECK(andrea_context_forward_last(m, ctx, x, B, T) == 0.0f);
    CHECK(ctx->tail_rows > 0 && ctx->tail_rows < T);
    float *row = tu_falloc(V);
    for (int b = 0; b < B; b++) {
        size_t r = (size_t)b * T + T - 1, at = r * V; /* rows logits_ld apart on the device */
        m->be->ops.download(m->be, row, ctx->a.logits + r * ctx->logits_ld, sizeof(float) * V);
        char what[96];
        snprintf(what, sizeof what, "%s: batch of %d, sequence %d's last row", m->be->name, B, b);
        tu_same(what, row, full + at, V, rel);
    }
    CHECK(isnan(andrea_context_forward_last(m, ctx, x, B, CTX + 1))); /* still checked */
    free(row);
    andrea_context_free(ref), andrea_context_free(ctx);
}

/* andrea_prefill_reserve: refuses lengths outside the context; reserving (growing the
 * model's scratch and writing it, or nothing when it is large enough) changes no bit of
 * the prefill after it */
static void check_reserve(andrea_model *m, const int32_t *prompt) {
    size_t V = (size_t)andrea_model_config(m)->vocab;
    CHECK(andrea_prefill_reserve(m, 0) == -1 && strstr(andrea_error(), "outside 1..") != NULL);
    CHECK(andrea_prefill_reserve(m, CTX + 1) == -1);
    andrea_kv *a = andrea_kv_create(m), *b = andrea_kv_create(m), *c = andrea_kv_create(m);
    CHECK(a && b && c);
    CHECK(andrea_prefill_reserve(m, 9) == 0); /* fresh: allocated and written */
    float *first = tu_dup(andrea_kv_prefill(m, a, prompt, 9), V);
    CHECK(andrea_prefill_reserve(m, CTX) == 0); /* grows */
    char what[96];
    snprintf(what, sizeof what, "%s: a prefill after a reserve that grew", m->be->name);
    tu_same(what, andrea_kv_prefill(m, b, prompt, 9), first, V, 0.0);
    CHECK(andrea_prefill_reserve(m, 5) == 0); /* large enough: nothing to do */
    snprintf(what, sizeof what, "%s: a prefill after a reserve that did nothing", m->be->name);
    tu_same(what, andrea_kv_prefill(m, c, prompt, 9), first, V, 0.0);
    free(first);
    andrea_kv_free(a), andrea_kv_free(b), andrea_kv_free(c);
}

static void run(const andrea_backend *be) {
    andrea_config cfg;
    CHECK(andrea_config_preset("tiny", &cfg) == 0); /* 2 layers, C 32, V 257 */
    cfg.ctx = CTX;
    andrea_model *m = andrea_model_create_on(&cfg, 5, andrea_backend_name(be));
    CHECK(m != NULL);
    if (!m) return;
    double rel = tolerance(be);
    /* around the tail's size (8 rows) and the dot-product rows (<= 4), and the context */
    static const int lens[] = {1, 2, 4, 5, 8, 9, 13, 31, 63, CTX};
    int32_t prompt[CTX];
    tu_rng_seed(9);
    for (int i = 0; i < CTX; i++) prompt[i] = (int32_t)(tu_rng_u64() % (uint64_t)cfg.vocab);
    check_reserve(m, prompt);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) check_prompt(m, prompt, lens[i], rel);
    check_batch(m, rel);
    andrea_model_free(m);
}

int main(void) {
    for (int i = 0; i < andrea_backend_count(); i++) run(andrea_backend_get(i));
    return tu_finish("test_prefill");
}
