/*
 * matmul_q8_vnni.c - matmul_q8.c's kernel for AVX-512 VNNI: vpdpbusd multiplies 64
 * unsigned-by-signed byte pairs and sums them in fours into int32, one instruction for
 * what takes an f32 product four FMAs.
 *
 * The weights are repacked per panel of 32 output rows into vpdpbusd's order (for each
 * block, 8 steps of 4 consecutive k, each step the 4 bytes of 32 rows side by side: two
 * registers) with their scales. The weights go in unsigned, as w + 128, and the driver
 * starts each block's sums at -128 x the input block's sum, which leaves sum(q w) exact.
 */
#include <stdint.h>
#include <string.h>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/matmul_q8.h"
#include "backend/cpu/kernels/transpose.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define Q8_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni,fma")))
#define QB Q8_BLOCK
#define PANEL 32 /* output rows per panel: two zmm of int32 */
#define MR 6     /* input rows per register tile: 12 int32 sums in flight cover vpdpbusd's
                  * latency at two a cycle; 4 rows (8 sums) ran a 128-token q8_0 prefill
                  * ~25% slower (docs/performance.md) */

/* One weight row's block b as 32 bytes w + 128 (quant.c's layouts: q8_0 a byte an entry;
 * q4_0 16 bytes a block, entry j's nibble low in byte j, 16 + j's high, value nibble - 8). */
static inline Q8_TARGET __m256i row_block(const void *w, int fmt, int K, int n, int b) {
    if (fmt == ANDREA_QUANT_Q8_0) {
        __m256i v = _mm256_loadu_si256((const __m256i *)((const int8_t *)w + (size_t)n * K + (size_t)b * QB));
        return _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80));
    }
    __m128i v = _mm_loadu_si128((const __m128i *)((const uint8_t *)w + (size_t)n * (K / 2) + (size_t)b * 16));
    __m128i lo = _mm_and_si128(v, _mm_set1_epi8(15)), hi = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(15));
    __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    return _mm256_add_epi8(q, _mm256_set1_epi8(120)); /* nibble - 8 + 128 */
}

/* Panel n0..n0+31 into pw (per block: 8 steps x 32 rows x 4 bytes w + 128) and pd (per
 * block: the 32 rows' scales). */
static Q8_TARGET void pack_panel(uint8_t *pw, float *pd, const void *w, int fmt,
                                 const float *scale, int K, int n0) {
    Q8_PACK_PANEL(pw, pd, w, fmt, scale, K, n0, PANEL, row_block);
}

/* rows m0..m0+R-1 (R <= MR) of out over one packed panel */
static inline __attribute__((always_inline)) Q8_TARGET void
tile(int R, float *out, const int8_t *aq, const float *ad, const int32_t *as,
     const uint8_t *pw, const float *pd, const float *bias, const float *resid, int K, int N,
     int n0) {
    int KB = K / QB;
    __m512 f[MR][2];
    for (int r = 0; r < R; r++) f[r][0] = f[r][1] = _mm512_setzero_ps();
    for (int b = 0; b < KB; b++) {
        __m512i acc[MR][2];
        for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm512_set1_epi32(as[(size_t)r * KB + b]);
        const uint8_t *wb = pw + (size_t)b * 8 * PANEL * 4;
        for (int step = 0; step < 8; step++) {
            __m512i w0 = _mm512_loadu_si512(wb + step * PANEL * 4);
            __m512i w1 = _mm512_loadu_si512(wb + step * PANEL * 4 + 64);
            for (int r = 0; r < R; r++) {
                int32_t four;
                memcpy(&four, aq + (size_t)r * K + b * QB + step * 4, 4);
                __m512i a = _mm512_set1_epi32(four);
                acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], w0, a);
                acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], w1, a);
            }
        }
        __m512 d0 = _mm512_loadu_ps(pd + b * PANEL), d1 = _mm512_loadu_ps(pd + b * PANEL + 16);
        for (int r = 0; r < R; r++) {
            __m512 da = _mm512_set1_ps(ad[(size_t)r * KB + b]);
            f[r][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][0]), _mm512_mul_ps(da, d0), f[r][0]);
            f[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][1]), _mm512_mul_ps(da, d1), f[r][1]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int h = 0; h < 2; h++) {
            __m512 v = f[r][h];
            if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + n0 + 16 * h));
            if (resid) v = _mm512_add_ps(v, _mm512_loadu_ps(resid + (size_t)r * N + n0 + 16 * h));
            _mm512_storeu_ps(out + (size_t)r * N + n0 + 16 * h, v);
        }
}

/* every row of out over the panel at n0 */
static Q8_TARGET void panel_rows(float *out, const int8_t *aq, const float *ad,
                                 const int32_t *as, const uint8_t *pw, const float *pd,
                                 const float *bias, const float *resid, int fmt, int M, int K,
                                 int N, int n0) {
    (void)fmt; /* both formats were packed alike */
    int KB = K / QB, m = 0;
    for (; m + MR <= M; m += MR)
        tile(MR, out + (size_t)m * N, aq + (size_t)m * K, ad + (size_t)m * KB, as + (size_t)m * KB,
             pw, pd, bias, resid ? resid + (size_t)m * N : NULL, K, N, n0);
    for (; m + 2 <= M; m += 2)
        tile(2, out + (size_t)m * N, aq + (size_t)m * K, ad + (size_t)m * KB, as + (size_t)m * KB,
             pw, pd, bias, resid ? resid + (size_t)m * N : NULL, K, N, n0);
    for (; m < M; m++)
        tile(1, out + (size_t)m * N, aq + (size_t)m * K, ad + (size_t)m * KB, as + (size_t)m * KB,
             pw, pd, bias, resid ? resid + (size_t)m * N : NULL, K, N, n0);
}

const andrea_q8_kernel *andrea_q8_kernel_vnni(void) {
    static const andrea_q8_kernel k = {PANEL, -128, -128, pack_panel, panel_rows};
    return &k;
}
#else
const andrea_q8_kernel *andrea_q8_kernel_vnni(void) { return NULL; }
#endif
