/*
 * kv_batch.c - batched decoding: n sequences, each with its own KV cache at its own
 * position, advance one token each in one forward step. The matrix products become
 * n-row products that read each weight row once for all n sequences (one-token decoding
 * is bound by reading the weights, so n sequences cost little more than one); attention
 * stays per sequence, over that sequence's own cache. Every per-row operation is the one
 * kv.c uses, so each sequence's logits equal andrea_kv_step's.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "model/kv.h"
#include "model/model.h"
#include "util/error.h"
#include "util/profile.h"

struct andrea_kv_batch {
    int max;                /* most sequences per step */
    float *x, *xn, *atty;   /* (max, C) each: residual stream, its norm, attention out */
    float *qkv;             /* (max, 3C) */
    float *h, *hact;        /* (max, 4C) MLP pre- and post-activation */
    float *tmp;             /* (max, C) a branch's output before the residual add */
    float *mean, *rstd;     /* (max) norm statistics (scratch) */
    float *att;             /* (max, NH, ctx) attention scores, one block per sequence */
    float *logits;          /* (max, V) */
};

andrea_kv_batch *andrea_kv_batch_create(const andrea_model *m, int max_seqs) {
    const andrea_config *c = &m->cfg;
    if (max_seqs <= 0) return andrea_set_error("batched decoding: need max_seqs >= 1"), NULL;
    andrea_kv_batch *b = calloc(1, sizeof *b);
    if (!b) return andrea_set_error("out of memory allocating batched decoding"), NULL;
    size_t n = (size_t)max_seqs, C = (size_t)c->d_model;
    /* x, xn, atty, tmp (C each), qkv (3C), h and hact (4C each): 15 C per sequence */
    size_t per_seq = 15 * C + 2 + (size_t)c->n_head * c->ctx + (size_t)c->vocab;
    b->x = malloc(sizeof(float) * n * per_seq);
    if (!b->x) {
        free(b);
        return andrea_set_error("out of memory: batched decoding scratch for %d sequences",
                                max_seqs), NULL;
    }
    b->max = max_seqs;
    b->xn = b->x + n * C;
    b->atty = b->xn + n * C;
    b->tmp = b->atty + n * C;
    b->qkv = b->tmp + n * C;
    b->h = b->qkv + n * 3 * C;
    b->hact = b->h + n * 4 * C;
    b->mean = b->hact + n * 4 * C;
    b->rstd = b->mean + n;
    b->att = b->rstd + n;
    b->logits = b->att + n * (size_t)c->n_head * c->ctx;
    return b;
}

void andrea_kv_batch_free(andrea_kv_batch *b) {
    if (!b) return;
    free(b->x);
    free(b);
}

/* Checks every sequence before any cache moves, so an error leaves them all as they were. */
static int check_step(const andrea_model *m, const andrea_kv_batch *b, andrea_kv *const *kvs,
                      const int32_t *tokens, int n) {
    const andrea_config *c = &m->cfg;
    if (n <= 0 || n > b->max)
        return andrea_set_error("batched decoding: %d sequences (this batch holds 1 to %d)", n,
                                b->max);
    for (int s = 0; s < n; s++) {
        if (kvs[s]->L != c->n_layer || kvs[s]->T != c->ctx || kvs[s]->C != c->d_model)
            return andrea_set_error("batched decoding: sequence %d's cache belongs to another "
                                    "model", s);
        if (kvs[s]->pos >= c->ctx)
            return andrea_set_error("batched decoding: sequence %d's context is full (%d tokens)",
                                    s, c->ctx);
        if (tokens[s] < 0 || tokens[s] >= c->vocab)
            return andrea_set_error("batched decoding: sequence %d: token id %d is outside the "
                                    "vocabulary (V=%d)", s, tokens[s], c->vocab);
        for (int r = 0; r < s; r++)
            if (kvs[r] == kvs[s])
                return andrea_set_error("batched decoding: sequences %d and %d share one cache",
                                        r, s);
    }
    return 0;
}

/* x += d (n floats), on the model's backend */
static void add_rows(const andrea_model *m, float *x, const float *d, size_t n) {
    m->be->ops.residual_forward(m->be, x, x, d, n);
}

/* One block for all n sequences: x (n, C) += Attn(Norm(x)); x += MLP(Norm(x)). */
static void block_step(const andrea_model *m, andrea_kv_batch *b, andrea_kv *const *kvs, int n,
                       int l) {
    const andrea_config *c = &m->cfg;
    const andrea_layer_view *w = &m->p.h[l];
    int C = c->d_model;
    size_t nC = (size_t)n * C;
    PROF(PROF_NORM, andrea_kv_norm(m, b->xn, b->mean, b->rstd, b->x, w->ln1w, w->ln1b, n));
    PROF(PROF_MATMUL, andrea_matvec_batch(m, b->qkv, b->xn, w->wqkv, w->bqkv, C, 3 * C, n));
    for (int s = 0; s < n; s++) {
        float *kc = kvs[s]->k + (long)l * c->ctx * C, *vc = kvs[s]->v + (long)l * c->ctx * C;
        PROF(PROF_ATTENTION,
             andrea_kv_attend(m, b->qkv + (long)s * 3 * C, kc, vc, kvs[s]->pos,
                              b->att + (long)s * c->n_head * c->ctx, b->atty + (long)s * C));
    }
    PROF(PROF_MATMUL, andrea_matvec_batch(m, b->tmp, b->atty, w->wo, w->bo, C, C, n));
    add_rows(m, b->x, b->tmp, nC);
    PROF(PROF_NORM, andrea_kv_norm(m, b->xn, b->mean, b->rstd, b->x, w->ln2w, w->ln2b, n));
    PROF(PROF_MATMUL, andrea_matvec_batch(m, b->h, b->xn, w->wfc, w->bfc, C, 4 * C, n));
    andrea_activation_forward(b->hact, b->h, nC * 4, c->act);
    PROF(PROF_MATMUL, andrea_matvec_batch(m, b->tmp, b->hact, w->wproj, w->bproj, 4 * C, C, n));
    add_rows(m, b->x, b->tmp, nC);
}

const float *andrea_kv_batch_step(const andrea_model *m, andrea_kv_batch *b,
                                  andrea_kv *const *kvs, const int32_t *tokens, int n) {
    if (check_step(m, b, kvs, tokens, n)) return NULL;
    const andrea_config *c = &m->cfg;
    const andrea_view *p = &m->p;
    int C = c->d_model, V = c->vocab;
    for (int s = 0; s < n; s++) { /* embeddings, read as every other weight matrix is */
        float *x = b->x + (long)s * C, *pe = b->tmp + (long)s * C;
        andrea_dequant_row(m, x, p->wte + (long)tokens[s] * C, C);
        andrea_dequant_row(m, pe, p->wpe + (long)kvs[s]->pos * C, C);
        add_rows(m, x, pe, (size_t)C);
    }
    for (int l = 0; l < c->n_layer; l++) block_step(m, b, kvs, n, l);
    PROF(PROF_NORM, andrea_kv_norm(m, b->xn, b->mean, b->rstd, b->x, p->lnfw, p->lnfb, n));
    PROF(PROF_MATMUL, andrea_matvec_batch(m, b->logits, b->xn, p->lm_head, NULL, C, V, n));
    for (int s = 0; s < n; s++) {
        memcpy(kvs[s]->logits, b->logits + (long)s * V, sizeof(float) * (size_t)V);
        kvs[s]->pos++;
    }
    return b->logits;
}
