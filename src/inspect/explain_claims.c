/*
 * explain_claims.c - the lesson's claims that explain.c's walk-through leaves out, each
 * measured and checked: the mask value (-1e9 in the lesson's reference, -inf in the
 * engine), the number of scores per head, the gradient through the softmax without and
 * with the scale on the same scores, and every head named from its measurements.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "inspect/explain_int.h"
#include "util/error.h"

#define MASK_VALUE (-1e9) /* the lesson's "effectively -inf" */

/* Softmax of n scores in double into p; exp(-1e9 - max) underflows to exactly 0. */
static void softmax_d(const double *s, int n, double *p) {
    double mx = -INFINITY, z = 0;
    for (int j = 0; j < n; j++)
        if (s[j] > mx) mx = s[j];
    for (int j = 0; j < n; j++) z += (p[j] = exp(s[j] - mx));
    for (int j = 0; j < n; j++) p[j] /= z;
}

/* -1e9 and -inf give the same probabilities; only -inf turns a fully masked row into NaN. */
static void claim_mask_value(andrea_explain *e) {
    int T = e->T;
    const float *masked = andrea_attn_map(&e->maps, ANDREA_VIEW_MASKED, e->layer, e->head);
    double s1[ANDREA_EXPLAIN_MAX_T], s2[ANDREA_EXPLAIN_MAX_T];
    double p1[ANDREA_EXPLAIN_MAX_T], p2[ANDREA_EXPLAIN_MAX_T];
    e->mask_value = MASK_VALUE;
    for (int i = 0; i < T; i++) {
        for (int j = 0; j < T; j++) {
            s1[j] = masked[(size_t)i * T + j];
            s2[j] = j > i ? MASK_VALUE : s1[j];
        }
        softmax_d(s1, T, p1);
        softmax_d(s2, T, p2);
        for (int j = 0; j < T; j++)
            e->mask_value_differ += memcmp(&p1[j], &p2[j], sizeof p1[j]) != 0;
    }
    andrea_explain_add_check(e, ANDREA_EXPLAIN_MASK_VALUE, e->mask_value_differ == 0,
                             "check.mask_value", T * T, e->mask_value_differ);
    /* a row with every entry masked: max - max is -inf - -inf = NaN; -1e9 stays finite */
    double all_inf[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, all_big[4], q1[4], q2[4];
    for (int j = 0; j < 4; j++) all_big[j] = MASK_VALUE;
    softmax_d(all_inf, 4, q1);
    softmax_d(all_big, 4, q2);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_MASK_VALUE, isnan(q1[0]) && q2[0] == 0.25,
                             "check.mask_row", q1[0], q2[0]);
}

/* T x T scores per head: T(T+1)/2 used (j <= i), T(T-1)/2 masked. */
static void claim_count(andrea_explain *e, const andrea_config *c) {
    int T = e->T;
    const float *masked = andrea_attn_map(&e->maps, ANDREA_VIEW_MASKED, e->layer, e->head);
    e->ctx = c->ctx;
    e->scores_prompt = (int64_t)T * T;
    e->scores_ctx = (int64_t)c->ctx * c->ctx;
    for (int64_t k = 0; k < e->scores_prompt; k++) {
        if (isfinite(masked[k])) e->scores_used++;
        else if (isinf(masked[k]) && masked[k] < 0) e->scores_masked++;
    }
    andrea_explain_add_check(e, ANDREA_EXPLAIN_COUNT,
                             e->scores_used == (int64_t)T * (T + 1) / 2 &&
                                 e->scores_masked == (int64_t)T * (T - 1) / 2,
                             "check.count", T, T, (long long)e->scores_prompt,
                             (long long)e->scores_used, (long long)e->scores_masked);
}

/* ||d softmax(s)/d s||_F of one row: the Jacobian is diag(p) - p p^T. tiny counts the
 * entries below 1e-6, the ones through which almost no gradient flows. */
static double jacobian_norm(const double *p, int n, int *tiny) {
    double f = 0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            double J = (a == b ? p[a] : 0) - p[a] * p[b];
            f += J * J;
            if (tiny && fabs(J) < 1e-6) (*tiny)++;
        }
    return sqrt(f);
}

/* The analytic Jacobian against central finite differences on one row. */
static double jacobian_fd_error(const double *s, int n) {
    enum { N = 16 };
    double p[N], pp[N], pm[N], sp[N], err = 0, h = 1e-5;
    softmax_d(s, n, p);
    for (int b = 0; b < n; b++) {
        memcpy(sp, s, sizeof(double) * (size_t)n);
        sp[b] = s[b] + h;
        softmax_d(sp, n, pp);
        sp[b] = s[b] - h;
        softmax_d(sp, n, pm);
        for (int a = 0; a < n; a++) {
            double J = (a == b ? p[a] : 0) - p[a] * p[b], fd = (pp[a] - pm[a]) / (2 * h);
            if (fabs(J - fd) > err) err = fabs(J - fd);
        }
    }
    return err;
}

/* The same raw scores through the softmax without and with 1/sqrt(d_k): random rows of
 * d_k = 64 (as claim_sharpness), and the walked head's rows. */
