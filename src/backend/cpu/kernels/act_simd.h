/*
 * act_simd.h - GELU and its derivative 8 (AVX2) and 16 (AVX-512) lanes at a time, for
 * the matmul epilogue. The scalar act_math.h versions vectorise at the baseline, but in
 * an AVX2 or AVX-512 target function GCC 12 turns their clamps into branches and leaves
 * them scalar, which cost ~2.5% of an AVX2 training step. Same method as fastmath.h's
 * andrea_expf (Cephes: clamp to [-87, 88], 2^n times a degree-6 polynomial of the
 * remainder, NaN passed through), so the results agree with act_gelu to float rounding.
 */
#ifndef ANDREA_KERNELS_ACT_SIMD_H
#define ANDREA_KERNELS_ACT_SIMD_H

#include "backend/cpu/kernels/act_math.h"
#include "backend/cpu/kernels/isa_copies.h"

/* The baseline's rows (ANDREA_ISA_PICK's generic copies): post[j] = gelu(c[j]); c[j] *=
 * gelu'(pre[j]). */
static inline void gelu_row_generic(float *post, const float *c, int n) {
    for (int j = 0; j < n; j++) post[j] = act_gelu(c[j]);
}
static inline void gelu_grad_row_generic(float *c, const float *pre, int n) {
    for (int j = 0; j < n; j++) c[j] *= act_gelu_grad(pre[j]);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* One ISA's vector exp, gelu and gelu' (exp_avx2, gelu_row_avx512, ...). BITS: the vector
 * width, P: intrinsic prefix (_mm256 / _mm512), V: float vector, VI: int vector, FLOOR:
 * round toward -inf, NANSEL(r, in): in where in is NaN. */
#define ANDREA_DEFINE_GELU_SIMD(SFX, BITS, ATTR, P, V, VI, FLOOR, NANSEL)                    \
    ATTR static inline V exp_##SFX(V in) {                                                   \
        V x = P##_min_ps(P##_max_ps(in, P##_set1_ps(-87.0f)), P##_set1_ps(88.0f));           \
        V fn = FLOOR(P##_fmadd_ps(x, P##_set1_ps(1.44269504088896341f), P##_set1_ps(0.5f))); \
        V r = P##_fnmadd_ps(fn, P##_set1_ps(0.693359375f), x);                               \
        r = P##_fmadd_ps(fn, P##_set1_ps(2.12194440e-4f), r);                                \
        V y = P##_set1_ps(1.9875691500e-4f);                                                 \
        y = P##_fmadd_ps(y, r, P##_set1_ps(1.3981999507e-3f));                               \
        y = P##_fmadd_ps(y, r, P##_set1_ps(8.3334519073e-3f));                               \
        y = P##_fmadd_ps(y, r, P##_set1_ps(4.1665795894e-2f));                               \
        y = P##_fmadd_ps(y, r, P##_set1_ps(1.6666665459e-1f));                               \
        y = P##_fmadd_ps(y, r, P##_set1_ps(5.0000001201e-1f));                               \
        y = P##_add_ps(P##_fmadd_ps(y, P##_mul_ps(r, r), r), P##_set1_ps(1.0f));             \
        VI n = P##_add_epi32(P##_cvttps_epi32(fn), P##_set1_epi32(127));                     \
        V res = P##_mul_ps(y, P##_castsi##BITS##_ps(P##_slli_epi32(n, 23)));                 \
        return NANSEL(res, in);                                                              \
    }                                                                                        \
    /* u = sqrt(2/pi) (x + 0.044715 x^3); e = e^(2u) */                                      \
    ATTR static inline V gelu_e_##SFX(V x) {                                                 \
        V x3 = P##_mul_ps(P##_mul_ps(x, x), x);                                              \
        V u = P##_mul_ps(P##_set1_ps(ANDREA_GELU_SCALE),                                     \
                         P##_fmadd_ps(x3, P##_set1_ps(0.044715f), x));                       \
        return exp_##SFX(P##_add_ps(u, u));                                                  \
    }                                                                                        \
    ATTR static inline V gelu_##SFX(V x) { /* 0.5 x (1 + tanh u), tanh u = 1 - 2/(1+e) */    \
        V inv = P##_div_ps(P##_set1_ps(1.0f), P##_add_ps(P##_set1_ps(1.0f), gelu_e_##SFX(x))); \
        V one_th = P##_fnmadd_ps(P##_set1_ps(2.0f), inv, P##_set1_ps(2.0f));                 \
        return P##_mul_ps(P##_mul_ps(P##_set1_ps(0.5f), x), one_th);                         \
    }                                                                                        \
    ATTR static inline V gelu_grad_##SFX(V x) { /* act_gelu_grad, sech^2 = 4 e/(1+e)^2 */    \
        V e = gelu_e_##SFX(x);                                                               \
        V inv = P##_div_ps(P##_set1_ps(1.0f), P##_add_ps(P##_set1_ps(1.0f), e));             \
        V one_th = P##_fnmadd_ps(P##_set1_ps(2.0f), inv, P##_set1_ps(2.0f));                 \
        V sech2 = P##_mul_ps(P##_mul_ps(P##_set1_ps(4.0f), P##_mul_ps(e, inv)), inv);        \
        V poly = P##_fmadd_ps(P##_set1_ps(3.0f * 0.044715f), P##_mul_ps(x, x),               \
                              P##_set1_ps(1.0f));                                            \
        V tail = P##_mul_ps(P##_mul_ps(P##_mul_ps(P##_set1_ps(0.5f * ANDREA_GELU_SCALE), x), \
                                       sech2), poly);                                        \
        return P##_fmadd_ps(P##_set1_ps(0.5f), one_th, tail);                                \
    }                                                                                        \
    /* post[j] = gelu(c[j]) and c[j] *= gelu'(pre[j]) for j < n, the tail scalar */          \
    ATTR static inline void gelu_row_##SFX(float *post, const float *c, int n) {             \
        const int w = (int)(sizeof(V) / sizeof(float));                                      \
        int j = 0;                                                                           \
        for (; j + w <= n; j += w) P##_storeu_ps(post + j, gelu_##SFX(P##_loadu_ps(c + j))); \
        for (; j < n; j++) post[j] = act_gelu(c[j]);                                         \
    }                                                                                        \
    ATTR static inline void gelu_grad_row_##SFX(float *c, const float *pre, int n) {         \
        const int w = (int)(sizeof(V) / sizeof(float));                                      \
        int j = 0;                                                                           \
        for (; j + w <= n; j += w)                                                           \
            P##_storeu_ps(c + j, P##_mul_ps(P##_loadu_ps(c + j),                             \
                                            gelu_grad_##SFX(P##_loadu_ps(pre + j))));        \
        for (; j < n; j++) c[j] *= act_gelu_grad(pre[j]);                                    \
    }

/* the sum of an AVX2 vector's 8 lanes, in a fixed order (the attention softmax's row sums,
 * decoding's dots) */
ANDREA_TARGET_AVX2 static inline float andrea_hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

#define ANDREA_FLOOR_AVX2(v) _mm256_floor_ps(v)
#define ANDREA_NANSEL_AVX2(r, in) _mm256_blendv_ps(r, in, _mm256_cmp_ps(in, in, _CMP_UNORD_Q))
#define ANDREA_FLOOR_AVX512(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define ANDREA_NANSEL_AVX512(r, in) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(in, in, _CMP_UNORD_Q), r, in)

ANDREA_DEFINE_GELU_SIMD(avx2, 256, ANDREA_TARGET_AVX2, _mm256, __m256, __m256i, ANDREA_FLOOR_AVX2,
                        ANDREA_NANSEL_AVX2)
ANDREA_DEFINE_GELU_SIMD(avx512, 512, ANDREA_TARGET_AVX512, _mm512, __m512, __m512i,
                        ANDREA_FLOOR_AVX512, ANDREA_NANSEL_AVX512)
#endif

#endif
