/*
 * dot_q4_0_x86.c - q4_0 row dots for AVX-512 and AVX2 (ggml's blocks: 16 bytes per 32
 * weights, element j's nibble low in byte j, element 16 + j's high). dot.c's generic
 * body decodes a vector of weights per load, and for q4_0 that meant a variable shift
 * (low or high nibbles) and a reload of the block's bytes for each half: about half the
 * int8 dot's rate, compute-bound far below memory speed. Here each block's 16 bytes are
 * loaded and widened once and split with an AND and an immediate shift.
 *
 * The sums are the f32 dot's (dot.c's DOT_BODY): four accumulators fed in turn with
 * consecutive vectors of x, the remainder into the first, the same reduction; and each
 * weight is exact ((q - 8) d = q d - 8 d in one FMA: small integers times an f16 value
 * fit a float). So the result is dot.c's f32 dot of the dequantised row, to the bit.
 */
#include "backend/cpu/kernels/dot_q4_0.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "backend/cpu/kernels/act_simd.h"

/* as dot.c: the cache lines this far ahead of the weights being read */
#define Q4_PREFETCH_AHEAD 4096

/* AVX-512: one block = two vectors of 16; the f32 dot's loop of 64 takes two blocks
 * (a0 a1: block b's low and high halves, a2 a3: block b + 1's), a 32 tail goes into a0.
 * The 4 decoded vectors of each step feed every input's accumulators (NI inputs at x,
 * x + K, ...), so a batch decodes the row once. */
#define Q4_HALVES_AVX512(p, v, lo, hi)                                                        \
    __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p)));                  \
    __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(15)));               \
    __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4))
#define Q4_BODY_AVX512(NI)                                                                    \
    const uint8_t *w = wv;                                                                    \
    __m512 a[NI][4];                                                                          \
    for (int j = 0; j < (NI); j++) a[j][0] = a[j][1] = a[j][2] = a[j][3] = _mm512_setzero_ps(); \
    int k = 0;                                                                                \
    for (; k + 64 <= K; k += 64, w += 32, d += 2) {                                           \
        __builtin_prefetch(w + Q4_PREFETCH_AHEAD);                                            \
        __m512 d0 = _mm512_set1_ps(d[0]), e0 = _mm512_set1_ps(8.0f * d[0]);                   \
        __m512 d1 = _mm512_set1_ps(d[1]), e1 = _mm512_set1_ps(8.0f * d[1]);                   \
        Q4_HALVES_AVX512(w, v0, l0, h0);                                                      \
        Q4_HALVES_AVX512(w + 16, v1, l1, h1);                                                 \
        __m512 q[4] = {_mm512_fmsub_ps(l0, d0, e0), _mm512_fmsub_ps(h0, d0, e0),              \
                       _mm512_fmsub_ps(l1, d1, e1), _mm512_fmsub_ps(h1, d1, e1)};             \
        for (int u = 0; u < 4; u++)                                                           \
            for (int j = 0; j < (NI); j++)                                                    \
                a[j][u] = _mm512_fmadd_ps(q[u], _mm512_loadu_ps(x + (long)j * K + k + 16 * u), a[j][u]); \
    }                                                                                         \
    if (k < K) { /* one block left (K % 32 == 0) */                                           \
        __m512 d0 = _mm512_set1_ps(d[0]), e0 = _mm512_set1_ps(8.0f * d[0]);                   \
        Q4_HALVES_AVX512(w, v0, l0, h0);                                                      \
        __m512 q0 = _mm512_fmsub_ps(l0, d0, e0), q1 = _mm512_fmsub_ps(h0, d0, e0);            \
        for (int j = 0; j < (NI); j++) {                                                      \
            a[j][0] = _mm512_fmadd_ps(q0, _mm512_loadu_ps(x + (long)j * K + k), a[j][0]);     \
            a[j][0] = _mm512_fmadd_ps(q1, _mm512_loadu_ps(x + (long)j * K + k + 16), a[j][0]); \
        }                                                                                     \
    }                                                                                         \
    for (int j = 0; j < (NI); j++)                                                            \
        s[j] = _mm512_reduce_add_ps(                                                          \
            _mm512_add_ps(_mm512_add_ps(a[j][0], a[j][1]), _mm512_add_ps(a[j][2], a[j][3])));

#define DEFINE_Q4_AVX512(NI)                                                                  \
    __attribute__((target("avx512f,fma"))) void andrea_dot_q4_0_avx512_##NI(                  \
        const void *wv, const float *d, const float *x, int K, float *s) {                    \
        Q4_BODY_AVX512(NI)                                                                    \
    }
DEFINE_Q4_AVX512(1)
DEFINE_Q4_AVX512(2)
DEFINE_Q4_AVX512(4)

/* AVX2: the f32 dot's loop of 32 is one block: a0 a1 its bytes 0-7 and 8-15 low (elements
 * 0-7, 8-15), a2 a3 the same bytes high (16-23, 24-31); each decoded vector feeds every
 * input's accumulator. */
#define Q4_BODY_AVX2(NI)                                                                      \
    const uint8_t *w = wv;                                                                    \
    __m256 a[NI][4];                                                                          \
    for (int j = 0; j < (NI); j++) a[j][0] = a[j][1] = a[j][2] = a[j][3] = _mm256_setzero_ps(); \
    const __m256i m15 = _mm256_set1_epi32(15);                                                \
    for (int k = 0; k + 32 <= K; k += 32, w += 16, d++) {                                     \
        __builtin_prefetch(w + Q4_PREFETCH_AHEAD);                                            \
        __m256 db = _mm256_set1_ps(d[0]), eb = _mm256_set1_ps(8.0f * d[0]);                   \
        __m128i b = _mm_loadu_si128((const __m128i *)w);                                      \
        __m256i v0 = _mm256_cvtepu8_epi32(b), v1 = _mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)); \
        __m256 q[4] = {                                                                       \
            _mm256_fmsub_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v0, m15)), db, eb),           \
            _mm256_fmsub_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v1, m15)), db, eb),           \
            _mm256_fmsub_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(v0, 4)), db, eb),            \
            _mm256_fmsub_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(v1, 4)), db, eb)};           \
        for (int u = 0; u < 4; u++)                                                           \
            for (int j = 0; j < (NI); j++)                                                    \
                a[j][u] = _mm256_fmadd_ps(q[u], _mm256_loadu_ps(x + (long)j * K + k + 8 * u), a[j][u]); \
    }                                                                                         \
    for (int j = 0; j < (NI); j++)                                                            \
        s[j] = andrea_hsum_avx2(                                                              \
            _mm256_add_ps(_mm256_add_ps(a[j][0], a[j][1]), _mm256_add_ps(a[j][2], a[j][3])));

#define DEFINE_Q4_AVX2(NI)                                                                    \
    ANDREA_TARGET_AVX2 void andrea_dot_q4_0_avx2_##NI(const void *wv, const float *d,          \
                                                      const float *x, int K, float *s) {      \
        Q4_BODY_AVX2(NI)                                                                      \
    }
DEFINE_Q4_AVX2(1)
DEFINE_Q4_AVX2(2)
#endif
