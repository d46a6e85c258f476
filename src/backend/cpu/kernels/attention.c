/*
 * attention.c - causal scaled dot-product attention, per head:
 *     A = softmax(mask(Q K^T / sqrt(d_k))),  out = A V
 * This is the explicit-matrix path: A (T x T per head) is kept for backward
 * and is exactly what `andrea attention` shows. Scores for j > i are never
 * computed: they would be -inf, and exp(-inf) = 0, so those probabilities are
 * written as exact zeros. Every (batch, head) pair is independent and is run
 * by one thread, so results do not depend on the thread count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/kernels.h"

void andrea_attention_forward(float *out, float *att, float *preatt, const float *qkv, int B, int T,
                       int C, int NH) {
    int HS = C / NH;
    /* One float multiply per score, as in the reference engine (not a division). */
    float scale = 1.0f / sqrtf((float)HS);
    long C3 = 3L * C;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *base = qkv + (long)b * T * C3;
            for (int i = 0; i < T; i++) {
                const float *q = base + i * C3 + h * HS;
                float *a = att + (((long)b * NH + h) * T + i) * T;
                float maxv = -INFINITY;
                for (int j = 0; j <= i; j++) {
                    const float *k = base + j * C3 + C + h * HS;
                    float s = attn_dot(q, k, HS) * scale;
                    a[j] = s;
                    if (s > maxv) maxv = s;
                }
                if (preatt) {
                    float *p = preatt + (((long)b * NH + h) * T + i) * T;
                    memcpy(p, a, sizeof(float) * (size_t)(i + 1));
                    for (int j = i + 1; j < T; j++) p[j] = -INFINITY;
                }
                /* Subtracting the row max keeps exp() in range; the result is unchanged. */
                float sum = 0.0f;
                for (int j = 0; j <= i; j++) {
                    float e = expf(a[j] - maxv);
                    a[j] = e;
                    sum += e;
                }
                float inv = 1.0f / sum;
                for (int j = 0; j <= i; j++) a[j] *= inv;
                for (int j = i + 1; j < T; j++) a[j] = 0.0f;
                float *o = out + ((long)b * T + i) * C + h * HS;
                for (int d = 0; d < HS; d++) o[d] = 0.0f;
                for (int j = 0; j <= i; j++) {
                    const float *v = base + j * C3 + 2 * C + h * HS;
                    float w = a[j];
                    for (int d = 0; d < HS; d++) o[d] += w * v[d];
                }
            }
        }
    }
}

void andrea_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                        int B, int T, int C, int NH) {
    int HS = C / NH;
    float scale = 1.0f / sqrtf((float)HS);
    long C3 = 3L * C;
    /* No scratch row for dA: the second pass recomputes g . v_j (one more dot per entry
     * on this reference-speed path) instead of allocating in every call. */
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *base = qkv + (long)b * T * C3;
            float *dbase = dqkv + (long)b * T * C3;
            for (int i = 0; i < T; i++) {
                const float *a = att + (((long)b * NH + h) * T + i) * T;
                const float *g = dout + ((long)b * T + i) * C + h * HS;
                const float *q = base + i * C3 + h * HS;
                float *dq = dbase + i * C3 + h * HS;
                /* dA_ij = g . v_j and dv_j += A_ij g; dot = sum_k A_ik dA_ik */
                float dot = 0.0f;
                for (int j = 0; j <= i; j++) {
                    const float *v = base + j * C3 + 2 * C + h * HS;
                    float *dv = dbase + j * C3 + 2 * C + h * HS;
                    float s = 0.0f, aj = a[j];
#pragma omp simd reduction(+ : s)
                    for (int d = 0; d < HS; d++) {
                        s += g[d] * v[d];
                        dv[d] += aj * g[d];
                    }
                    dot += a[j] * s;
                }
                /* softmax backward: dS_ij = A_ij (dA_ij - dot), then the scale */
                for (int j = 0; j <= i; j++) {
                    const float *v = base + j * C3 + 2 * C + h * HS;
                    float s = 0.0f;
#pragma omp simd reduction(+ : s)
                    for (int d = 0; d < HS; d++) s += g[d] * v[d];
                    float ds = a[j] * (s - dot) * scale;
                    const float *k = base + j * C3 + C + h * HS;
                    float *dk = dbase + j * C3 + C + h * HS;
                    /* dq, dk and k, q are disjoint slices of qkv/dqkv: tell the compiler */
#pragma omp simd
                    for (int d = 0; d < HS; d++) {
                        dq[d] += ds * k[d];
                        dk[d] += ds * q[d];
                    }
                }
            }
        }
    }
}

void andrea_attention_decode(float *out, float *att, int ld, const float *q, const float *kc,
                             const float *vc, int pos, int C, int NH) {
    int HS = C / NH;
    float scale = 1.0f / sqrtf((float)HS);
    /* heads in parallel once the context is long enough to pay for the threads */
#pragma omp parallel for schedule(static) if ((long)(pos + 1) * C >= (1L << 15))
    for (int h = 0; h < NH; h++) {
        const float *qh = q + h * HS;
        float *a = att + (long)h * ld;
        float maxv = -INFINITY;
        for (int j = 0; j <= pos; j++) {
            const float *kj = kc + (long)j * C + h * HS;
            float s = attn_dot(qh, kj, HS) * scale;
            a[j] = s;
            if (s > maxv) maxv = s;
        }
        float sum = 0.0f;
        for (int j = 0; j <= pos; j++) {
            a[j] = expf(a[j] - maxv);
            sum += a[j];
        }
        float inv = 1.0f / sum;
        float *o = out + h * HS;
        for (int d = 0; d < HS; d++) o[d] = 0.0f;
        for (int j = 0; j <= pos; j++) {
            const float *vj = vc + (long)j * C + h * HS;
            float w = a[j] * inv;
            for (int d = 0; d < HS; d++) o[d] += w * vj[d];
        }
    }
}

void andrea_softmax_row(float *x, int n) {
    float maxv = -INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] > maxv) maxv = x[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - maxv);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < n; i++) x[i] *= inv;
}
