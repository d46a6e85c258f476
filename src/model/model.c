/*
 * model.c - the decoder-only transformer, read top to bottom as the model:
 *   x = wte[tok] + wpe[pos]
 *   for each block:  x += Attn(Norm(x));  x += MLP(Norm(x))
 *   logits = Norm(x) @ lm_head^T;  loss = cross-entropy
 * and its backward pass in reverse order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/tensor_io.h"
#include "util/bigalloc.h"
#include "util/profile.h"
#include "model/model.h"
#include "util/error.h"

/* ---- construction ------------------------------------------------------------------ */

void andrea_view_build(const andrea_model *m, float *base, andrea_view *v) {
    const andrea_layout *lay = &m->layout;
    int L = m->cfg.n_layer;
    andrea_layer_view *h = v->h;
    memset(h, 0, sizeof *h * (size_t)L);
    memset(v, 0, sizeof *v);
    v->h = h;
    for (int i = 0; i < lay->n; i++) {
        const char *name = lay->t[i].name;
        float *p = base + lay->t[i].offset;
        if (strcmp(name, "wte") == 0) v->wte = p;
        else if (strcmp(name, "wpe") == 0) v->wpe = p;
        else if (strcmp(name, "lnf.w") == 0) v->lnfw = p;
        else if (strcmp(name, "lnf.b") == 0) v->lnfb = p;
        else if (strcmp(name, "lm_head") == 0) v->lm_head = p;
        else {
            int l = atoi(name + 2);
            const char *s = strchr(name + 2, '.') + 1;
            andrea_layer_view *lv = &h[l];
            if (strcmp(s, "ln1.w") == 0) lv->ln1w = p;
            else if (strcmp(s, "ln1.b") == 0) lv->ln1b = p;
            else if (strcmp(s, "attn.wqkv") == 0) lv->wqkv = p;
            else if (strcmp(s, "attn.bqkv") == 0) lv->bqkv = p;
            else if (strcmp(s, "attn.wo") == 0) lv->wo = p;
            else if (strcmp(s, "attn.bo") == 0) lv->bo = p;
            else if (strcmp(s, "ln2.w") == 0) lv->ln2w = p;
            else if (strcmp(s, "ln2.b") == 0) lv->ln2b = p;
            else if (strcmp(s, "mlp.wfc") == 0) lv->wfc = p;
            else if (strcmp(s, "mlp.bfc") == 0) lv->bfc = p;
            else if (strcmp(s, "mlp.wproj") == 0) lv->wproj = p;
            else if (strcmp(s, "mlp.bproj") == 0) lv->bproj = p;
        }
    }
    if (m->cfg.tied) v->lm_head = v->wte;
}

float *andrea_padded_alloc(const andrea_backend *be, const andrea_head_pad *hp, size_t n) {
    size_t after = (size_t)hp->after;
    float *p = be->ops.alloc(be, sizeof(float) * (n + after));
    if (p && after) be->ops.zero(be, p + n, sizeof(float) * after);
    return p;
}

andrea_model *andrea_model_alloc(const andrea_config *cfg) {
    return andrea_model_alloc_on(cfg, andrea_backend_default());
}

int andrea_backend_check_complete(const andrea_backend *be) {
    const char *missing = andrea_backend_missing(be);
    if (missing)
        return andrea_set_error("backend '%s' cannot run a model: it lacks the operation '%s'",
                                be->name, missing);
    return 0;
}

