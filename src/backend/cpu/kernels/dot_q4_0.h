/* dot_q4_0.h - the x86 q4_0 row dots of dot_q4_0_x86.c, for dot.c's dispatch. Each is
 * sum_k (q_k - 8) d[k / 32] x[k] over a row of K (K % 32 == 0) weights in ggml's q4_0
 * nibble layout, summed in exactly the order of dot.c's f32 dot at the same ISA. */
#ifndef ANDREA_KERNELS_DOT_Q4_0_H
#define ANDREA_KERNELS_DOT_Q4_0_H

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
float andrea_dot_q4_0_avx512(const uint8_t *w, const float *d, const float *x, int K);
float andrea_dot_q4_0_avx2(const uint8_t *w, const float *d, const float *x, int K);
#endif

#endif
