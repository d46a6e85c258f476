/*
 * explain.c - the attention lesson's claims (shared/spec/seed-attention.md), each
 * checked on a real forward pass or on random vectors:
 *
 *   Q, K, V  ->  S = Q K^T  ->  S / sqrt(d_k)  ->  causal mask  ->  softmax rows
 *   ->  A V  ->  concatenate heads  ->  W_O
 *
 * Our re-computations use double precision; each tolerance says why it is what
 * it is. The walk-through's text is the front end's (src/cli/cmd_explain.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_inspect.h"
#include "inspect/explain_int.h"
#include "util/error.h"

#define EPS32 (1.0 / 8388608.0) /* 2^-23: one ulp of 1.0f */

void andrea_explain_add_check(andrea_explain *e, int part, int ok, const char *key, ...) {
    if (e->n_checks == ANDREA_EXPLAIN_CHECK_MAX) return; /* sized for every check made */
    andrea_explain_check *c = &e->checks[e->n_checks++];
    va_list ap;
    va_start(ap, key);
    vsnprintf(c->what, sizeof c->what, andrea_lang_text(e->lang, key), ap);
    va_end(ap);
    c->part = part;
    c->ok = ok;
    if (!ok) e->n_failed++;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Element d of head h's q (part 0), k (1) or v (2) at position i; qkv is (T, 3C). */
static double qkv_at(const andrea_explain *e, const float *qkv, int part, int i, int d) {
    return qkv[(size_t)i * 3 * e->C + (size_t)part * e->C + (size_t)e->head * e->HS + d];
}

/* ---- the steps, on the model's own numbers --------------------------------------------- */

static void check_scores(andrea_explain *e, const float *qkv, const float *raw) {
    int T = e->T, HS = e->HS, ok = 1;
    double worst = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            double dot = 0, mag = 0;
            for (int d = 0; d < HS; d++) {
                double a = qkv_at(e, qkv, 0, i, d), b = qkv_at(e, qkv, 1, j, d);
                dot += a * b;
                mag += fabs(a * b);
            }
            /* a float sum of HS products drifts by at most ~HS ulps of the magnitudes */
            double err = fabs(raw[(size_t)i * T + j] - dot);
            if (!(err <= HS * EPS32 * mag + 1e-30)) ok = 0;
            if (err > worst) worst = err;
        }
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SCORES, ok, "check.scores", worst);
}

/* head e->head's q (part 0) or k (1) at position i, within qkv (T, 3C) */
static const float *head_row(const andrea_explain *e, const float *qkv, int part, int i) {
    return qkv + (size_t)i * 3 * e->C + (size_t)part * e->C + (size_t)e->head * e->HS;
}

static void check_scale_mask(andrea_explain *e, const float *qkv, const float *raw,
                             const float *scaled, const float *masked) {
    int T = e->T, bad = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++)
            if (!andrea_attn_score_agrees(&e->maps, head_row(e, qkv, 0, i), head_row(e, qkv, 1, j),
                                          e->HS, raw[(size_t)i * T + j], scaled[(size_t)i * T + j]))
                bad++;
    /* bit for bit on the CPU's kernels; within the dot's rounding where the backend sums
     * in its own order (a GPU) */
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SCALE, bad == 0 && e->maps.raw_mismatches == 0,
          e->maps.scores_exact ? "check.scale" : "check.scale_rounding", bad, T * (T + 1) / 2,
          (long long)e->maps.raw_mismatches);
    bad = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            float x = masked[(size_t)i * T + j];
            if (j > i ? !(isinf(x) && x < 0) : !same_bits(x, scaled[(size_t)i * T + j])) bad++;
        }
    andrea_explain_add_check(e, ANDREA_EXPLAIN_MASK, bad == 0, "check.mask", bad);
}