static void claim_gradient(andrea_explain *e, andrea_rng *rng) {
    enum { DK = 64, KEYS = 16, ROWS = 500 };
    double raw[KEYS], sc[KEYS], p[KEYS], fd = 0;
    int tiny_un = 0, tiny_sc = 0;
    for (int r = 0; r < ROWS; r++) {
        float q[DK];
        for (int d = 0; d < DK; d++) q[d] = andrea_rng_normal(rng);
        for (int j = 0; j < KEYS; j++) {
            double dot = 0;
            for (int d = 0; d < DK; d++) dot += (double)q[d] * andrea_rng_normal(rng);
            raw[j] = dot;
            sc[j] = dot / sqrt((double)DK);
        }
        softmax_d(raw, KEYS, p);
        e->grad_unscaled += jacobian_norm(p, KEYS, &tiny_un) / ROWS;
        softmax_d(sc, KEYS, p);
        e->grad_scaled += jacobian_norm(p, KEYS, &tiny_sc) / ROWS;
        if (r < 20) {
            double f1 = jacobian_fd_error(raw, KEYS), f2 = jacobian_fd_error(sc, KEYS);
            fd = fmax(fd, fmax(f1, f2));
        }
    }
    e->grad_tiny_unscaled = (double)tiny_un / ((double)ROWS * KEYS * KEYS);
    e->grad_tiny_scaled = (double)tiny_sc / ((double)ROWS * KEYS * KEYS);
    e->grad_fd_error = fd;
    /* h = 1e-5: truncation ~h^2 |p'''| ~ 1e-10, cancellation ~1e-16 / h = 1e-11 */
    andrea_explain_add_check(e, ANDREA_EXPLAIN_GRADIENT, fd < 1e-8, "check.grad_fd", fd);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_GRADIENT,
                             e->grad_unscaled < e->grad_scaled &&
                                 e->grad_tiny_unscaled > e->grad_tiny_scaled,
                             "check.grad", e->grad_unscaled, e->grad_scaled,
                             100 * e->grad_tiny_unscaled, 100 * e->grad_tiny_scaled);
    /* the walked head: reported, not checked (a softmax of a few keys need not lose
     * gradient when sharpened: two equal keys at 1/2 each have the largest Jacobian) */
    const float *rw = andrea_attn_map(&e->maps, ANDREA_VIEW_RAW, e->layer, e->head);
    int T = e->T;
    for (int i = 1; i < T; i++) {
        double s1[ANDREA_EXPLAIN_MAX_T], s2[ANDREA_EXPLAIN_MAX_T], pr[ANDREA_EXPLAIN_MAX_T];
        for (int j = 0; j <= i; j++) {
            s1[j] = rw[(size_t)i * T + j];
            s2[j] = s1[j] * e->maps.scale;
        }
        softmax_d(s1, i + 1, pr);
        e->grad_model_unscaled += jacobian_norm(pr, i + 1, NULL) / (T - 1);
        softmax_d(s2, i + 1, pr);
        e->grad_model_scaled += jacobian_norm(pr, i + 1, NULL) / (T - 1);
    }
}

/* Every head named (andrea_attention_head_kind); the namer itself checked on heads whose
 * kind is known by construction. */
static int claim_head_kinds(andrea_explain *e) {
    int L = e->maps.n_layer, NH = e->NH, T = e->T;
    e->head_kind = malloc(sizeof(int) * (size_t)L * NH);
    if (!e->head_kind) return andrea_set_error("explain: out of memory");
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++) {
            andrea_attn_stats st;
            andrea_attention_stats(andrea_attn_map(&e->maps, ANDREA_VIEW_SOFTMAX, l, h), T, &st);
            e->head_kind[l * NH + h] = andrea_attention_head_kind(&st, T);
        }
    enum { N = 8 };
    static const int want[4] = {ANDREA_HEAD_PREVIOUS, ANDREA_HEAD_FIRST, ANDREA_HEAD_SELF,
                                ANDREA_HEAD_BROAD};
    int right = 0;
    for (int k = 0; k < 4; k++) {
        float A[N * N] = {0};
        for (int i = 0; i < N; i++) {
            /* 0.8 on the target, the rest spread evenly; uniform rows for broad */
            int target = k == 0 ? (i ? i - 1 : 0) : k == 1 ? 0 : i;
            for (int j = 0; j <= i; j++)
                A[i * N + j] = k == 3 ? 1.0f / (float)(i + 1)
                             : i == 0 ? 1.0f : j == target ? 0.8f : 0.2f / (float)i;
        }
        andrea_attn_stats st;
        andrea_attention_stats(A, N, &st);
        right += andrea_attention_head_kind(&st, N) == want[k];
    }
    andrea_explain_add_check(e, ANDREA_EXPLAIN_HEAD_KINDS, right == 4, "check.kinds", right);
    return 0;
}

int andrea_explain_claims(andrea_explain *e, const andrea_config *c, andrea_rng *rng) {
    claim_mask_value(e);
    claim_count(e, c);
    claim_gradient(e, rng);
    return claim_head_kinds(e);
}
