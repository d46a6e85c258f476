/*
 * prefill.c - a fresh prompt's forward pass for generation: the same operations, in the
 * same order and on the same shapes, as the training forward of model.c (so the last
 * row's logits are those of andrea_context_forward_last to the bit), but nothing is kept
 * for a backward that never runs. One layer's buffers serve every layer, so a prompt of
 * T tokens touches about 15 T C floats instead of the training forward's 16 L T C (75 MB
 * for gpt2-124m at 128 tokens, 6 MB here): the first prompt of a process no longer pays
 * the page faults of activations it does not need, and each layer's inputs are still in
 * cache when the next layer reads them. Keys and values go into the cache as each layer
 * computes them; the final norm and LM head run over the last rows only. With q8_0 or
 * q4_0 weights the products run in their blocks where the backend can (llama.cpp's way:
 * andrea_model_prefill_blocks), and the logits are then q8_0's error away from those bits.
 */
#include <string.h>

#include "backend/backend.h"
#include "model/kv.h"
#include "model/model.h"
#include "model/prefill.h"
#include "util/error.h"
#include "util/profile.h"

/* The rows of the prompt's end the final norm and LM head run over: model.c's TAIL_ROWS,
 * for the reason given there (the same gemm as the every-row pass, so the same bits). */
#define PREFILL_TAIL 8

/* The floats of a prefill scratch for up to T rows */
static size_t scratch_floats(const andrea_config *c, int T) {
    size_t per_row = 15 * (size_t)c->d_model + 2 + (size_t)c->n_head; /* x y ln atty: 4C, qkv 3C, fch 2 x 4C */
    return (size_t)T * per_row + (size_t)PREFILL_TAIL * c->vocab;
}

/* Carves ctx's prefill scratch for T rows, growing it (never shrinking) when T is
 * larger than any prompt before. */
static int prefill_scratch(andrea_context *ctx, int T, andrea_prefill_bufs *b) {
    const andrea_config *c = &ctx->cfg;
    size_t C = (size_t)c->d_model, R = (size_t)(T < PREFILL_TAIL ? T : PREFILL_TAIL);
    size_t rows = (size_t)T;
    if (!ctx->pf_mem || ctx->pf_T < T) {
        size_t total = scratch_floats(c, T);
        if (ctx->pf_mem) ctx->be->ops.free(ctx->be, ctx->pf_mem);
        ctx->pf_mem = ctx->be->ops.alloc(ctx->be, sizeof(float) * total);
        ctx->pf_T = ctx->pf_mem ? T : 0;
        if (!ctx->pf_mem)
            return andrea_set_error("out of memory: a prefill of %d tokens needs %.1f MB", T,
                                    total * 4.0 / 1e6);
    }
    float *p = ctx->pf_mem;
    float **slots[] = {&b->x, &b->y, &b->ln, &b->atty, &b->qkv, &b->fch, &b->fch_act,
                       &b->mean, &b->rstd, &b->lse, &b->logits};
    size_t sizes[] = {rows * C, rows * C, rows * C, rows * C, rows * 3 * C, rows * 4 * C,
                      rows * 4 * C, rows, rows, rows * c->n_head, R * c->vocab};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        *slots[i] = p;
        p += sizes[i];
    }
    b->tail = (int)R;
    return 0;
}

static void norm(const andrea_model *m, const andrea_prefill_bufs *b, float *out,
                 const float *inp, const float *w, const float *bias, int N) {
    m->be->ops.norm_forward(m->be, m->cfg.norm, out, b->mean, b->rstd, inp, w, bias, N,
                            m->cfg.d_model, m->cfg.norm_eps);
}

/* out = inp w^T + bias (+ resid): in the weights' q8_0/q4_0 blocks where the model and
 * its backend run them (andrea_model_prefill_blocks), else the f32 product. */
static void product(const andrea_model *m, float *out, const float *inp, const float *w,
                    const float *bias, const float *resid, int M, int K, int N) {
    const andrea_backend *be = m->be;
    if (andrea_matmul_blocks(m, out, inp, w, bias, resid, M, K, N) == 0) return;
    if (resid)
        be->ops.matmul_forward_residual(be, out, inp, w, bias, resid, M, K, N);
    else
        be->ops.matmul_forward(be, out, inp, w, bias, M, K, N);
}