andrea_model *andrea_model_alloc_on(const andrea_config *cfg, const andrea_backend *be) {
    if (andrea_backend_check_complete(be)) return NULL;
    andrea_model *m = calloc(1, sizeof *m);
    if (!m) return andrea_set_error("out of memory allocating the model"), NULL;
    m->cfg = *cfg;
    m->be = be;
    if (andrea_layout_build(cfg, &m->layout)) {
        free(m);
        return NULL;
    }
    /* weights, gradients, moments, activations, caches and quantised copies live in the
     * backend's memory (host memory for every CPU variant); the head's padded rows (model.h's
     * andrea_head_pad) after the weights and gradients only */
    andrea_head_pad_plan(cfg, andrea_backend_vocab_multiple(be), &m->pad);
    m->params = andrea_padded_alloc(be, &m->pad, (size_t)m->layout.total);
    m->p.h = calloc((size_t)cfg->n_layer, sizeof(andrea_layer_view));
    m->g.h = calloc((size_t)cfg->n_layer, sizeof(andrea_layer_view));
    if (!m->params || !m->p.h || !m->g.h) {
        andrea_set_error("out of memory: %lld parameters (%.1f MB)", (long long)m->layout.total,
                         m->layout.total * 4.0 / 1e6);
        andrea_model_free(m);
        return NULL;
    }
    andrea_view_build(m, m->params, &m->p);
    m->ctx = andrea_context_create(m);
    if (!m->ctx) {
        andrea_model_free(m);
        return NULL;
    }
    return m;
}

void andrea_model_init_weights(andrea_model *m, uint64_t seed) {
    andrea_rng rng;
    andrea_rng_seed(&rng, seed);
    float std = m->cfg.init_std;
    float resid_std = std / sqrtf(2.0f * m->cfg.n_layer);
    for (int i = 0; i < m->layout.n; i++) {
        const andrea_tensor_info *t = &m->layout.t[i];
        float *p = m->params + t->offset;
        const char *dot = strrchr(t->name, '.');
        const char *leaf = dot ? dot + 1 : t->name;
        if (t->cols == 0) { /* vectors: norm gains 1, everything else (biases) 0 */
            float val = (leaf[0] == 'w') ? 1.0f : 0.0f;
            m->be->ops.fill(m->be, p, (size_t)t->size, ANDREA_FILL_CONST, val, 0.0f, &rng);
            continue;
        }
        /* GPT-2: projections into the residual stream scaled by 1/sqrt(2 L) */
        float s = (strcmp(leaf, "wo") == 0 || strcmp(leaf, "wproj") == 0) ? resid_std : std;
        m->be->ops.fill(m->be, p, (size_t)t->size, ANDREA_FILL_NORMAL, 0.0f, s, &rng);
    }
}

andrea_model *andrea_model_create(const andrea_config *cfg, uint64_t seed) {
    andrea_model *m = andrea_model_alloc(cfg);
    if (m) andrea_model_init_weights(m, seed);
    return m;
}

andrea_model *andrea_model_create_on(const andrea_config *cfg, uint64_t seed,
                                     const char *backend) {
    const andrea_backend *be = andrea_backend_find(backend);
    andrea_model *m = be ? andrea_model_alloc_on(cfg, be) : NULL;
    if (m) andrea_model_init_weights(m, seed);
    return m;
}

void andrea_model_free(andrea_model *m) {
    if (!m) return;
    andrea_model_drop_graphs(m);
    andrea_layout_free(&m->layout);
    if (m->params) m->be->ops.free(m->be, m->params);
    if (m->grads) m->be->ops.free(m->be, m->grads);
    free(m->p.h);
    free(m->g.h);
    andrea_context_free(m->ctx);
    andrea_model_quantize(m, ANDREA_QUANT_NONE); /* frees the quantised copies */
    free(m);
}

const andrea_config *andrea_model_config(const andrea_model *m) { return &m->cfg; }
int andrea_model_num_tensors(const andrea_model *m) { return m->layout.n; }
const andrea_tensor_info *andrea_model_tensor(const andrea_model *m, int i) {
    return i >= 0 && i < m->layout.n ? &m->layout.t[i] : NULL;
}
int64_t andrea_model_num_params(const andrea_model *m) { return m->layout.total; }
float *andrea_model_params(andrea_model *m) {
    if (m->be->memory == ANDREA_MEM_HOST) return m->params;
    andrea_set_error("backend '%s' keeps the parameters in its own memory: read them with "
                     "andrea_model_read_params", m->be->name);
    return NULL;
}

