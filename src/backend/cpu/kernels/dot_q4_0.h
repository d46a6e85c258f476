/* dot_q4_0.h - the x86 q4_0 row dots of dot_q4_0_x86.c, for dot.c's dispatch, and the
 * number of inputs each ISA's dots take from one pass over a weight row. Each q4_0 dot is
 * s[j] = sum_k (q_k - 8) d[k / 32] x[j K + k] over a row of K (K % 32 == 0) weights in
 * ggml's q4_0 nibble layout (w: the row's bytes), summed in exactly the order of dot.c's
 * f32 dot at the same ISA, for j < 1 (the plain name) or j < the ISA's width (_many). */
#ifndef ANDREA_KERNELS_DOT_Q4_0_H
#define ANDREA_KERNELS_DOT_Q4_0_H

#include <stdint.h>

/* Inputs per row read: 4 accumulators an input, plus the decoded weights (q4_0: 4
 * vectors of a block or two) and their scales, in the vector registers: AVX2's 16 ymm
 * hold 2 inputs' 8, AVX-512's 32 zmm 4 inputs' 16 (NEON, 32 q registers: also 4). */
#define ANDREA_DOT_WIDTH_AVX2 2
#define ANDREA_DOT_WIDTH_AVX512 4
#define ANDREA_DOT_WIDTH_MAX 4

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
void andrea_dot_q4_0_avx512(const void *w, const float *d, const float *x, int K, float *s);
void andrea_dot_q4_0_avx512_many(const void *w, const float *d, const float *x, int K, float *s);
void andrea_dot_q4_0_avx2(const void *w, const float *d, const float *x, int K, float *s);
void andrea_dot_q4_0_avx2_many(const void *w, const float *d, const float *x, int K, float *s);
#endif

#endif
