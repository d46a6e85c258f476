/*
 * dot.c - the row dot products of batch-1 decoding: sum_k w[k] x[k] with w in fp32,
 * bf16 or int8 (the weight formats of quant.c) and x in fp32. Decoding reads every
 * weight once per token, so these run at memory speed only if the arithmetic keeps
 * up: a single accumulator chain (what `omp simd reduction` compiles to) waits 4
 * cycles per FMA, which capped bf16 and int8 well below their bandwidth bound. The
 * AVX-512 versions keep 4 independent accumulators and widen bf16/int8 with one
 * instruction per 16 weights; others fall back to portable loops. The summation
 * order is fixed by the code, so results do not vary between runs.
 */
#include "kernels/fastmath.h"
#include "kernels/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_DOT_AVX512 1

/* 4 accumulators x 16 lanes over blocks of 64, then 16 at a time, then scalars; LOAD(k)
 * gives the 16 weights at k as floats. */
#define DOT_AVX512_BODY(LOAD, SCALAR)                                                         \
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                               \
    int k = 0;                                                                                \
    for (; k + 64 <= K; k += 64) {                                                            \
        a0 = _mm512_fmadd_ps(LOAD(k), _mm512_loadu_ps(x + k), a0);                            \
        a1 = _mm512_fmadd_ps(LOAD(k + 16), _mm512_loadu_ps(x + k + 16), a1);                  \
        a2 = _mm512_fmadd_ps(LOAD(k + 32), _mm512_loadu_ps(x + k + 32), a2);                  \
        a3 = _mm512_fmadd_ps(LOAD(k + 48), _mm512_loadu_ps(x + k + 48), a3);                  \
    }                                                                                         \
    for (; k + 16 <= K; k += 16) a0 = _mm512_fmadd_ps(LOAD(k), _mm512_loadu_ps(x + k), a0);   \
    float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))); \
    for (; k < K; k++) s += SCALAR(k) * x[k];                                                 \
    return s;

#define LOAD_F32(k) _mm512_loadu_ps(w + (k))
#define LOAD_BF16(k)                                                                          \
    _mm512_castsi512_ps(_mm512_slli_epi32(                                                    \
        _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(w + (k)))), 16))
#define LOAD_I8(k)                                                                            \
    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(w + (k)))))
#define SCALAR_F32(k) w[k]
#define SCALAR_BF16(k) andrea_bf16_to_f32(w[k])
#define SCALAR_I8(k) (float)w[k]

__attribute__((target("avx512f"))) static float dot_f32_avx512(const float *w, const float *x,
                                                              int K) {
    DOT_AVX512_BODY(LOAD_F32, SCALAR_F32)
}
__attribute__((target("avx512f"))) static float dot_bf16_avx512(const uint16_t *w,
                                                               const float *x, int K) {
    DOT_AVX512_BODY(LOAD_BF16, SCALAR_BF16)
}
__attribute__((target("avx512f"))) static float dot_i8_avx512(const int8_t *w, const float *x,
                                                             int K) {
    DOT_AVX512_BODY(LOAD_I8, SCALAR_I8)
}

static int use_avx512(void) {
    static int cached = -1; /* a benign race: every thread computes the same value */
    if (cached < 0) cached = __builtin_cpu_supports("avx512f") ? 1 : 0;
    return cached;
}
#endif

/* Portable versions: one simd reduction (AVX2 clones where the compiler makes them). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define DOT_CLONES __attribute__((target_clones("avx2,fma", "default")))
#else
#define DOT_CLONES
#endif

DOT_CLONES static float dot_f32_plain(const float *w, const float *x, int K) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int k = 0; k < K; k++) s += w[k] * x[k];
    return s;
}
DOT_CLONES static float dot_bf16_plain(const uint16_t *w, const float *x, int K) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int k = 0; k < K; k++) s += andrea_bf16_to_f32(w[k]) * x[k];
    return s;
}
DOT_CLONES static float dot_i8_plain(const int8_t *w, const float *x, int K) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int k = 0; k < K; k++) s += (float)w[k] * x[k];
    return s;
}

float andrea_dot_f32(const float *w, const float *x, int K) {
#ifdef HAVE_DOT_AVX512
    if (use_avx512()) return dot_f32_avx512(w, x, K);
#endif
    return dot_f32_plain(w, x, K);
}

float andrea_dot_bf16(const uint16_t *w, const float *x, int K) {
#ifdef HAVE_DOT_AVX512
    if (use_avx512()) return dot_bf16_avx512(w, x, K);
#endif
    return dot_bf16_plain(w, x, K);
}

float andrea_dot_i8(const int8_t *w, const float *x, int K) {
#ifdef HAVE_DOT_AVX512
    if (use_avx512()) return dot_i8_avx512(w, x, K);
#endif
    return dot_i8_plain(w, x, K);
}

void andrea_matvec_rows(float *out, const float *x, const void *w, int fmt, const float *scale,
                        const float *bias, int K, int N, int n) {
    /* threads only pay off once there is real work (a fork/join costs microseconds) */
#pragma omp parallel for schedule(static) if ((long)N * K * n >= (1L << 16))
    for (int r = 0; r < N; r++) {
        long row = (long)r * K;
        for (int i = 0; i < n; i++) { /* the row stays in L1 for the n inputs */
            const float *xi = x + (long)i * K;
            float s = fmt == ANDREA_QUANT_BF16 ? andrea_dot_bf16((const uint16_t *)w + row, xi, K)
                      : fmt == ANDREA_QUANT_INT8
                          ? andrea_dot_i8((const int8_t *)w + row, xi, K) * scale[r]
                          : andrea_dot_f32((const float *)w + row, xi, K);
            out[(long)i * N + r] = s + (bias ? bias[r] : 0.0f);
        }
    }
}