static int param_range(const andrea_model *m, int64_t off, int64_t n) {
    if (off < 0 || n < 0 || off > m->layout.total || n > m->layout.total - off)
        return andrea_set_error("parameters [%lld, +%lld) are outside the model's %lld",
                                (long long)off, (long long)n, (long long)m->layout.total);
    return 0;
}
int andrea_model_read_params(const andrea_model *m, int64_t off, int64_t n, float *dst) {
    if (param_range(m, off, n)) return -1;
    andrea_tio_read(m->be, dst, m->params + off, (size_t)n);
    return 0;
}
int andrea_model_write_params(andrea_model *m, int64_t off, int64_t n, const float *src) {
    if (param_range(m, off, n)) return -1;
    andrea_tio_write(m->be, m->params + off, src, (size_t)n);
    return 0;
}

int andrea_model_ensure_grads(andrea_model *m) {
    if (m->grads) return 0;
    size_t bytes = sizeof(float) * (size_t)m->layout.total;
    m->grads = andrea_padded_alloc(m->be, &m->pad, (size_t)m->layout.total);
    if (!m->grads) return andrea_set_error("out of memory allocating gradients");
    m->be->ops.zero(m->be, m->grads, bytes);
    andrea_view_build(m, m->grads, &m->g);
    return 0;
}

float *andrea_model_grads(andrea_model *m) {
    if (andrea_model_ensure_grads(m)) return NULL;
    if (m->be->memory == ANDREA_MEM_HOST) return m->grads;
    andrea_set_error("backend '%s' keeps the gradients in its own memory", m->be->name);
    return NULL;
}

void andrea_model_zero_grad(andrea_model *m) {
    if (andrea_model_ensure_grads(m) == 0)
        m->be->ops.zero(m->be, m->grads, sizeof(float) * (size_t)m->layout.total);
    m->grads_stale = 0;
}

void andrea_model_discard_grads(andrea_model *m) { m->grads_stale = 1; }

/* Before a backward that overwrites the gradients: zeroes the tensors whose first write
 * adds rather than overwrites (norms, position embeddings, an untied wte: their kernels
 * accumulate). The products' weights and biases, and wte when tied (the head's product
 * writes it before the embedding adds into it), are overwritten by their product. */
static void zero_accumulated_grads(andrea_model *m) {
    const andrea_layout *lay = &m->layout;
    for (int i = 0; i < lay->n; i++) {
        andrea_tensor_group gr = lay->group[i];
        int overwritten = gr == GROUP_ATTN || gr == GROUP_MLP || gr == GROUP_HEAD ||
                          (m->cfg.tied && m->grads + lay->t[i].offset == m->g.wte);
        if (!overwritten)
            m->be->ops.zero(m->be, m->grads + lay->t[i].offset,
                            sizeof(float) * (size_t)lay->t[i].size);
    }
}

_Static_assert(sizeof(andrea_acts) / sizeof(float *) == sizeof(andrea_act_sizes) / sizeof(int64_t),
               "andrea_acts and andrea_act_sizes must list the same buffers");

/* ---- contexts -------------------------------------------------------------------- */

andrea_context *andrea_context_create(const andrea_model *m) {
    andrea_context *c = calloc(1, sizeof *c);
    if (!c) return andrea_set_error("out of memory allocating a context"), NULL;
    c->cfg = m->cfg;
    c->be = m->be;
    return c;
}

void andrea_context_free(andrea_context *c) {
    if (!c) return;
    if (c->act_mem) c->be->ops.free(c->be, c->act_mem);
    if (c->pf_mem) c->be->ops.free(c->be, c->pf_mem);
    andrea_backend_host_ids_free(c->be, c->inputs);
    andrea_backend_host_ids_free(c->be, c->targets);
    free(c->host_logits);
    free(c->host_att);
    free(c->host_hidden);
    free(c);
}