/* One block over the prompt's T rows: x in, x out (y holds the middle residual). */
static void block(const andrea_model *m, andrea_kv *kv, int l, const andrea_prefill_bufs *b,
                  int T) {
    const andrea_backend *be = m->be;
    const andrea_layer_view *w = &m->p.h[l];
    int C = m->cfg.d_model;
    PROF(PROF_NORM, norm(m, b, b->ln, b->x, w->ln1w, w->ln1b, T));
    PROF(PROF_MATMUL, product(m, b->qkv, b->ln, w->wqkv, w->bqkv, NULL, T, C, 3 * C));
    float *kc = kv->k + (size_t)l * kv->T * C, *vc = kv->v + (size_t)l * kv->T * C;
    be->ops.copy_rows(be, kc, (size_t)C, b->qkv + C, 3 * (size_t)C, (size_t)C, (size_t)T);
    be->ops.copy_rows(be, vc, (size_t)C, b->qkv + 2 * C, 3 * (size_t)C, (size_t)C, (size_t)T);
    PROF(PROF_ATTENTION,
         be->ops.attention_flash_forward(be, b->atty, b->lse, b->qkv, 1, T, C, m->cfg.n_head));
    PROF(PROF_MATMUL, product(m, b->y, b->atty, w->wo, w->bo, b->x, T, C, C));
    PROF(PROF_NORM, norm(m, b, b->ln, b->y, w->ln2w, w->ln2b, T));
    int fc_blocks;
    PROF(PROF_MATMUL,
         fc_blocks = andrea_matmul_blocks(m, b->fch, b->ln, w->wfc, w->bfc, NULL, T, C, 4 * C));
    if (fc_blocks == 0) /* the activation apart: "other" in a profile */
        be->ops.activation_forward(be, b->fch_act, b->fch, (size_t)T * 4 * C, m->cfg.act);
    else
        PROF(PROF_MATMUL, be->ops.matmul_forward_act(be, b->fch, b->fch_act, b->ln, w->wfc,
                                                     w->bfc, T, C, 4 * C, m->cfg.act));
    PROF(PROF_MATMUL, product(m, b->x, b->fch_act, w->wproj, w->bproj, b->y, T, 4 * C, C));
}

/* ctx can run m's prefill: made for m's shape, on m's backend's memory */
static int check_context(const andrea_model *m, const andrea_context *ctx) {
    if (memcmp(&ctx->cfg, &m->cfg, sizeof m->cfg) != 0)
        return andrea_set_error("prefill: the context was created for another model");
    if (!andrea_backend_same_memory(ctx->be, m->be))
        return andrea_set_error("prefill: the context was created on backend '%s', the model "
                                "runs on '%s' now: create a new context", ctx->be->name,
                                m->be->name);
    return 0;
}

int andrea_prefill_reserve_ctx(const andrea_model *m, andrea_context *ctx, int T) {
    if (T < 1 || T > m->cfg.ctx)
        return andrea_set_error("prefill reserve: %d tokens is outside 1..%d (the context)", T,
                                m->cfg.ctx);
    if (check_context(m, ctx)) return -1;
    int grows = !ctx->pf_mem || ctx->pf_T < T;
    andrea_prefill_bufs b;
    if (prefill_scratch(ctx, T, &b)) return -1;
    if (grows) { /* every page written once now, not during the first prompt */
        andrea_rng unused;
        andrea_rng_seed(&unused, 0);
        ctx->be->ops.fill(ctx->be, ctx->pf_mem, scratch_floats(&m->cfg, T), ANDREA_FILL_CONST,
                          0.0f, 0.0f, &unused);
    }
    return 0;
}

int andrea_prefill_forward(const andrea_model *m, andrea_context *ctx, andrea_kv *kv,
                           const int32_t *tokens, int T) {
    const andrea_config *c = &m->cfg;
    if (check_context(m, ctx)) return -1;
    for (int i = 0; i < T; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab)
            return andrea_set_error("prefill: token id %d at position %d is outside the "
                                    "vocabulary (V=%d)", tokens[i], i, c->vocab);
    andrea_prefill_bufs b = {0};
    if (prefill_scratch(ctx, T, &b)) return -1;
    const andrea_backend *be = m->be;
    int C = c->d_model, R = b.tail;
    be->ops.embedding_forward(be, b.x, tokens, m->p.wte, m->p.wpe, 1, T, C);
    for (int l = 0; l < c->n_layer; l++) block(m, kv, l, &b, T);
    if (andrea_model_prefill_blocks(m)) {
        /* not the f32 pass's bits anyway: the last row alone through decoding's head, which
         * reads the quantised matrix (a quarter or an eighth of the f32 one's bytes) once */
        PROF(PROF_NORM, norm(m, &b, b.ln, b.x + (size_t)(T - 1) * C, m->p.lnfw, m->p.lnfb, 1));
        PROF(PROF_MATMUL, andrea_matvec(m, kv->logits, b.ln, m->p.lm_head, NULL, C, c->vocab));
    } else {
        const float *last = b.x + (size_t)(T - R) * C;
        PROF(PROF_NORM, norm(m, &b, b.ln, last, m->p.lnfw, m->p.lnfb, R));
        PROF(PROF_MATMUL,
             be->ops.matmul_forward(be, b.logits, b.ln, m->p.lm_head, NULL, R, C, c->vocab));
        be->ops.copy_rows(be, kv->logits, 0, b.logits + (size_t)(R - 1) * c->vocab, 0,
                          (size_t)c->vocab, 1);
    }
    kv->pos = T;
    /* ctx's activations are not this pass's: its accessors and backward must refuse them,
     * as after any pass that computed the last rows only */
    ctx->B = 1;
    ctx->T = T;
    ctx->tail_rows = R;
    ctx->has_targets = 0;
    return 0;
}
