/*
 * norm.c - LayerNorm and RMSNorm over the channel dimension, forward and backward.
 * Rows are independent, so forward and the input gradient run in parallel over
 * rows; the weight gradients are column sums, computed in parallel over column
 * chunks so each sum has one fixed order whatever the thread count. The row sums
 * are simd reductions: a fixed lane-wise order chosen at compile time (a serial float
 * chain waits 4 cycles per add: rmsnorm was 5% of a baby step).
 */
#include <math.h>

#include "kernels/kernels.h"

#define COL_CHUNK 64

void andrea_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int C, float eps) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
    for (int i = 0; i < N; i++) {
        const float *x = inp + (long)i * C;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += x[c];
        float mu = s / C;
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int c = 0; c < C; c++) v += (x[c] - mu) * (x[c] - mu);
        float r = 1.0f / sqrtf(v / C + eps);
        float *o = out + (long)i * C;
        for (int c = 0; c < C; c++) o[c] = (x[c] - mu) * r * w[c] + (b ? b[c] : 0.0f);
        mean[i] = mu;
        rstd[i] = r;
    }
}

void andrea_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, int N, int C) {
    if (dinp) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
        for (int i = 0; i < N; i++) {
            const float *x = inp + (long)i * C, *d = dout + (long)i * C;
            float mu = mean[i], r = rstd[i];
            /* dx = r * (dn - mean(dn) - n * mean(dn * n)), dn = dout * w, n = (x - mu) r */
            float sum_dn = 0.0f, sum_dn_n = 0.0f;
#pragma omp simd reduction(+ : sum_dn, sum_dn_n)
            for (int c = 0; c < C; c++) {
                float dn = d[c] * w[c];
                sum_dn += dn;
                sum_dn_n += dn * (x[c] - mu) * r;
            }
            float m_dn = sum_dn / C, m_dn_n = sum_dn_n / C;
            float *dx = dinp + (long)i * C;
            for (int c = 0; c < C; c++) {
                float n = (x[c] - mu) * r;
                dx[c] += r * (d[c] * w[c] - m_dn - n * m_dn_n);
            }
        }
    }
    if (dw || db) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
        for (int c0 = 0; c0 < C; c0 += COL_CHUNK) {
            int c1 = c0 + COL_CHUNK < C ? c0 + COL_CHUNK : C;
            for (int i = 0; i < N; i++) {
                const float *x = inp + (long)i * C, *d = dout + (long)i * C;
                float mu = mean[i], r = rstd[i];
                for (int c = c0; c < c1; c++) {
                    if (dw) dw[c] += d[c] * (x[c] - mu) * r;
                    if (db) db[c] += d[c];
                }
            }
        }
    }
}

void andrea_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                     float eps) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
    for (int i = 0; i < N; i++) {
        const float *x = inp + (long)i * C;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; c++) ss += x[c] * x[c];
        float r = 1.0f / sqrtf(ss / C + eps);
        float *o = out + (long)i * C;
        for (int c = 0; c < C; c++) o[c] = x[c] * r * w[c];
        rstd[i] = r;
    }
}

void andrea_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                      const float *rstd, int N, int C) {
    if (dinp) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
        for (int i = 0; i < N; i++) {
            const float *x = inp + (long)i * C, *d = dout + (long)i * C;
            float r = rstd[i];
            /* dx = r * (dn - n * mean(dn * n)), dn = dout * w, n = x r */
            float sum_dn_n = 0.0f;
#pragma omp simd reduction(+ : sum_dn_n)
            for (int c = 0; c < C; c++) sum_dn_n += d[c] * w[c] * x[c] * r;
            float m = sum_dn_n / C;
            float *dx = dinp + (long)i * C;
            for (int c = 0; c < C; c++) dx[c] += r * (d[c] * w[c] - x[c] * r * m);
        }
    }
    if (dw) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
        for (int c0 = 0; c0 < C; c0 += COL_CHUNK) {
            int c1 = c0 + COL_CHUNK < C ? c0 + COL_CHUNK : C;
            for (int i = 0; i < N; i++) {
                const float *x = inp + (long)i * C, *d = dout + (long)i * C;
                float r = rstd[i];
                for (int c = c0; c < c1; c++) dw[c] += d[c] * x[c] * r;
            }
        }
    }
}

void andrea_norm_forward(int kind, float *out, float *mean, float *rstd, const float *inp,
                         const float *w, const float *b, int N, int C, float eps) {
    if (kind == ANDREA_NORM_LAYER)
        andrea_layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps);
    else
        andrea_rmsnorm_forward(out, rstd, inp, w, N, C, eps);
}

void andrea_norm_backward(int kind, float *dinp, float *dw, float *db, const float *dout,
                          const float *inp, const float *w, const float *mean, const float *rstd,
                          int N, int C) {
    if (kind == ANDREA_NORM_LAYER)
        andrea_layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    else
        andrea_rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C);
}
