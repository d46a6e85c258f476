/*
 * maps.c - the attention maps of one forward pass, in four views, taken from
 * the engine itself: a normal andrea_model_forward, then per layer the same
 * andrea_attention_forward kernel re-run on the q, k, v that forward stored, with its
 * preatt output switched on. Contract and provenance of each view: andrea_inspect.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tensor_io.h"
#include "andrea_inspect.h"
#include "backend/cpu/kernels/kernels.h"
#include "inspect/explain_int.h"
#include "model/model.h"
#include "util/error.h"

static const char *const VIEW_NAMES[ANDREA_VIEW_COUNT] = {"raw", "scaled", "masked", "softmax"};

const char *andrea_attn_view_name(int view) {
    return view >= 0 && view < ANDREA_VIEW_COUNT ? VIEW_NAMES[view] : "?";
}

int andrea_attn_views_parse(const char *list, unsigned *views) {
    unsigned bits = 0;
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int found = -1;
        for (int v = 0; v < ANDREA_VIEW_COUNT; v++)
            if (strlen(VIEW_NAMES[v]) == len && strncmp(p, VIEW_NAMES[v], len) == 0) found = v;
        if (found < 0)
            return andrea_set_error("unknown attention view '%.*s' (expected a comma-separated "
                                    "list of raw, scaled, masked, softmax)", (int)len, p);
        bits |= ANDREA_VIEW_BIT(found);
        if (!end) break;
        p = end + 1;
    }
    *views = bits;
    return 0;
}

void andrea_attn_maps_free(andrea_attn_maps *maps) {
    for (int v = 0; v < ANDREA_VIEW_COUNT; v++) free(maps->maps[v]);
    free(maps->qkv);
    free(maps->atty);
    free(maps->proj);
    memset(maps, 0, sizeof *maps);
}

const float *andrea_attn_map(const andrea_attn_maps *maps, int view, int layer, int head) {
    if (view < 0 || view >= ANDREA_VIEW_COUNT || !maps->maps[view] || layer < 0 ||
        layer >= maps->n_layer || head < 0 || head >= maps->n_head)
        return NULL;
    size_t TT = (size_t)maps->T * maps->T;
    return maps->maps[view] + ((size_t)layer * maps->n_head + head) * TT;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

int andrea_attn_score_agrees(const andrea_attn_maps *maps, const float *q, const float *k,
                             int HS, float raw, float scaled) {
    if (maps->scores_exact) return same_bits(raw * maps->scale, scaled);
    double mag = 0.0;
    for (int d = 0; d < HS; d++) mag += fabs((double)q[d] * k[d]);
    double tol = (HS + 2) * (1.0 / 8388608.0) * mag * maps->scale + 1e-30;
    return fabs((double)raw * maps->scale - scaled) <= tol;
}

/* The maps of one forward pass in ctx (explicit attention: the T x T matrices kept). */
static int inspect_in(const andrea_model *m, andrea_context *ctx, const int32_t *tokens, int T,
                      unsigned views, andrea_attn_maps *out) {
    const andrea_config *c = &m->cfg;
    int L = c->n_layer, NH = c->n_head, C = c->d_model, HS = C / NH;
    if (views & ~ANDREA_VIEWS_ALL) return andrea_set_error("inspect: unknown view bits 0x%x", views);
    if (T < 1 || T > c->ctx)
        return andrea_set_error("inspect: %d tokens do not fit the model's context of %d", T,
                                c->ctx);
    float f = andrea_context_forward(m, ctx, tokens, NULL, 1, T);
    if (f != f) return -1; /* NaN: andrea_error() says why */

    size_t TT = (size_t)T * T, per_layer = (size_t)NH * TT;
    out->n_layer = L;
    out->n_head = NH;
    out->d_model = C;
    out->head_size = HS;
    out->T = T;
    out->scale = 1.0f / sqrtf((float)HS); /* the kernel's expression, evaluated the same way */
    out->scores_exact = andrea_backend_update_isa(m->be) >= 0; /* the CPU's kernels */
    out->views = views;
    for (int v = 0; v < ANDREA_VIEW_COUNT; v++)
        if (views & ANDREA_VIEW_BIT(v)) {
            out->maps[v] = malloc(sizeof(float) * per_layer * (size_t)L);
            if (!out->maps[v]) goto oom;
        }
    out->qkv = malloc(sizeof(float) * (size_t)L * T * 3 * C);
    out->atty = malloc(sizeof(float) * (size_t)L * T * C);
    out->proj = malloc(sizeof(float) * (size_t)L * T * C);
    float *att = malloc(sizeof(float) * per_layer);
    float *preatt = malloc(sizeof(float) * per_layer);
    float *atty = malloc(sizeof(float) * (size_t)T * C);
    float *raw = malloc(sizeof(float) * per_layer);
    /* the recomputation runs on the model's backend, in its memory: d_* */
    const andrea_backend *be = m->be;
    size_t d_floats = 2 * per_layer + 2 * (size_t)T * C;
    float *d_att = be->ops.alloc(be, sizeof(float) * d_floats);
    if (!out->qkv || !out->atty || !out->proj || !att || !preatt || !atty || !raw || !d_att) {
        if (d_att) be->ops.free(be, d_att);
        free(att);
        free(preatt);
        free(atty);
        free(raw);
        goto oom;
    }

    float *d_pre = d_att + per_layer, *d_atty = d_pre + per_layer, *d_proj = d_atty + (size_t)T * C;
    long C3 = 3L * C;
    for (int l = 0; l < L; l++) {
        /* B = 1, so layer l's buffers start at l * T * (3C | C) and l * NH * T * T */
        const float *dev_qkv = ctx->a.qkv + (size_t)l * T * C3;
        const float *dev_atty = ctx->a.atty + (size_t)l * T * C;
        const float *qkv = out->qkv + (size_t)l * T * C3, *f_atty = out->atty + (size_t)l * T * C;
        const float *f_att = andrea_context_attention(ctx, l);
        if (!f_att) {
            be->ops.free(be, d_att);
            andrea_attn_maps_free(out);
            free(att);
            free(preatt);
            free(atty);
            free(raw);
            return andrea_set_error("inspect: the forward pass kept no attention matrix for "
                                    "layer %d, so there is nothing to compare with", l);
        }
        andrea_tio_read(be, out->qkv + (size_t)l * T * C3, dev_qkv, (size_t)T * C3);
        andrea_tio_read(be, out->atty + (size_t)l * T * C, dev_atty, (size_t)T * C);

        be->ops.attention_forward(be, d_atty, d_att, d_pre, dev_qkv, 1, T, C, NH);
        andrea_tio_read(be, att, d_att, per_layer);
        andrea_tio_read(be, preatt, d_pre, per_layer);
        andrea_tio_read(be, atty, d_atty, (size_t)T * C);
        for (size_t k = 0; k < per_layer; k++)
            if (!same_bits(att[k], f_att[k])) out->prob_mismatches++;
        for (size_t k = 0; k < (size_t)T * C; k++)
            if (!same_bits(atty[k], f_atty[k])) out->out_mismatches++;

        /* raw q.k through the kernel's own attn_dot; that the scaled values equal the
         * engine's is verified entry by entry just below (raw_mismatches). */
        for (int h = 0; h < NH; h++) {
            for (int i = 0; i < T; i++) {
                const float *q = qkv + i * C3 + h * HS;
                float *r = raw + ((size_t)h * T + i) * T;
                const float *pre = preatt + ((size_t)h * T + i) * T;
                for (int j = 0; j < T; j++) {
                    const float *k = qkv + j * C3 + C + h * HS;
                    float s = attn_dot(q, k, HS);
                    r[j] = s;
                    if (j <= i && !andrea_attn_score_agrees(out, q, k, HS, s, pre[j]))
                        out->raw_mismatches++;
                }
            }
        }

        size_t off = (size_t)l * per_layer;
        if (out->maps[ANDREA_VIEW_RAW]) memcpy(out->maps[ANDREA_VIEW_RAW] + off, raw,
                                               sizeof(float) * per_layer);
        if (out->maps[ANDREA_VIEW_MASKED]) memcpy(out->maps[ANDREA_VIEW_MASKED] + off, preatt,
                                                  sizeof(float) * per_layer);
        if (out->maps[ANDREA_VIEW_SOFTMAX]) memcpy(out->maps[ANDREA_VIEW_SOFTMAX] + off, f_att,
                                                   sizeof(float) * per_layer);
        if (out->maps[ANDREA_VIEW_SCALED]) {
            float *sc = out->maps[ANDREA_VIEW_SCALED] + off;
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < T; i++) {
                    size_t row = ((size_t)h * T + i) * T;
                    for (int j = 0; j < T; j++)
                        sc[row + j] = j <= i ? preatt[row + j] : raw[row + j] * out->scale;
                }
        }
        /* the output projection, with the kernel and weights the forward used */
        const andrea_layer_view *w = &m->p.h[l];
        be->ops.matmul_forward(be, d_proj, dev_atty, w->wo, w->bo, T, C, C);
        andrea_tio_read(be, out->proj + (size_t)l * T * C, d_proj, (size_t)T * C);
    }
    be->ops.free(be, d_att);
    free(att);
    free(preatt);
    free(atty);
    free(raw);
    return 0;