andrea_context *andrea_model_context(andrea_model *m) { return m->ctx; }
void andrea_context_set_flash_attention(andrea_context *c, int on) { c->flash = on ? 1 : 0; }
void andrea_model_set_flash_attention(andrea_model *m, int on) {
    andrea_context_set_flash_attention(m->ctx, on);
}

/* Activations for a (B, T) batch, reallocated only when the shape, the attention kind or
 * the padding of the model's head (its logits' rows: hp) changes. */
static int ensure_acts(andrea_context *c, int B, int T, const andrea_head_pad *hp) {
    if (c->act_mem && c->act_B == B && c->act_T == T && c->act_flash == c->flash &&
        c->logits_ld == hp->Vp)
        return 0;
    if (c->act_mem) c->be->ops.free(c->be, c->act_mem);
    andrea_backend_host_ids_free(c->be, c->inputs);
    andrea_backend_host_ids_free(c->be, c->targets);
    c->act_mem = NULL, c->inputs = c->targets = NULL;
    andrea_act_sizes s;
    int64_t total = andrea_activation_floats(&c->cfg, B, T, c->flash, &s);
    int64_t pad_floats = (int64_t)B * T * (hp->Vp - hp->V); /* the logits' rows of Vp */
    s.logits += pad_floats;
    total += pad_floats;
    c->act_mem = c->be->ops.alloc(c->be, sizeof(float) * (size_t)total);
    /* pinned on a backend with graphs: a captured step's copies read them at each replay */
    c->inputs = andrea_backend_host_ids(c->be, (size_t)B * T);
    c->targets = andrea_backend_host_ids(c->be, (size_t)B * T);
    if (!c->act_mem || !c->inputs || !c->targets) {
        if (c->act_mem) c->be->ops.free(c->be, c->act_mem);
        c->act_mem = NULL;
        return andrea_set_error("out of memory: activations for B=%d T=%d need %.1f MB", B, T,
                                total * 4.0 / 1e6);
    }
    /* carve the pointers in the order of andrea_act_sizes */
    float **ptrs = (float **)&c->a;
    const int64_t *sizes = (const int64_t *)&s;
    float *cur = c->act_mem;
    for (size_t i = 0; i < sizeof s / sizeof(int64_t); i++) {
        ptrs[i] = cur;
        cur += sizes[i];
    }
    c->logits_ld = hp->Vp;
    c->act_B = B;
    c->act_T = T;
    c->act_flash = c->flash;
    return 0;
}

/* ---- forward ------------------------------------------------------------------------ */

static void norm_forward(const andrea_model *m, float *out, float *mean, float *rstd,
                         const float *inp, const float *w, const float *b, int N) {
    m->be->ops.norm_forward(m->be, m->cfg.norm, out, mean, rstd, inp, w, b, N, m->cfg.d_model,
                            m->cfg.norm_eps);
}

static void norm_backward(const andrea_model *m, float *dinp, float *dw, float *db,
                          const float *dout, const float *inp, const float *w, const float *mean,
                          const float *rstd, int N) {
    m->be->ops.norm_backward(m->be, m->cfg.norm, dinp, dw, db, dout, inp, w, mean, rstd, N,
                             m->cfg.d_model);
}

/* The rows of each sequence the final norm and LM head run over when only its last
 * position's logits are wanted (a prefill: sampling needs no other). Not one row but the
 * last few: the CPU's products of up to 4 rows are dot products from the weights, which
 * sum in another order than the packed gemm of a whole prompt (matmul.c's forward_epi), so
 * 8 rows keep the gemm and the last row's logits are those of the every-row pass to the
 * bit. The head over 8 rows reads the weight matrix once, as one row would. */
#define TAIL_ROWS 8

/* tail = 0: logits at every position; else only over the last min(T, TAIL_ROWS) rows of
 * each sequence (targets must be NULL). */