static void check_softmax(andrea_explain *e, const float *masked, const float *A) {
    int T = e->T;
    andrea_attn_check ck;
    andrea_attention_check(A, T, &ck);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SOFTMAX, ck.max_row_error <= ck.tolerance && !ck.negative,
          "check.rows",
          ck.max_row_error, ck.tolerance);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SOFTMAX, ck.upper_nonzero == 0,
          "check.upper", T * (T - 1) / 2);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SOFTMAX, A[0] == 1.0f,
          "check.row0", (double)A[0]);
    int ok = 1, mono = 1;
    double worst = 0;
    for (int i = 0; i < T; i++) {
        const float *s = masked + (size_t)i * T;
        double mx = -INFINITY, z = 0;
        for (int j = 0; j <= i; j++) mx = s[j] > mx ? s[j] : mx;
        for (int j = 0; j <= i; j++) z += exp(s[j] - mx);
        for (int j = 0; j <= i; j++) {
            double p = exp(s[j] - mx) / z, got = A[(size_t)i * T + j];
            /* float: exp of a rounded difference (|d| ulps), a sum of i+1 terms, a multiply */
            double tol = (T + 4 + fabs(s[j] - mx)) * EPS32 * p + 1e-30;
            if (!(fabs(got - p) <= tol)) ok = 0;
            if (fabs(got - p) > worst) worst = fabs(got - p);
            for (int k = 0; k <= i; k++)
                if (s[k] > s[j] && A[(size_t)i * T + k] < got) mono = 0;
        }
    }
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SOFTMAX, ok, "check.softmax", worst);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SOFTMAX, mono, "check.monotone");
}

/* out_i = sum_j A[i][j] v_j in double against the engine's head output. */
static void check_av(andrea_explain *e, const float *qkv, const float *A) {
    int T = e->T, HS = e->HS, C = e->C, ok = 1;
    double worst = 0;
    for (int i = 0; i < T; i++)
        for (int d = 0; d < HS; d++) {
            double o = 0, mag = 0;
            for (int j = 0; j < T; j++) {
                o += A[(size_t)i * T + j] * qkv_at(e, qkv, 2, j, d);
                mag += fabs(A[(size_t)i * T + j] * qkv_at(e, qkv, 2, j, d));
            }
            e->av[(size_t)i * HS + d] = o;
            double got = e->maps.atty[((size_t)e->layer * T + i) * C + e->head * HS + d];
            double err = fabs(got - o);
            if (!(err <= (T + 1) * EPS32 * mag + 1e-30)) ok = 0;
            if (err > worst) worst = err;
        }
    andrea_explain_add_check(e, ANDREA_EXPLAIN_AV, ok, "check.av", worst);
}

/* The layer's output projection, concat W_O^T + b_O, in double against the engine's. */
static void check_wo(andrea_explain *e, andrea_model *m) {
    int T = e->T, C = e->C, l = e->layer;
    char wo_name[64], bo_name[64];
    snprintf(wo_name, sizeof wo_name, "h.%d.attn.wo", l);
    snprintf(bo_name, sizeof bo_name, "h.%d.attn.bo", l);
    /* host copies of the weights: the model's may be in a backend's own memory */
    float *wo = NULL, *bo = NULL;
    for (int t = 0; t < andrea_model_num_tensors(m); t++) {
        const andrea_tensor_info *ti = andrea_model_tensor(m, t);
        float **dst = strcmp(ti->name, wo_name) == 0 ? &wo : strcmp(ti->name, bo_name) == 0 ? &bo : NULL;
        if (dst && (*dst = malloc(sizeof(float) * (size_t)ti->size)))
            andrea_model_read_params(m, ti->offset, ti->size, *dst);
    }
    const float *cat = e->maps.atty + (size_t)l * T * C;
    const float *proj = e->maps.proj + (size_t)l * T * C;
    int ok = wo != NULL;
    double worst = 0;
    for (int i = 0; ok && i < T; i++)
        for (int o = 0; o < C; o++) {
            double s = bo ? bo[o] : 0, mag = bo ? fabs(bo[o]) : 0;
            for (int k = 0; k < C; k++) {
                s += (double)cat[(size_t)i * C + k] * wo[(size_t)o * C + k];
                mag += fabs((double)cat[(size_t)i * C + k] * wo[(size_t)o * C + k]);
            }
            e->wo[(size_t)i * C + o] = s;
            double err = fabs(proj[(size_t)i * C + o] - s);
            /* a float dot product of C terms plus the bias: ~(C + 1) ulps of the magnitudes */
            if (!(err <= (C + 1) * EPS32 * mag + 1e-30)) ok = 0;
            if (err > worst) worst = err;
        }
    free(wo);
    free(bo);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_WO, ok, "check.wo", worst);
}

