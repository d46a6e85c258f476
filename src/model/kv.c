/*
 * kv.c - incremental decoding with a key/value cache: each new token attends
 * to the cached keys and values of every earlier position, so generating n
 * tokens costs O(n) matrix-vector products instead of O(n^2) full passes.
 * It computes exactly the maths of model.c's forward for one position; the step
 * itself is kv_batch.c's block with one sequence.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/tensor_io.h"
#include "model/kv.h"
#include "model/model.h"
#include "model/prefill.h"
#include "util/error.h"

andrea_kv *andrea_kv_create(const andrea_model *m) {
    const andrea_config *c = &m->cfg;
    andrea_kv *kv = calloc(1, sizeof *kv);
    if (!kv) return andrea_set_error("out of memory allocating the KV cache"), NULL;
    kv->be = m->be;
    kv->L = c->n_layer;
    kv->T = c->ctx;
    kv->C = c->d_model;
    kv->V = c->vocab;
    size_t cache = (size_t)c->n_layer * c->ctx * c->d_model;
    /* zeroed now, so that every page is touched here: a fresh page per position in the
     * decoding loop cost ~50 page faults per token (andrea-120m), a tenth of its time */
    const andrea_backend *be = m->be;
    kv->k = be->ops.alloc(be, sizeof(float) * cache);
    kv->v = be->ops.alloc(be, sizeof(float) * cache);
    kv->logits = be->ops.alloc(be, sizeof(float) * (size_t)c->vocab);
    kv->one = andrea_kv_batch_create(m, 1);
    if (!kv->k || !kv->v || !kv->logits || !kv->one) {
        andrea_kv_free(kv);
        return andrea_set_error("out of memory: KV cache of %.1f MB", cache * 8.0 / 1e6), NULL;
    }
    be->ops.zero(be, kv->k, sizeof(float) * cache);
    be->ops.zero(be, kv->v, sizeof(float) * cache);
    return kv;
}

void andrea_kv_free(andrea_kv *kv) {
    if (!kv) return;
    if (kv->k) kv->be->ops.free(kv->be, kv->k);
    if (kv->v) kv->be->ops.free(kv->be, kv->v);
    if (kv->logits) kv->be->ops.free(kv->be, kv->logits);
    andrea_kv_batch_free(kv->one);
    free(kv->host_logits);
    free(kv);
}

void andrea_kv_reset(andrea_kv *kv) { kv->pos = 0; }
int andrea_kv_pos(const andrea_kv *kv) { return kv->pos; }
int andrea_kv_truncate(andrea_kv *kv, int n) {
    if (n < 0 || n > kv->pos) return andrea_set_error("kv truncate: %d is outside [0, %d]", n, kv->pos);
    kv->pos = n; /* later positions are overwritten as tokens are fed again */
    return 0;
}

/* The logits after the last step as host memory (the buffer itself on a host backend). */
static const float *host_logits(const andrea_kv *kv) {
    andrea_kv *w = (andrea_kv *)kv; /* the host copy is a cache, not state */
    return andrea_tio_view(kv->be, kv->logits, (size_t)kv->V, &w->host_logits, &w->host_n);
}

int andrea_kv_check_backend(const andrea_model *m, const andrea_kv *kv) {
    if (andrea_backend_same_memory(kv->be, m->be)) return 0;
    return andrea_set_error("the KV cache was created on backend '%s', the model runs on '%s' "
                            "now: create a new cache", kv->be->name, m->be->name);
}

const float *andrea_kv_step(const andrea_model *m, andrea_kv *kv, int32_t token) {
    const andrea_config *c = &m->cfg;
    if (andrea_kv_check_backend(m, kv)) return NULL;
    if (kv->pos >= c->ctx) {
        andrea_set_error("context full: the model was trained with a context of %d tokens", c->ctx);
        return NULL;
    }
    if (token < 0 || token >= c->vocab) {
        andrea_set_error("token id %d is outside the vocabulary (V=%d)", token, c->vocab);
        return NULL;
    }
    if (andrea_kv_decode_graphed(m, kv->one, &kv, &token, 1, kv->logits)) return NULL;
    return host_logits(kv);
}