int andrea_context_check_batch(const andrea_model *m, const andrea_context *ctx,
                               const int32_t *inputs, const int32_t *targets, int B, int T) {
    const andrea_config *c = &m->cfg;
    if (memcmp(&ctx->cfg, c, sizeof *c) != 0)
        return andrea_set_error("forward: the context was created for another model");
    if (!andrea_backend_same_memory(ctx->be, m->be))
        return andrea_set_error("forward: the context was created on backend '%s', the model "
                                "runs on '%s' now: create a new context", ctx->be->name,
                                m->be->name);
    if (B <= 0 || T <= 0 || T > c->ctx)
        return andrea_set_error("forward: batch %d x %d does not fit (need B >= 1, 1 <= T <= "
                                "ctx %d)", B, T, c->ctx);
    int BT = B * T, V = c->vocab;
    for (int i = 0; i < BT; i++) {
        if (inputs[i] < 0 || inputs[i] >= V || (targets && targets[i] >= V))
            return andrea_set_error("forward: token id %d at position %d is outside the "
                                    "vocabulary (V=%d)",
                                    inputs[i] < 0 || inputs[i] >= V ? inputs[i] : targets[i], i,
                                    V);
    }
    return 0;
}

static float forward(const andrea_model *m, andrea_context *ctx, const int32_t *inputs,
                     const int32_t *targets, int B, int T, int tail) {
    const andrea_config *c = &m->cfg;
    if (andrea_context_check_batch(m, ctx, inputs, targets, B, T)) return NAN;
    int C = c->d_model, L = c->n_layer, NH = c->n_head, V = c->vocab;
    if (ensure_acts(ctx, B, T, &m->pad)) return NAN;
    int BT = B * T;
    /* the ops read the context's copies (pinned on a backend with graphs: a captured step
     * reads them again at each replay) */
    memcpy(ctx->inputs, inputs, sizeof(int32_t) * (size_t)BT);
    if (targets) memcpy(ctx->targets, targets, sizeof(int32_t) * (size_t)BT);
    andrea_acts *a = &ctx->a;
    const andrea_view *p = &m->p;

    m->be->ops.embedding_forward(m->be, a->encoded, ctx->inputs, p->wte, p->wpe, B, T, C);

    const float *resid = a->encoded;
    for (int l = 0; l < L; l++) {
        andrea_layer_view *w = &p->h[l];
        long lc = (long)l * BT * C;
        float *ln1 = a->ln1 + lc, *qkv = a->qkv + 3 * lc, *atty = a->atty + lc;
        float *res2 = a->res2 + lc, *ln2 = a->ln2 + lc, *res3 = a->res3 + lc;
        float *fch = a->fch + 4 * lc, *fch_act = a->fch_act + 4 * lc;
        float *att = a->att + (long)l * B * NH * T * (ctx->flash ? 1 : T);
        PROF(PROF_NORM, norm_forward(m, ln1, a->ln1_mean + (long)l * BT, a->ln1_rstd + (long)l * BT,
                                     resid, w->ln1w, w->ln1b, BT));
        PROF(PROF_MATMUL, m->be->ops.matmul_forward(m->be, qkv, ln1, w->wqkv, w->bqkv, BT, C, 3 * C));
        if (ctx->flash) /* att holds the log-sum-exp of each row */
            PROF(PROF_ATTENTION, m->be->ops.attention_flash_forward(m->be, atty, att, qkv, B, T, C, NH));
        else
            PROF(PROF_ATTENTION, m->be->ops.attention_forward(m->be, atty, att, NULL, qkv, B, T, C, NH));
        /* res2 = resid + atty @ wo^T + bo: the residual add fused into the product */
        PROF(PROF_MATMUL, m->be->ops.matmul_forward_residual(m->be, res2, atty, w->wo, w->bo, resid, BT, C, C));
        PROF(PROF_NORM, norm_forward(m, ln2, a->ln2_mean + (long)l * BT, a->ln2_rstd + (long)l * BT,
                                     res2, w->ln2w, w->ln2b, BT));
        /* fch_act = act(fch) is applied tile by tile inside the matmul (one pass fewer) */
        PROF(PROF_MATMUL,
             m->be->ops.matmul_forward_act(m->be, fch, fch_act, ln2, w->wfc, w->bfc, BT, C, 4 * C, c->act));
        PROF(PROF_MATMUL,
             m->be->ops.matmul_forward_residual(m->be, res3, fch_act, w->wproj, w->bproj, res2, BT, 4 * C, C));
        resid = res3;
    }
    /* the last R rows of each sequence (R = T: every row), in their places in lnf and
     * logits; the head's product over its Vp rows (andrea_head_pad: the logits of the
     * rows past V are never read) */
    int R = tail && T > TAIL_ROWS ? TAIL_ROWS : T, Vp = m->pad.Vp;
    for (int b = 0; b < (R == T ? 1 : B); b++) {
        long r0 = R == T ? 0 : (long)b * T + T - R, nr = R == T ? BT : R;
        PROF(PROF_NORM, norm_forward(m, a->lnf + r0 * C, a->lnf_mean + r0, a->lnf_rstd + r0,
                                     resid + r0 * C, p->lnfw, p->lnfb, (int)nr));
        PROF(PROF_MATMUL, m->be->ops.matmul_forward(m->be, a->logits + r0 * Vp, a->lnf + r0 * C,
                                                    p->lm_head, NULL, (int)nr, C, Vp));
    }

    ctx->B = B;
    ctx->T = T;
    ctx->tail_rows = R == T ? 0 : R;
    ctx->has_targets = targets != NULL;
    if (!targets) {
        ctx->loss = 0.0f;
        return 0.0f;
    }
    PROF(PROF_CROSSENTROPY,
         ctx->loss = m->be->ops.crossentropy_forward(m->be, a->logits, a->losses, ctx->targets, BT, V,
                                                     Vp, &ctx->n_valid));
    return ctx->loss;
}

