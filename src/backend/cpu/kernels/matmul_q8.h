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

/* The panel n0..n0+P-1 of weights w into pw (per block: 8 steps of 4 k, each step the P
 * rows' 4 bytes side by side) and pd (per block: the P rows' scales), ROW_BLOCK(w, fmt, K,
 * n, b) giving row n's block b as 32 bytes in the kernel's encoding. Eight rows' blocks at
 * a time as an 8 x 8 transpose of their 4-byte steps (transpose.h's transpose8, in the
 * kernel's target): a row's block scattered step by step was a third of a 128-token
 * prompt's products (gpt2-124m q8_0 prefill 2410 -> 2740 tok/s, Xeon, AVX-512). */
#define Q8_PACK_PANEL(pw, pd, w, fmt, scale, K, n0, P, ROW_BLOCK)                            \
    do {                                                                                     \
        int kb_ = (K) / Q8_BLOCK;                                                            \
        for (int b_ = 0; b_ < kb_; b_++) {                                                   \
            uint32_t *dst_ = (uint32_t *)(pw) + (size_t)b_ * 8 * (P);                        \
            for (int c_ = 0; c_ < (P); c_ += 8) {                                            \
                uint32_t rows_[8][8];                                                        \
                for (int i_ = 0; i_ < 8; i_++)                                               \
                    _mm256_storeu_si256((__m256i *)rows_[i_],                                \
                                        ROW_BLOCK(w, fmt, K, (n0) + c_ + i_, b_));           \
                transpose8((float *)(dst_ + c_), (P), (const float *)rows_[0], 8);           \
            }                                                                                \
            for (int c_ = 0; c_ < (P); c_++)                                                 \
                (pd)[(size_t)b_ * (P) + c_] = (scale)[(size_t)((n0) + c_) * kb_ + b_];       \
        }                                                                                    \
    } while (0)

/* the inputs (M, K) as q8_0 blocks: q (M, K), d and sums (M, K / 32), sums = offset x
 * sum(q) per block; x86 with AVX2 only (both kernels need it) */
void andrea_q8_quantize_avx2(int8_t *q, float *d, int32_t *sums, int offset, const float *x,
                             int M, int K);

/* NULL where the compiler cannot build the kernel; whether the CPU runs it is the
 * caller's check */
const andrea_q8_kernel *andrea_q8_kernel_vnni(void);
const andrea_q8_kernel *andrea_q8_kernel_avx2(void);

#endif