oom:
    andrea_attn_maps_free(out);
    return andrea_set_error("inspect: out of memory for the attention maps of %d layers x %d "
                            "heads x %d^2 tokens (%.1f MB per view); use a shorter prompt",
                            L, NH, T, 4.0 * L * per_layer / 1e6);
}

void andrea_attention_stats(const float *A, int T, andrea_attn_stats *out) {
    memset(out, 0, sizeof *out);
    int first = T > 1 ? 1 : 0;
    int rows = T - first;
    for (int i = first; i < T; i++) {
        const float *a = A + (size_t)i * T;
        double ent = 0, dist = 0;
        for (int j = 0; j <= i; j++) {
            double p = a[j];
            if (p > 0) ent -= p * log(p);
            dist += p * (i - j);
        }
        out->entropy += ent;
        out->entropy_uniform += log((double)i + 1.0);
        out->mean_distance += dist;
        out->first_weight += a[0];
        out->prev_weight += i > 0 ? a[i - 1] : 0;
        out->self_weight += a[i];
    }
    if (rows > 0) {
        out->entropy /= rows;
        out->entropy_uniform /= rows;
        out->mean_distance /= rows;
        out->first_weight /= rows;
        out->prev_weight /= rows;
        out->self_weight /= rows;
    }
}

static const char *const HEAD_KINDS[ANDREA_HEAD_KIND_COUNT] = {
    "mixed", "previous-token", "first-token", "self", "broad"};