float andrea_context_forward(const andrea_model *m, andrea_context *ctx, const int32_t *inputs,
                             const int32_t *targets, int B, int T) {
    return forward(m, ctx, inputs, targets, B, T, 0);
}

float andrea_context_forward_last(const andrea_model *m, andrea_context *ctx,
                                  const int32_t *inputs, int B, int T) {
    return forward(m, ctx, inputs, NULL, B, T, 1);
}

float andrea_model_forward(andrea_model *m, const int32_t *inputs, const int32_t *targets, int B,
                           int T) {
    return andrea_context_forward(m, m->ctx, inputs, targets, B, T);
}

/* The (rows, V) logits as one host array when their rows are Vp apart (a padded head):
 * one download of the span, then each row moved down to i * V (in place: i * V <= i * Vp),
 * so that no caller ever sees a padded column. */
static const float *unpadded_logits(andrea_context *c, size_t rows) {
    size_t V = (size_t)c->cfg.vocab, ld = (size_t)c->logits_ld, span = (rows - 1) * ld + V;
    if (c->host_logits_n < span || !c->host_logits) {
        float *h = realloc(c->host_logits, sizeof(float) * span);
        if (!h) return andrea_set_error("out of memory staging %zu logits", span), NULL;
        c->host_logits = h;
        c->host_logits_n = span;
    }
    andrea_tio_read(c->be, c->host_logits, c->a.logits, span);
    for (size_t i = 1; i < rows; i++)
        memmove(c->host_logits + i * V, c->host_logits + i * ld, sizeof(float) * V);
    return c->host_logits;
}

