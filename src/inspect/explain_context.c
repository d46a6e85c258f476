/*
 * explain_context.c - the lesson's shapes at the model's own context, not the prompt's:
 * the engine's attention kernel (andrea_attention_forward, the one training and the
 * forward pass use) run once on ctx positions of random unit-variance q, k, v with the
 * model's heads. For andrea-120m that is the lesson's own numbers, computed rather than
 * quoted: 12 heads whose Q and K are (1024, 64), 1024 x 1024 = 1,048,576 scores each of
 * which 524,800 (j <= i) are used, outputs (1024, 64) that sit side by side in (1024, 768).
 * Random vectors because a forward pass of the whole model at T = 1024 would take minutes
 * on a laptop; the kernel and its shapes are the same.
 */
#include <math.h>
#include <stdlib.h>

#include "inspect/explain_int.h"
#include "backend/cpu/kernels/kernels.h"
#include "util/error.h"

#define EPS32 (1.0 / 8388608.0) /* 2^-23 */

int andrea_explain_context(andrea_explain *e, const andrea_config *c, andrea_rng *rng) {
    int T = c->ctx, C = c->d_model, NH = c->n_head, HS = C / NH;
    float *qkv = malloc(sizeof(float) * (size_t)T * 3 * C);
    float *out = malloc(sizeof(float) * (size_t)T * C);
    float *att = malloc(sizeof(float) * (size_t)NH * T * T);
    if (!qkv || !out || !att) {
        free(qkv);
        free(out);
        free(att);
        return andrea_set_error("explain: out of memory for one layer's attention at T = %d", T);
    }
    for (size_t k = 0; k < (size_t)T * 3 * C; k++) qkv[k] = andrea_rng_normal(rng);
    andrea_attention_forward(out, att, NULL, qkv, 1, T, C, NH);
    e->ctx_T = T;
    e->ctx_scores = (int64_t)T * T;
    int av_ok = 1;
    for (int h = 0; h < NH; h++) {
        const float *A = att + (size_t)h * T * T;
        int64_t nonzero = 0;
        for (int i = 0; i < T; i++) {
            double sum = 0;
            for (int j = 0; j < T; j++) {
                sum += A[(size_t)i * T + j];
                nonzero += A[(size_t)i * T + j] != 0.0f;
            }
            if (fabs(sum - 1) > e->ctx_row_error) e->ctx_row_error = fabs(sum - 1);
        }
        if (nonzero > e->ctx_nonzero) e->ctx_nonzero = nonzero;
        /* the last row of head h, in columns h*HS.. of out: A[T-1] V in double */
        const float *a = A + (size_t)(T - 1) * T;
        for (int d = 0; d < HS; d++) {
            double o = 0, mag = 0;
            for (int j = 0; j < T; j++) {
                double v = qkv[(size_t)j * 3 * C + 2 * C + h * HS + d];
                o += a[j] * v;
                mag += fabs(a[j] * v);
            }
            double err = fabs(out[(size_t)(T - 1) * C + h * HS + d] - o);
            if (err > e->ctx_av_error) e->ctx_av_error = err;
            if (!(err <= (T + 1) * EPS32 * mag + 1e-30)) av_ok = 0; /* a float sum of T terms */
        }
    }
    free(qkv);
    free(out);
    free(att);
    char s1[32], s2[32];
    /* a random row's weights exp(s - max)/z are never below e^-60 or so: none rounds to 0 */
    andrea_explain_add_check(e, ANDREA_EXPLAIN_CONTEXT,
                             e->ctx_row_error <= (T + 2) * EPS32 &&
                                 e->ctx_nonzero == (int64_t)T * (T + 1) / 2,
                             "check.ctx_rows", T, NH, andrea_lang_group(e->lang, e->ctx_scores, s1, sizeof s1),
                             andrea_lang_group(e->lang, e->ctx_nonzero, s2, sizeof s2), e->ctx_row_error);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_CONTEXT, av_ok, "check.ctx_av", NH, T, HS, T, C,
                             e->ctx_av_error);
    return 0;
}
