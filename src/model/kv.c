/*
 * kv.c - incremental decoding with a key/value cache: each new token attends
 * to the cached keys and values of every earlier position, so generating n
 * tokens costs O(n) matrix-vector products instead of O(n^2) full passes.
 * It computes exactly the maths of model.c's forward for one position.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "model/kv.h"
#include "model/model.h"
#include "util/bigalloc.h"
#include "util/error.h"
#include "util/profile.h"


andrea_kv *andrea_kv_create(const andrea_model *m) {
    const andrea_config *c = &m->cfg;
    andrea_kv *kv = calloc(1, sizeof *kv);
    if (!kv) return andrea_set_error("out of memory allocating the KV cache"), NULL;
    kv->be = m->be;
    kv->L = c->n_layer;
    kv->T = c->ctx;
    kv->C = c->d_model;
    size_t cache = (size_t)c->n_layer * c->ctx * c->d_model;
    /* zeroed now, so that every page is touched here: a fresh page per position in the
     * decoding loop cost ~50 page faults per token (andrea-120m), a tenth of its time */
    const andrea_backend *be = m->be;
    kv->k = be->ops.alloc(be, sizeof(float) * cache);
    kv->v = be->ops.alloc(be, sizeof(float) * cache);
    size_t C = (size_t)c->d_model;
    /* x, xn, qkv (3C), atty, tmp, h (4C), hact (4C): 15 C, then att (NH T), logits (V) */
    kv->x = be->ops.alloc(be, sizeof(float) * (C * 15 + (size_t)c->n_head * c->ctx + (size_t)c->vocab));
    if (!kv->k || !kv->v || !kv->x) {
        andrea_kv_free(kv);
        return andrea_set_error("out of memory: KV cache of %.1f MB", cache * 8.0 / 1e6), NULL;
    }
    be->ops.zero(be, kv->k, sizeof(float) * cache);
    be->ops.zero(be, kv->v, sizeof(float) * cache);
    kv->xn = kv->x + C;
    kv->qkv = kv->xn + C;
    kv->atty = kv->qkv + 3 * C;
    kv->tmp = kv->atty + C;
    kv->h = kv->tmp + C;
    kv->hact = kv->h + 4 * C;
    kv->att = kv->hact + 4 * C;
    kv->logits = kv->att + (size_t)c->n_head * c->ctx;
    return kv;
}

void andrea_kv_free(andrea_kv *kv) {
    if (!kv) return;
    if (kv->k) kv->be->ops.free(kv->be, kv->k);
    if (kv->v) kv->be->ops.free(kv->be, kv->v);
    if (kv->x) kv->be->ops.free(kv->be, kv->x);
    free(kv);
}

void andrea_kv_reset(andrea_kv *kv) { kv->pos = 0; }
int andrea_kv_pos(const andrea_kv *kv) { return kv->pos; }
int andrea_kv_truncate(andrea_kv *kv, int n) {
    if (n < 0 || n > kv->pos) return andrea_set_error("kv truncate: %d is outside [0, %d]", n, kv->pos);
    kv->pos = n; /* later positions are overwritten as tokens are fed again */
    return 0;
}

void andrea_kv_norm(const andrea_model *m, float *out, float *mean, float *rstd,
                    const float *inp, const float *w, const float *b, int n) {
    m->be->ops.norm_forward(m->be, m->cfg.norm, out, mean, rstd, inp, w, b, n, m->cfg.d_model,
                            m->cfg.norm_eps);
}

static void norm1(const andrea_model *m, andrea_kv *kv, float *out, const float *inp,
                  const float *w, const float *b) {
    andrea_kv_norm(m, out, &kv->stat_mean, &kv->stat_rstd, inp, w, b, 1);
}

void andrea_kv_attend(const andrea_model *m, const float *qkv, float *kc, float *vc, int pos,
                      float *att_scratch, float *out) {
    const andrea_config *c = &m->cfg;
    int C = c->d_model;
    memcpy(kc + (long)pos * C, qkv + C, sizeof(float) * (size_t)C);
    memcpy(vc + (long)pos * C, qkv + 2 * C, sizeof(float) * (size_t)C);
    m->be->ops.attention_decode(m->be, out, att_scratch, c->ctx, qkv, kc, vc, pos, C, c->n_head);
}

static void attend(const andrea_model *m, andrea_kv *kv, float *kc, float *vc, int pos) {
    andrea_kv_attend(m, kv->qkv, kc, vc, pos, kv->att, kv->atty);
}