/* Host views: the buffers themselves on a host backend, else a copy the context keeps. */
const float *andrea_context_logits(const andrea_context *c) {
    andrea_context *w = (andrea_context *)c; /* the host copy is a cache, not state */
    if (!c->act_mem || c->tail_rows) return NULL;
    size_t rows = (size_t)c->B * c->T;
    if (c->logits_ld != c->cfg.vocab) return unpadded_logits(w, rows);
    return andrea_tio_view(c->be, c->a.logits, rows * c->cfg.vocab, &w->host_logits,
                           &w->host_logits_n);
}
const float *andrea_context_hidden(const andrea_context *c) {
    andrea_context *w = (andrea_context *)c;
    if (!c->act_mem || c->tail_rows) return NULL;
    return andrea_tio_view(c->be, c->a.lnf, (size_t)c->B * c->T * c->cfg.d_model, &w->host_hidden,
                           &w->host_hidden_n);
}
const float *andrea_model_logits(const andrea_model *m) { return andrea_context_logits(m->ctx); }

const float *andrea_context_attention(const andrea_context *c, int layer) {
    if (!c->act_mem || c->act_flash || layer < 0 || layer >= c->cfg.n_layer) return NULL;
    andrea_context *w = (andrea_context *)c;
    size_t n = (size_t)c->B * c->cfg.n_head * c->T * c->T;
    return andrea_tio_view(c->be, c->a.att + (long)layer * n, n, &w->host_att, &w->host_att_n);
}
const float *andrea_model_attention(const andrea_model *m, int layer) {
    return andrea_context_attention(m->ctx, layer);
}

/* ---- backward ------------------------------------------------------------------------ */

/* Tells m->grad_ready that the gradients from `from` up to `to` (views into m->grads;
 * NULL: to the end) are final. */
static void grads_ready(const andrea_model *m, const float *from, const float *to) {
    if (!m->grad_ready) return;
    int64_t hi = to ? (int64_t)(to - m->grads) : m->layout.total;
    m->grad_ready(m->grad_ready_user, (int64_t)(from - m->grads), hi);
}