/* ---- the claims on random vectors ------------------------------------------------------- */

/* std of q.k for q, k with N(0, 1) entries: the lesson says ~sqrt(d_k). */
static int claim_magnitude(andrea_explain *e, andrea_rng *rng) {
    static const int dks[3] = {64, 256, 4096};
    enum { PAIRS = 2000 };
    float *q = malloc(sizeof(float) * 4096), *k = malloc(sizeof(float) * 4096);
    if (!q || !k) {
        free(q);
        free(k);
        return andrea_set_error("explain: out of memory for the random vectors");
    }
    e->magnitude_pairs = PAIRS;
    for (int t = 0; t < 3; t++) {
        int d = dks[t];
        double s2 = 0;
        for (int p = 0; p < PAIRS; p++) {
            for (int i = 0; i < d; i++) {
                q[i] = andrea_rng_normal(rng);
                k[i] = andrea_rng_normal(rng);
            }
            double dot = 0;
            for (int i = 0; i < d; i++) dot += (double)q[i] * k[i];
            s2 += dot * dot; /* the mean is 0, so E[dot^2] is the variance */
        }
        e->magnitude_dk[t] = d;
        e->magnitude_std[t] = sqrt(s2 / PAIRS);
    }
    for (int t = 0; t < 3; t++) {
        double want = sqrt((double)dks[t]), sd = e->magnitude_std[t];
        /* the estimate's relative standard error is 1/sqrt(2 PAIRS) = 1.6%; 10% is 6 of them */
        andrea_explain_add_check(e, ANDREA_EXPLAIN_MAGNITUDE, fabs(sd / want - 1) < 0.10,
              "check.magnitude", dks[t], sd, want);
    }
    free(q);
    free(k);
    return 0;
}

/* Softmax of n scores (double), returns max probability and entropy. */
static void softmax_stats(const double *s, int n, double *pmax, double *ent) {
    double m = -INFINITY, z = 0;
    for (int i = 0; i < n; i++)
        if (s[i] > m) m = s[i];
    for (int i = 0; i < n; i++) z += exp(s[i] - m);
    *pmax = 0;
    *ent = 0;
    for (int i = 0; i < n; i++) {
        double p = exp(s[i] - m) / z;
        if (p > *pmax) *pmax = p;
        if (p > 0) *ent -= p * log(p);
    }
}

static void claim_sharpness(andrea_explain *e, andrea_rng *rng) {
    enum { DK = 64, KEYS = 16, ROWS = 1000 };
    double sc_max = 0, sc_ent = 0, un_max = 0, un_ent = 0;
    float q[DK], k[KEYS][DK];
    double raw[KEYS], scaled[KEYS];
    for (int r = 0; r < ROWS; r++) {
        for (int d = 0; d < DK; d++) q[d] = andrea_rng_normal(rng);
        for (int j = 0; j < KEYS; j++) {
            double dot = 0;
            for (int d = 0; d < DK; d++) {
                k[j][d] = andrea_rng_normal(rng);
                dot += (double)q[d] * k[j][d];
            }
            raw[j] = dot;
            scaled[j] = dot / sqrt((double)DK);
        }
        double pm, en;
        softmax_stats(raw, KEYS, &pm, &en);
        un_max += pm;
        un_ent += en;
        softmax_stats(scaled, KEYS, &pm, &en);
        sc_max += pm;
        sc_ent += en;
    }
    e->sharp_rows = ROWS;
    e->sharp_keys = KEYS;
    e->sharp_dk = DK;
    e->unscaled_max = un_max / ROWS;
    e->unscaled_entropy = un_ent / ROWS;
    e->scaled_max = sc_max / ROWS;
    e->scaled_entropy = sc_ent / ROWS;
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SHARPNESS, un_max > sc_max && un_ent < sc_ent,
          "check.sharp",
          un_max / ROWS, sc_max / ROWS, un_ent / ROWS, sc_ent / ROWS);
}