const float *andrea_kv_step(const andrea_model *m, andrea_kv *kv, int32_t token) {
    const andrea_config *c = &m->cfg;
    int C = c->d_model, V = c->vocab;
    if (kv->pos >= c->ctx) {
        andrea_set_error("context full: the model was trained with a context of %d tokens", c->ctx);
        return NULL;
    }
    if (token < 0 || token >= V) {
        andrea_set_error("token id %d is outside the vocabulary (V=%d)", token, V);
        return NULL;
    }
    int pos = kv->pos;
    const andrea_view *p = &m->p;
    /* embeddings read in the same format as every other weight matrix */
    andrea_dequant_row(m, kv->x, p->wte + (long)token * C, C);
    andrea_dequant_row(m, kv->tmp, p->wpe + (long)pos * C, C);
    m->be->ops.residual_forward(m->be, kv->x, kv->x, kv->tmp, (size_t)C);
    for (int l = 0; l < c->n_layer; l++) {
        andrea_layer_view *w = &p->h[l];
        float *kc = kv->k + (long)l * c->ctx * C, *vc = kv->v + (long)l * c->ctx * C;
        PROF(PROF_NORM, norm1(m, kv, kv->xn, kv->x, w->ln1w, w->ln1b));
        PROF(PROF_MATMUL, andrea_matvec(m, kv->qkv, kv->xn, w->wqkv, w->bqkv, C, 3 * C));
        PROF(PROF_ATTENTION, attend(m, kv, kc, vc, pos));
        PROF(PROF_MATMUL, andrea_matvec(m, kv->tmp, kv->atty, w->wo, w->bo, C, C));
        m->be->ops.residual_forward(m->be, kv->x, kv->x, kv->tmp, (size_t)C);
        PROF(PROF_NORM, norm1(m, kv, kv->xn, kv->x, w->ln2w, w->ln2b));
        PROF(PROF_MATMUL, andrea_matvec(m, kv->h, kv->xn, w->wfc, w->bfc, C, 4 * C));
        m->be->ops.activation_forward(m->be, kv->hact, kv->h, (size_t)4 * C, c->act);
        PROF(PROF_MATMUL, andrea_matvec(m, kv->tmp, kv->hact, w->wproj, w->bproj, 4 * C, C));
        m->be->ops.residual_forward(m->be, kv->x, kv->x, kv->tmp, (size_t)C);
    }
    PROF(PROF_NORM, norm1(m, kv, kv->xn, kv->x, p->lnfw, p->lnfb));
    PROF(PROF_MATMUL, andrea_matvec(m, kv->logits, kv->xn, p->lm_head, NULL, C, V));
    kv->pos++;
    return kv->logits;
}

const float *andrea_kv_prefill(andrea_model *m, andrea_kv *kv, const int32_t *tokens, int n) {
    return andrea_kv_prefill_ctx(m, m->ctx, kv, tokens, n);
}

const float *andrea_kv_prefill_ctx(const andrea_model *m, andrea_context *ctx, andrea_kv *kv,
                                   const int32_t *tokens, int n) {
    const andrea_config *c = &m->cfg;
    if (n <= 0) {
        andrea_set_error("prefill: no tokens");
        return NULL;
    }
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
     * matrix-vector ones) in ctx, then the keys and values it computed fill the cache */
    if (isnan(andrea_context_forward(m, ctx, tokens, NULL, 1, n))) return NULL;
    int C = c->d_model;
    for (int l = 0; l < c->n_layer; l++) {
        const float *qkv = ctx->a.qkv + (long)l * n * 3 * C;
        float *kc = kv->k + (long)l * c->ctx * C, *vc = kv->v + (long)l * c->ctx * C;
        for (int t = 0; t < n; t++) {
            memcpy(kc + (long)t * C, qkv + (long)t * 3 * C + C, sizeof(float) * (size_t)C);
            memcpy(vc + (long)t * C, qkv + (long)t * 3 * C + 2 * C, sizeof(float) * (size_t)C);
        }
    }
    memcpy(kv->logits, ctx->a.logits + (long)(n - 1) * c->vocab, sizeof(float) * (size_t)c->vocab);
    kv->pos = n;
    return kv->logits;
}

const float *andrea_kv_logits(const andrea_kv *kv) { return kv->pos > 0 ? kv->logits : NULL; }
