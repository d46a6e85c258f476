/*
 * kv_batch.c - batched decoding: n sequences, each with its own KV cache at its own
 * position, advance one token each in one forward step. The matrix products become
 * n-row products that read each weight row once for all n sequences (one-token decoding
 * is bound by reading the weights, so n sequences cost little more than one); attention
 * stays per sequence, over that sequence's own cache. andrea_kv_step is this block with
 * one sequence, so each sequence's logits equal andrea_kv_step's. Everything runs through
 * the model's backend; the scratch is its memory.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/tensor_io.h"
#include "model/kv.h"
#include "model/model.h"
#include "util/error.h"
#include "util/profile.h"

struct andrea_kv_batch {
    const andrea_backend *be; /* whose memory the scratch is in */
    int max;                /* most sequences per step */
    float *x, *xn, *atty;   /* (max, C) each: residual stream, its norm, attention out */
    float *qkv;             /* (max, 3C) */
    float *h, *hact;        /* (max, 4C) MLP pre- and post-activation */
    float *tmp;             /* (max, C) a branch's output before the residual add */
    float *mean, *rstd;     /* (max) norm statistics (scratch) */
    float *att;             /* (max, NH, ctx) attention scores, one block per sequence */
    float *logits;          /* (max, V) */
    int32_t *dpos;          /* (max) the positions in backend memory (attention_decode_kv) */
    int32_t *tok, *pos;     /* (max) each, host: the tokens and positions (the wte and wpe
                             * rows; pinned on a backend with graphs, which read them at
                             * each replay: andrea_backend_host_ids) */
    float *host_logits;     /* (max, V) host copy handed out (non-host backend) */
    size_t host_n;
    struct andrea_decode_graph *graph; /* its steps' graph (graph_decode.c), or NULL */
};

andrea_kv_batch *andrea_kv_batch_create(const andrea_model *m, int max_seqs) {
    const andrea_config *c = &m->cfg;
    if (max_seqs <= 0) return andrea_set_error("batched decoding: need max_seqs >= 1"), NULL;
    andrea_kv_batch *b = calloc(1, sizeof *b);
    if (!b) return andrea_set_error("out of memory allocating batched decoding"), NULL;
    size_t n = (size_t)max_seqs, C = (size_t)c->d_model;
    /* x, xn, atty, tmp (C each), qkv (3C), h and hact (4C each): 15 C per sequence */
    size_t per_seq = 15 * C + 2 + (size_t)c->n_head * c->ctx + (size_t)c->vocab + 1;
    b->be = m->be;
    b->x = m->be->ops.alloc(m->be, sizeof(float) * n * per_seq);
    b->tok = andrea_backend_host_ids(m->be, 2 * n);
    if (!b->x || !b->tok) {
        andrea_kv_batch_free(b);
        return andrea_set_error("out of memory: batched decoding scratch for %d sequences",
                                max_seqs), NULL;
    }
    b->max = max_seqs;
    b->pos = b->tok + n;
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
    b->dpos = (int32_t *)(b->logits + n * (size_t)c->vocab); /* a float's room each */
    return b;
}

struct andrea_decode_graph **andrea_kv_batch_graph_slot(andrea_kv_batch *b) { return &b->graph; }
int andrea_kv_batch_max(const andrea_kv_batch *b) { return b->max; }

void andrea_kv_batch_free(andrea_kv_batch *b) {
    if (!b) return;
    andrea_decode_graph_free(b->graph);
    if (b->x) b->be->ops.free(b->be, b->x);
    andrea_backend_host_ids_free(b->be, b->tok);
    free(b->host_logits);
    free(b);
}

