/* adamw.c - one AdamW step with bias correction and decoupled weight decay, and the
 * gradient norm that clipping needs. */
#include <math.h>

#include "kernels/kernels.h"

void andrea_adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                  float b2, float eps, float wd, int t, float gscale) {
    /* Bias corrections in double: 1 - b2^t is tiny early on and loses digits in float. */
    float c1 = (float)(1.0 / (1.0 - pow(b1, t)));
    float c2 = (float)(1.0 / (1.0 - pow(b2, t)));
    long N = (long)n;
#pragma omp parallel for schedule(static) if (N >= (1L << 14))
    for (long i = 0; i < N; i++) {
        float gi = g[i] * gscale;
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= lr * ((mi * c1) / (sqrtf(vi * c2) + eps) + wd * p[i]);
    }
}

#define SUMSQ_PARTS 256

double andrea_grad_sum_squares(const float *g, size_t n) {
    /* 256 parts whose bounds depend on n alone, each summed in double, then added in
     * part order: the same bits for any thread count, and no allocation */
    size_t part = (n + SUMSQ_PARTS - 1) / SUMSQ_PARTS;
    double partial[SUMSQ_PARTS];
#pragma omp parallel for schedule(static) if (n >= (1u << 18))
    for (int c = 0; c < SUMSQ_PARTS; c++) {
        size_t i0 = (size_t)c * part < n ? (size_t)c * part : n;
        size_t i1 = i0 + part < n ? i0 + part : n;
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (size_t i = i0; i < i1; i++) s += (double)g[i] * g[i];
        partial[c] = s;
    }
    double total = 0.0;
    for (int c = 0; c < SUMSQ_PARTS; c++) total += partial[c];
    return total;
}