/* ---- the claims on this model ------------------------------------------------------------ */

/* Softmax of the unscaled scores against the real one, every layer and head. */
static void claim_sharp_model(andrea_explain *e) {
    int T = e->T, ok = 1;
    double ent_raw = 0, ent_sc = 0;
    double s1[ANDREA_EXPLAIN_MAX_T], s2[ANDREA_EXPLAIN_MAX_T];
    for (int l = 0; l < e->maps.n_layer; l++)
        for (int h = 0; h < e->NH; h++) {
            const float *rw = andrea_attn_map(&e->maps, ANDREA_VIEW_RAW, l, h);
            const float *sc = andrea_attn_map(&e->maps, ANDREA_VIEW_MASKED, l, h);
            for (int i = 1; i < T; i++) {
                for (int j = 0; j <= i; j++) {
                    s1[j] = rw[(size_t)i * T + j];
                    s2[j] = sc[(size_t)i * T + j];
                }
                double pm, e1, e2;
                softmax_stats(s1, i + 1, &pm, &e1);
                softmax_stats(s2, i + 1, &pm, &e2);
                /* multiplying scores by sqrt(d_k) > 1 can only lower the entropy */
                if (e1 > e2 + 1e-9) ok = 0;
                ent_raw += e1;
                ent_sc += e2;
                e->model_rows++;
            }
        }
    if (!e->model_rows) return;
    e->model_entropy_scaled = ent_sc / e->model_rows;
    e->model_entropy_unscaled = ent_raw / e->model_rows;
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SHARP_MODEL, ok,
          "check.sharp_model");
}

static void claim_distribution(andrea_explain *e) {
    int bad_rows = 0, bad_upper = 0, heads = e->maps.n_layer * e->NH;
    for (int l = 0; l < e->maps.n_layer; l++)
        for (int h = 0; h < e->NH; h++) {
            andrea_attn_check ck;
            andrea_attention_check(andrea_attn_map(&e->maps, ANDREA_VIEW_SOFTMAX, l, h), e->T, &ck);
            if (!(ck.max_row_error <= ck.tolerance) || ck.negative) bad_rows++;
            if (ck.upper_nonzero) bad_upper++;
        }
    andrea_explain_add_check(e, ANDREA_EXPLAIN_DISTRIBUTION, bad_rows == 0,
          "check.dist_rows", heads, bad_rows);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_DISTRIBUTION, bad_upper == 0,
          "check.dist_upper", heads, bad_upper);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_DISTRIBUTION, e->maps.prob_mismatches == 0 && e->maps.out_mismatches == 0,
          "check.engine", (long long)(e->maps.prob_mismatches + e->maps.out_mismatches));
}

/* Change the last token: every earlier row of every layer must keep its bits. */
static int claim_causal(andrea_explain *e, andrea_model *m, const int32_t *tokens) {
    int T = e->T;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)T);
    if (!ids) return andrea_set_error("explain: out of memory");
    memcpy(ids, tokens, sizeof(int32_t) * (size_t)T);
    int32_t last = tokens[T - 1];
    ids[T - 1] = last == 'X' ? 'Y' : 'X';
    if (ids[T - 1] >= andrea_model_config(m)->vocab) ids[T - 1] = last == 0 ? 1 : 0;
    e->changed_id = ids[T - 1];
    andrea_attn_maps mp2;
    int rc = andrea_attention_inspect(m, ids, T, ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX), &mp2);
    free(ids);
    if (rc) {
        andrea_attn_maps_free(&mp2);
        return -1;
    }
    for (int l = 0; l < e->maps.n_layer; l++)
        for (int h = 0; h < e->NH; h++) {
            const float *a1 = andrea_attn_map(&e->maps, ANDREA_VIEW_SOFTMAX, l, h);
            const float *a2 = andrea_attn_map(&mp2, ANDREA_VIEW_SOFTMAX, l, h);
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++)
                    if (!same_bits(a1[(size_t)i * T + j], a2[(size_t)i * T + j]))
                        *(i < T - 1 ? &e->changed_past : &e->changed_last) += 1;
        }
    andrea_attn_maps_free(&mp2);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_CAUSAL, e->changed_past == 0,
          "check.causal");
    return 0;
}