int andrea_context_backward(andrea_model *m, andrea_context *ctx, float scale) {
    if (!ctx->act_mem || !ctx->has_targets)
        return andrea_set_error("backward: needs a forward pass with targets first");
    if (andrea_model_ensure_grads(m))
        return -1;
    int init = m->grads_stale; /* the products overwrite their gradients */
    if (init) zero_accumulated_grads(m);
    m->grads_stale = 0;
    const andrea_config *c = &m->cfg;
    int B = ctx->B, T = ctx->T, BT = B * T;
    int C = c->d_model, L = c->n_layer, NH = c->n_head, V = c->vocab;
    andrea_acts *a = &ctx->a;
    andrea_view *p = &m->p, *g = &m->g;
    size_t BTC = (size_t)BT * C;

    float dloss = ctx->n_valid ? scale / (float)ctx->n_valid : 0.0f;
    int Vp = ctx->logits_ld;
    PROF(PROF_CROSSENTROPY,
         m->be->ops.crossentropy_backward(m->be, a->logits, ctx->targets, BT, V, Vp, dloss));
    ctx->has_targets = 0; /* the probabilities are now gradients */

    /* over the head's Vp rows: the padded columns of dlogits are 0 (crossentropy_backward),
     * so the extra rows add exactly 0 to dln and their gradients are zeros, written or added
     * after the head's (andrea_head_pad) */
    PROF(PROF_ZERO, m->be->ops.zero(m->be, a->dln, sizeof(float) * BTC));
    PROF(PROF_MATMUL, m->be->ops.matmul_backward(m->be, a->dln, g->lm_head, NULL, a->logits, a->lnf,
                                                 p->lm_head, BT, C, Vp, init));
    PROF(PROF_ZERO, m->be->ops.zero(m->be, a->dres, sizeof(float) * BTC));
    const float *last = L > 0 ? a->res3 + (long)(L - 1) * BTC : a->encoded;
    PROF(PROF_NORM, norm_backward(m, a->dres, g->lnfw, g->lnfb, a->dln, last, p->lnfw, a->lnf_mean,
                                  a->lnf_rstd, BT));
    grads_ready(m, g->lnfw, NULL);

    for (int l = L - 1; l >= 0; l--) {
        andrea_layer_view *w = &p->h[l], *dw = &g->h[l];
        long lc = (long)l * BTC;
        const float *resid = l == 0 ? a->encoded : a->res3 + (long)(l - 1) * BTC;
        float *ln1 = a->ln1 + lc, *qkv = a->qkv + 3 * lc, *atty = a->atty + lc;
        float *res2 = a->res2 + lc, *ln2 = a->ln2 + lc;
        float *fch = a->fch + 4 * lc, *fch_act = a->fch_act + 4 * lc;
        float *att = a->att + (long)l * B * NH * T * (ctx->flash ? 1 : T);

        /* res3 = res2 + MLP(Norm(res2)): dres is d res3 and flows straight to res2 too */
        /* dfch = act'(fch) * (dres @ wproj), the activation's backward fused in */
        PROF(PROF_MATMUL, m->be->ops.matmul_backward_act(m->be, a->dfch, dw->wproj, dw->bproj, a->dres, fch_act,
                                              w->wproj, fch, BT, 4 * C, C, c->act, init));
        PROF(PROF_ZERO, m->be->ops.zero(m->be, a->dln, sizeof(float) * BTC));
        PROF(PROF_MATMUL,
             m->be->ops.matmul_backward(m->be, a->dln, dw->wfc, dw->bfc, a->dfch, ln2, w->wfc, BT, C, 4 * C, init));
        PROF(PROF_NORM, norm_backward(m, a->dres, dw->ln2w, dw->ln2b, a->dln, res2, w->ln2w,
                                      a->ln2_mean + (long)l * BT, a->ln2_rstd + (long)l * BT, BT));

        /* res2 = resid + Attn(Norm(resid)): dres is now d res2 */
        PROF(PROF_ZERO, m->be->ops.zero(m->be, a->datty, sizeof(float) * BTC));
        PROF(PROF_MATMUL,
             m->be->ops.matmul_backward(m->be, a->datty, dw->wo, dw->bo, a->dres, atty, w->wo, BT, C, C, init));
        PROF(PROF_ZERO, m->be->ops.zero(m->be, a->dqkv, sizeof(float) * 3 * BTC));
        if (ctx->flash)
            PROF(PROF_ATTENTION,
                 m->be->ops.attention_flash_backward(m->be, a->dqkv, a->datty, qkv, atty, att, B, T, C, NH));
        else
            PROF(PROF_ATTENTION, m->be->ops.attention_backward(m->be, a->dqkv, a->datty, qkv, att, B, T, C, NH));
        PROF(PROF_ZERO, m->be->ops.zero(m->be, a->dln, sizeof(float) * BTC));
        PROF(PROF_MATMUL,
             m->be->ops.matmul_backward(m->be, a->dln, dw->wqkv, dw->bqkv, a->dqkv, ln1, w->wqkv, BT, C, 3 * C, init));
        PROF(PROF_NORM, norm_backward(m, a->dres, dw->ln1w, dw->ln1b, a->dln, resid, w->ln1w,
                                      a->ln1_mean + (long)l * BT, a->ln1_rstd + (long)l * BT, BT));
        grads_ready(m, dw->ln1w, l + 1 < L ? g->h[l + 1].ln1w : g->lnfw);
    }

    m->be->ops.embedding_backward(m->be, g->wte, g->wpe, a->dres, ctx->inputs, B, T, C);
    grads_ready(m, m->grads, L > 0 ? g->h[0].ln1w : g->lnfw);
    return 0;
}

int andrea_model_backward_scaled(andrea_model *m, float scale) {
    return andrea_context_backward(m, m->ctx, scale);
}

int andrea_model_backward(andrea_model *m) { return andrea_model_backward_scaled(m, 1.0f); }