const char *andrea_head_kind_name(int kind) {
    return kind >= 0 && kind < ANDREA_HEAD_KIND_COUNT ? HEAD_KINDS[kind] : "?";
}

int andrea_attention_head_kind(const andrea_attn_stats *st, int T) {
    if (T < 2) return ANDREA_HEAD_MIXED;
    /* ties go to the earlier kind: in row 1 the previous token is the first token */
    int kind = ANDREA_HEAD_PREVIOUS;
    double best = st->prev_weight;
    if (st->first_weight > best) kind = ANDREA_HEAD_FIRST, best = st->first_weight;
    if (st->self_weight > best) kind = ANDREA_HEAD_SELF, best = st->self_weight;
    if (best >= 0.5) return kind;
    return st->entropy >= 0.75 * st->entropy_uniform ? ANDREA_HEAD_BROAD : ANDREA_HEAD_MIXED;
}

void andrea_attention_check(const float *A, int T, andrea_attn_check *out) {
    memset(out, 0, sizeof *out);
    out->tolerance = (T + 2) * ldexp(1.0, -23);
    for (int i = 0; i < T; i++) {
        const float *a = A + (size_t)i * T;
        double sum = 0;
        for (int j = 0; j < T; j++) {
            if (!(a[j] >= 0.0f)) out->negative++;
            if (j > i && !same_bits(a[j], 0.0f)) out->upper_nonzero++;
            sum += a[j];
        }
        double e = fabs(sum - 1.0);
        if (!(e <= out->max_row_error)) out->max_row_error = isnan(e) ? INFINITY : e;
    }
    out->ok = out->max_row_error <= out->tolerance && out->upper_nonzero == 0 &&
              out->negative == 0;
}

/* A context of its own: the model is only read, so any number of inspections (a server's
 * requests) share one loaded model. */
int andrea_attention_inspect(const andrea_model *m, const int32_t *tokens, int T, unsigned views,
                             andrea_attn_maps *out) {
    memset(out, 0, sizeof *out);
    andrea_context *ctx = andrea_context_create(m);
    if (!ctx) return -1;
    andrea_context_set_flash_attention(ctx, 0);
    int rc = inspect_in(m, ctx, tokens, T, views, out);
    andrea_context_free(ctx);
    return rc;
}