/* Checks every sequence before any cache moves, so an error leaves them all as they were. */
static int check_step(const andrea_model *m, const andrea_kv_batch *b, andrea_kv *const *kvs,
                      const int32_t *tokens, int n) {
    const andrea_config *c = &m->cfg;
    if (n <= 0 || n > b->max)
        return andrea_set_error("batched decoding: %d sequences (this batch holds 1 to %d)", n,
                                b->max);
    if (!andrea_backend_same_memory(b->be, m->be))
        return andrea_set_error("batched decoding: the batch was created on backend '%s', the "
                                "model runs on '%s' now: create a new one", b->be->name,
                                m->be->name);
    for (int s = 0; s < n; s++) {
        if (kvs[s]->L != c->n_layer || kvs[s]->T != c->ctx || kvs[s]->C != c->d_model)
            return andrea_set_error("batched decoding: sequence %d's cache belongs to another "
                                    "model", s);
        if (andrea_kv_check_backend(m, kvs[s])) return -1;
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

static void norm_rows(const andrea_model *m, andrea_kv_batch *b, const float *w, const float *bias,
                      int n) {
    m->be->ops.norm_forward(m->be, m->cfg.norm, b->xn, b->mean, b->rstd, b->x, w, bias, n,
                            m->cfg.d_model, m->cfg.norm_eps);
}

/* Sequence s's attention for layer l at its position: its key and value (from qkv) go into
 * its cache rows, then each head's query attends over positions 0..pos. One op where the
 * backend has it: reading the position from b->dpos, it can be replayed at any position. */
static void attend(const andrea_model *m, andrea_kv_batch *b, andrea_kv *kv, int s, int l) {
    const andrea_config *c = &m->cfg;
    size_t C = (size_t)c->d_model, pos = (size_t)kv->pos;
    const float *qkv = b->qkv + s * 3 * C;
    float *kc = kv->k + (size_t)l * c->ctx * C, *vc = kv->v + (size_t)l * c->ctx * C;
    float *att = b->att + (size_t)s * c->n_head * c->ctx;
    if (m->be->ops.attention_decode_kv) {
        m->be->ops.attention_decode_kv(m->be, b->atty + s * C, att, c->ctx, qkv, kc, vc,
                                       b->dpos + s, (int)C, c->n_head);
        return;
    }
    m->be->ops.copy_rows(m->be, kc + pos * C, 0, qkv + C, 0, C, 1);
    m->be->ops.copy_rows(m->be, vc + pos * C, 0, qkv + 2 * C, 0, C, 1);
    m->be->ops.attention_decode(m->be, b->atty + s * C, att, c->ctx, qkv, kc, vc, kv->pos,
                                (int)C, c->n_head);
}

/* One block for all n sequences: x (n, C) += Attn(Norm(x)); x += MLP(Norm(x)). */
static void block_step(const andrea_model *m, andrea_kv_batch *b, andrea_kv *const *kvs, int n,
                       int l) {
    const andrea_config *c = &m->cfg;
    const andrea_layer_view *w = &m->p.h[l];
    int C = c->d_model;
    size_t nC = (size_t)n * C;
    PROF(PROF_NORM, norm_rows(m, b, w->ln1w, w->ln1b, n));
    PROF(PROF_MATMUL, andrea_matvec_batch(m, b->qkv, b->xn, w->wqkv, w->bqkv, C, 3 * C, n));
    for (int s = 0; s < n; s++) PROF(PROF_ATTENTION, attend(m, b, kvs[s], s, l));
    PROF(PROF_MATMUL, andrea_matvec_batch(m, b->tmp, b->atty, w->wo, w->bo, C, C, n));
    add_rows(m, b->x, b->tmp, nC);
    PROF(PROF_NORM, norm_rows(m, b, w->ln2w, w->ln2b, n));
    PROF(PROF_MATMUL, andrea_matvec_batch(m, b->h, b->xn, w->wfc, w->bfc, C, 4 * C, n));
    m->be->ops.activation_forward(m->be, b->hact, b->h, nC * 4, c->act);
    PROF(PROF_MATMUL, andrea_matvec_batch(m, b->tmp, b->hact, w->wproj, w->bproj, 4 * C, C, n));
    add_rows(m, b->x, b->tmp, nC);
}

/* Each step ends in a download of its logits (andrea_kv_step, andrea_kv_batch_step), so
 * these writes never race an asynchronous copy of the step before from pinned memory. */
void andrea_kv_batch_set_ids(andrea_kv_batch *b, andrea_kv *const *kvs, const int32_t *tokens,
                             int n) {
    for (int s = 0; s < n; s++) b->pos[s] = kvs[s]->pos;
    if (tokens != b->tok) memcpy(b->tok, tokens, sizeof(int32_t) * (size_t)n);
}

/* the positions into backend memory, once a step, for attention_decode_kv (a copy that a
 * captured step makes again at each replay) */
static void upload_positions(const andrea_model *m, andrea_kv_batch *b, int n) {
    if (m->be->ops.attention_decode_kv)
        m->be->ops.upload(m->be, b->dpos, b->pos, sizeof(int32_t) * (size_t)n);
}

float *andrea_kv_decode(const andrea_model *m, andrea_kv_batch *b, andrea_kv *const *kvs,
                        const int32_t *tokens, int n, float *out) {
    const andrea_config *c = &m->cfg;
    const andrea_view *p = &m->p;
    int C = c->d_model, V = c->vocab;
    if (!out) out = b->logits;
    /* embeddings, read as every other weight matrix is; the ids from b's own copies */
    andrea_kv_batch_set_ids(b, kvs, tokens, n);
    upload_positions(m, b, n);
    andrea_gather_weight_rows(m, b->x, p->wte, b->tok, n, C);
    andrea_gather_weight_rows(m, b->tmp, p->wpe, b->pos, n, C);
    add_rows(m, b->x, b->tmp, (size_t)n * C);
    for (int l = 0; l < c->n_layer; l++) block_step(m, b, kvs, n, l);
    PROF(PROF_NORM, norm_rows(m, b, p->lnfw, p->lnfb, n));
    PROF(PROF_MATMUL, andrea_matvec_batch(m, out, b->xn, p->lm_head, NULL, C, V, n));
    for (int s = 0; s < n; s++) {
        if (kvs[s]->logits != out + (size_t)s * V)
            m->be->ops.copy_rows(m->be, kvs[s]->logits, 0, out + (size_t)s * V, 0, (size_t)V, 1);
        kvs[s]->pos++;
    }
    return out;
}

const float *andrea_kv_batch_step(const andrea_model *m, andrea_kv_batch *b,
                                  andrea_kv *const *kvs, const int32_t *tokens, int n) {
    if (check_step(m, b, kvs, tokens, n)) return NULL;
    if (andrea_kv_decode_graphed(m, b, kvs, tokens, n, b->logits)) return NULL;
    return andrea_tio_view(b->be, b->logits, (size_t)n * m->cfg.vocab, &b->host_logits,
                           &b->host_n);
}
