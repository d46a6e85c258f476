/* matmul_q8.h - what matmul_q8.c's driver needs of each ISA's int8 prompt kernel
 * (matmul_q8_vnni.c, matmul_q8_avx2.c): a panel of output rows packed in the kernel's
 * order, then every input row's products over that panel. Internal to the kernels. */
#ifndef ANDREA_MATMUL_Q8_H
#define ANDREA_MATMUL_Q8_H

#include <stddef.h>
#include <stdint.h>

#define Q8_BLOCK 32 /* entries per block: ggml's q8_0 and q4_0 */

typedef struct {
    int panel; /* output rows per packed panel: N must be a multiple */
    /* the integer sums of input row m's block b start at offset[fmt] x sum(q), which
     * takes off what the packing added to each weight (w + 128, or q4_0's 8) */
    int offset_q8_0, offset_q4_0;
    /* weights n0..n0 + panel - 1 into pw (KB x panel x 32 bytes) and their scales into
     * pd (KB x panel floats) */
    void (*pack)(uint8_t *pw, float *pd, const void *w, int fmt, const float *scale, int K,
                 int n0);
    /* out(M, N)'s columns n0.. of the panel: as = the offsets, per (m, b) */
    void (*rows)(float *out, const int8_t *aq, const float *ad, const int32_t *as,
                 const uint8_t *pw, const float *pd, const float *bias, const float *resid,
                 int fmt, int M, int K, int N, int n0);
} andrea_q8_kernel;

/* the inputs (M, K) as q8_0 blocks: q (M, K), d and sums (M, K / 32), sums = offset x
 * sum(q) per block; x86 with AVX2 only (both kernels need it) */
void andrea_q8_quantize_avx2(int8_t *q, float *d, int32_t *sums, int offset, const float *x,
                             int M, int K);

/* NULL where the compiler cannot build the kernel; whether the CPU runs it is the
 * caller's check */
const andrea_q8_kernel *andrea_q8_kernel_vnni(void);
const andrea_q8_kernel *andrea_q8_kernel_avx2(void);

#endif