/* ---- the whole lesson ---------------------------------------------------------------------- */

int andrea_explain_run_opts(andrea_model *m, const int32_t *tokens, int T,
                            const andrea_explain_options *o, andrea_explain *out) {
    memset(out, 0, sizeof *out);
    const andrea_config *c = andrea_model_config(m);
    andrea_explain *e = out;
    int layer = o->layer, head = o->head;
    e->layer = layer;
    e->head = head;
    e->T = T;
    e->C = c->d_model;
    e->NH = c->n_head;
    e->HS = c->d_model / c->n_head;
    if (andrea_lang_check(o->lang)) return -1;
    e->lang = o->lang;
    if (layer < 0 || layer >= c->n_layer || head < 0 || head >= c->n_head)
        return andrea_set_error("explain: layer %d head %d is outside the model (layers 0..%d, "
                                "heads 0..%d)", layer, head, c->n_layer - 1, c->n_head - 1);
    if (T < 1 || T > ANDREA_EXPLAIN_MAX_T)
        return andrea_set_error("explain: %d tokens; the walk-through takes 1..%d", T,
                                ANDREA_EXPLAIN_MAX_T);
    if (andrea_attention_inspect(m, tokens, T, ANDREA_VIEWS_ALL, &e->maps)) return -1;
    e->av = calloc((size_t)T * e->HS, sizeof(double));
    e->wo = calloc((size_t)T * e->C, sizeof(double)); /* rows after a failed W_O check stay 0 */
    if (!e->av || !e->wo) return andrea_set_error("explain: out of memory");

    const float *qkv = e->maps.qkv + (size_t)layer * T * 3 * e->C;
    const float *raw = andrea_attn_map(&e->maps, ANDREA_VIEW_RAW, layer, head);
    const float *scaled = andrea_attn_map(&e->maps, ANDREA_VIEW_SCALED, layer, head);
    const float *masked = andrea_attn_map(&e->maps, ANDREA_VIEW_MASKED, layer, head);
    const float *A = andrea_attn_map(&e->maps, ANDREA_VIEW_SOFTMAX, layer, head);
    check_scores(e, qkv, raw);
    check_scale_mask(e, qkv, raw, scaled, masked);
    check_softmax(e, masked, A);
    check_av(e, qkv, A);
    check_wo(e, m);

    andrea_rng rng;
    andrea_rng_seed(&rng, o->seed);
    if (claim_magnitude(e, &rng)) return -1;
    claim_sharpness(e, &rng);
    claim_sharp_model(e);
    claim_distribution(e);
    if (T >= 2 && claim_causal(e, m, tokens)) return -1;
    if (andrea_explain_claims(e, c, &rng)) return -1;
    if (!o->skip_shortcut) andrea_explain_shortcut(e, &rng);
    andrea_rng_seed(&rng, o->seed + 1); /* its own stream: the claims above keep their numbers */
    return andrea_explain_context(e, c, &rng);
}

int andrea_explain_run(andrea_model *m, const int32_t *tokens, int T, int layer, int head,
                       uint64_t seed, andrea_explain *out) {
    andrea_explain_options o = {layer, head, seed, NULL, 0};
    return andrea_explain_run_opts(m, tokens, T, &o, out);
}

void andrea_explain_free(andrea_explain *e) {
    andrea_attn_maps_free(&e->maps);
    free(e->av);
    free(e->wo);
    free(e->head_kind);
    memset(e, 0, sizeof *e);
}
