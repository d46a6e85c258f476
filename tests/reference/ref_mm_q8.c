/* ref_mm_q8.c - the plain twin of matmul_q8.c (kernels.h's andrea_mm_q8_forward): the
 * same quantisation of the inputs, integer block dots, the blocks' terms added in order
 * with fmaf, then the bias, then the residual. Every step is exact or one rounding in a
 * fixed order, so the kernel must give these bits. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "reference.h"

static int ref_weight(const void *w, int fmt, int K, int n, int k) {
    if (fmt == ANDREA_QUANT_Q8_0) return ((const int8_t *)w)[(size_t)n * K + k];
    const uint8_t *blk = (const uint8_t *)w + (size_t)n * (K / 2) + (size_t)(k / 32) * 16;
    int j = k % 32;
    return j < 16 ? (blk[j] & 15) - 8 : (blk[j - 16] >> 4) - 8;
}

void andrea_ref_mm_q8_forward(float *out, const float *inp, const void *w, int fmt,
                              const float *scale, const float *bias, const float *resid, int M,
                              int K, int N) {
    int KB = K / 32;
    int8_t *q = malloc((size_t)K);
    float *d = malloc(sizeof(float) * (size_t)KB);
    for (int m = 0; m < M; m++) {
        for (int b = 0; b < KB; b++) { /* ggml's quantize_row_q8_0, d in fp32 */
            float amax = 0.0f;
            for (int k = 0; k < 32; k++) amax = fmaxf(amax, fabsf(inp[(size_t)m * K + b * 32 + k]));
            d[b] = amax / 127.0f;
            float id = d[b] > 0.0f ? 1.0f / d[b] : 0.0f;
            if (!(id <= FLT_MAX)) id = 0.0f; /* a subnormal block */
            for (int k = 0; k < 32; k++) /* clamped: NaN -> 127 */
                q[b * 32 + k] = (int8_t)fmaxf(-127.0f, fminf(127.0f, roundf(inp[(size_t)m * K + b * 32 + k] * id)));
        }
        for (int n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int b = 0; b < KB; b++) {
                int32_t isum = 0;
                for (int k = 0; k < 32; k++) isum += q[b * 32 + k] * ref_weight(w, fmt, K, n, b * 32 + k);
                acc = fmaf((float)isum, d[b] * scale[(size_t)n * KB + b], acc);
            }
            if (bias) acc += bias[n];
            if (resid) acc += resid[(size_t)m * N + n];
            out[(size_t)m * N + n] = acc;
        }
    }
    free(q);
    free(d);
}