const float *andrea_kv_prefill(andrea_model *m, andrea_kv *kv, const int32_t *tokens, int n) {
    return andrea_kv_prefill_ctx(m, m->ctx, kv, tokens, n);
}

int andrea_prefill_reserve(andrea_model *m, int n) { return andrea_prefill_reserve_ctx(m, m->ctx, n); }

/* all: ctx keeps the logits of every prompt position (andrea_context_logits), else the
 * prompt runs through prefill.c's forward, which keeps nothing but the cache. */
static const float *prefill(const andrea_model *m, andrea_context *ctx, andrea_kv *kv,
                            const int32_t *tokens, int n, int all) {
    const andrea_config *c = &m->cfg;
    if (n <= 0) {
        andrea_set_error("prefill: no tokens");
        return NULL;
    }
    if (andrea_kv_check_backend(m, kv)) return NULL;
    if (kv->pos + n > c->ctx) {
        andrea_set_error("context full: %d + %d tokens exceed the model's context of %d", kv->pos,
                         n, c->ctx);
        return NULL;
    }
    if (kv->pos != 0 || n == 1) { /* continuing a sequence: one position at a time */
        const float *lg = NULL;
        for (int i = 0; i < n; i++)
            if (!(lg = andrea_kv_step(m, kv, tokens[i]))) return NULL;
        return lg;
    }
    /* a fresh prompt: one batched forward pass (matrix-matrix products instead of n
     * matrix-vector ones). Its attention is the fused kernel's: no one reads a prefill's
     * attention maps, and the explicit T x T matrices (row by row, scalar exps, written
     * out whole) were 30-60% of a prefill (gpt2-124m at 306 tokens, andrea-12m at 512). */
    if (!all) return andrea_prefill_forward(m, ctx, kv, tokens, n) ? NULL : host_logits(kv);
    /* every position's logits and hidden states wanted (the server's echo): the training
     * forward in ctx, whose activations keep them, then its keys and values fill the cache */
    int flash = ctx->flash;
    ctx->flash = 1;
    float r = andrea_context_forward(m, ctx, tokens, NULL, 1, n);
    ctx->flash = flash;
    if (isnan(r)) return NULL;
    const andrea_backend *be = m->be;
    size_t C = (size_t)c->d_model;
    for (int l = 0; l < c->n_layer; l++) {
        const float *qkv = ctx->a.qkv + (size_t)l * n * 3 * C;
        float *kc = kv->k + (size_t)l * c->ctx * C, *vc = kv->v + (size_t)l * c->ctx * C;
        be->ops.copy_rows(be, kc, C, qkv + C, 3 * C, C, (size_t)n);
        be->ops.copy_rows(be, vc, C, qkv + 2 * C, 3 * C, C, (size_t)n);
    }
    be->ops.copy_rows(be, kv->logits, 0, ctx->a.logits + (size_t)(n - 1) * ctx->logits_ld, 0,
                      (size_t)c->vocab, 1);
    kv->pos = n;
    return host_logits(kv);
}

const float *andrea_kv_prefill_ctx(const andrea_model *m, andrea_context *ctx, andrea_kv *kv,
                                   const int32_t *tokens, int n) {
    return prefill(m, ctx, kv, tokens, n, 0);
}

const float *andrea_kv_prefill_all(const andrea_model *m, andrea_context *ctx, andrea_kv *kv,
                                   const int32_t *tokens, int n) {
    return prefill(m, ctx, kv, tokens, n, 1);
}

const float *andrea_kv_logits(const andrea_kv *kv) { return kv->pos > 0 ? host_logits(kv) : NULL; }
