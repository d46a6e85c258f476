/* dot_q4_0.h - the x86 q4_0 row dots of dot_q4_0_x86.c, for dot.c's dispatch. Each is
 * s[j] = sum_k (q_k - 8) d[k / 32] x[j K + k] for the NI inputs j < NI (the name's
 * suffix) over a row of K (K % 32 == 0) weights in ggml's q4_0 nibble layout (w: the
 * row's bytes), each input summed in exactly the order of dot.c's f32 dot at the same ISA.
 * As dot.c's: 1, 2 or 4 inputs on AVX-512 (32 zmm), 1 or 2 on AVX2 (16 ymm). */
#ifndef ANDREA_KERNELS_DOT_Q4_0_H
#define ANDREA_KERNELS_DOT_Q4_0_H

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
void andrea_dot_q4_0_avx512_1(const void *w, const float *d, const float *x, int K, float *s);
void andrea_dot_q4_0_avx512_2(const void *w, const float *d, const float *x, int K, float *s);
void andrea_dot_q4_0_avx512_4(const void *w, const float *d, const float *x, int K, float *s);
void andrea_dot_q4_0_avx2_1(const void *w, const float *d, const float *x, int K, float *s);
void andrea_dot_q4_0_avx2_2(const void *w, const float *d, const float *x, int K, float *s);
#endif

#endif
