/*
 * matmul_q8_avx2.c - matmul_q8.c's kernel for AVX2: vpmaddubsw multiplies 32 unsigned by
 * signed byte pairs and adds neighbours into 16-bit lanes, vpmaddwd adds those in pairs
 * into int32, so 32 products take 3-4 instructions where f32 FMAs take 4, on the two
 * multiply ports of Zen and Skylake alike (llama.cpp's q4_0 prompts ran 1.2x our f32
 * forward at AVX2 on the same Zen 4 before this).
 *
 * Each packed step holds 4 consecutive k of 16 output rows (two registers, 8 rows each),
 * so a broadcast of 4 input bytes meets 4 bytes of every row. The products must not
 * saturate vpmaddubsw's 16-bit lanes (inputs are within -127..127):
 * - q8_0 weights are signed (-128..127): the unsigned side is |w| and the input takes w's
 *   sign (vpsignb), so each lane is at most 2 x 128 x 127 = 32512, widened every step;
 * - q4_0 weights go in as their nibbles (0..15) and the driver takes 8 x the input
 *   block's sum off; a lane is at most 2 x 15 x 127, so a block's 8 steps add up in
 *   16 bits (30480) and are widened once.
 */
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/matmul_q8.h"
#include "backend/cpu/kernels/transpose.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define Q8_TARGET __attribute__((target("avx2,fma")))
#define QB Q8_BLOCK
#ifndef NV
#define NV 2     /* ymm of int32 per panel */
#endif
#ifndef MR
#define MR 4     /* input rows per register tile */
#endif
#define PANEL (8 * NV) /* output rows per panel */

/* One weight row's block b as 32 bytes: q8_0's signed values, or q4_0's nibbles (entry
 * j's low in byte j, 16 + j's high: quant.c's layout) */
static inline Q8_TARGET __m256i row_block(const void *w, int fmt, int K, int n, int b) {
    if (fmt == ANDREA_QUANT_Q8_0)
        return _mm256_loadu_si256((const __m256i *)((const int8_t *)w + (size_t)n * K + (size_t)b * QB));
    __m128i v = _mm_loadu_si128((const __m128i *)((const uint8_t *)w + (size_t)n * (K / 2) + (size_t)b * 16));
    __m128i lo = _mm_and_si128(v, _mm_set1_epi8(15)), hi = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(15));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

/* The inputs' side for both x86 kernels (every VNNI CPU has AVX2): ggml's q8_0 per block
 * of 32, d = absmax / 127, q = round(x / d) half away from 0 (a subnormal block's id
 * overflows: q = 0; NaN -> 127, as the reference clamps), and sums[b] = offset x sum(q).
 * Eight lanes at a time it is 20x the scalar loop, whose roundf calls cost a third of a
 * 128 x 3072 product. */
static Q8_TARGET void quantize_block(int8_t *q, float *d, int32_t *sum, int offset, const float *x) {
    const __m256 sign = _mm256_set1_ps(-0.0f), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    __m256 v[4], m = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[i] = _mm256_loadu_ps(x + 8 * i)));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    float amax = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
    float db = amax / 127.0f, id = db > 0.0f ? 1.0f / db : 0.0f;
    if (!(id <= FLT_MAX)) id = 0.0f;
    *d = db;
    __m256i qi[4], total = _mm256_setzero_si256();
    for (int i = 0; i < 4; i++) {
        __m256 t = _mm256_mul_ps(v[i], _mm256_set1_ps(id));
        __m256 r = _mm256_round_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __m256 away = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(t, r)), half, _CMP_GE_OQ);
        r = _mm256_add_ps(r, _mm256_and_ps(away, _mm256_or_ps(_mm256_and_ps(t, sign), one)));
        r = _mm256_max_ps(_mm256_min_ps(r, _mm256_set1_ps(127.0f)), _mm256_set1_ps(-127.0f)); /* NaN -> 127 */
        total = _mm256_add_epi32(total, qi[i] = _mm256_cvttps_epi32(r));
    }
    __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
    _mm256_storeu_si256((__m256i *)q, _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    *sum = offset * _mm_cvtsi128_si32(s4);
}

void andrea_q8_quantize_avx2(int8_t *q, float *d, int32_t *sums, int offset, const float *x, int M, int K) {
    int KB = K / QB;
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++)
        for (int b = 0; b < KB; b++) {
            size_t i = (size_t)m * KB + b;
            quantize_block(q + i * QB, d + i, sums + i, offset, x + i * QB);
        }
}

static Q8_TARGET void pack_panel(uint8_t *pw, float *pd, const void *w, int fmt,
                                 const float *scale, int K, int n0) {
    Q8_PACK_PANEL(pw, pd, w, fmt, scale, K, n0, PANEL, row_block);
}

static inline Q8_TARGET __m256i input4(const int8_t *aq, int k) {
    int32_t four;
    memcpy(&four, aq + k, 4);
    return _mm256_set1_epi32(four);
}

/* block b's integer sums of R input rows against the panel, offsets included */
static inline __attribute__((always_inline)) Q8_TARGET void
block_q8_0(int R, __m256i acc[MR][NV], const int8_t *aq, const int32_t *as, const uint8_t *wb,
           int K, int KB, int b) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int r = 0; r < R; r++)
        for (int h = 0; h < NV; h++) acc[r][h] = _mm256_set1_epi32(as[(size_t)r * KB + b]);
    for (int step = 0; step < 8; step++) {
        __m256i wv[NV], u[NV];
        for (int h = 0; h < NV; h++) {
            wv[h] = _mm256_loadu_si256((const __m256i *)(wb + step * PANEL * 4 + 32 * h));
            u[h] = _mm256_abs_epi8(wv[h]);
        }
        for (int r = 0; r < R; r++) {
            __m256i a = input4(aq + (size_t)r * K, b * QB + step * 4);
            for (int h = 0; h < NV; h++) {
                __m256i p = _mm256_maddubs_epi16(u[h], _mm256_sign_epi8(a, wv[h]));
                acc[r][h] = _mm256_add_epi32(acc[r][h], _mm256_madd_epi16(p, ones));
            }
        }
    }
}

static inline __attribute__((always_inline)) Q8_TARGET void
block_q4_0(int R, __m256i acc[MR][NV], const int8_t *aq, const int32_t *as, const uint8_t *wb,
           int K, int KB, int b) {
    __m256i s[MR][NV];
    for (int r = 0; r < R; r++)
        for (int h = 0; h < NV; h++) s[r][h] = _mm256_setzero_si256();
    for (int step = 0; step < 8; step++) {
        __m256i wv[NV];
        for (int h = 0; h < NV; h++) wv[h] = _mm256_loadu_si256((const __m256i *)(wb + step * PANEL * 4 + 32 * h));
        for (int r = 0; r < R; r++) {
            __m256i a = input4(aq + (size_t)r * K, b * QB + step * 4);
            for (int h = 0; h < NV; h++) s[r][h] = _mm256_add_epi16(s[r][h], _mm256_maddubs_epi16(wv[h], a));
        }
    }
    const __m256i ones = _mm256_set1_epi16(1);
    for (int r = 0; r < R; r++)
        for (int h = 0; h < NV; h++)
            acc[r][h] = _mm256_add_epi32(_mm256_set1_epi32(as[(size_t)r * KB + b]),
                                         _mm256_madd_epi16(s[r][h], ones));
}

/* rows m0..m0+R-1 (R <= MR) of out over one packed panel */
static inline __attribute__((always_inline)) Q8_TARGET void
tile(int R, float *out, const int8_t *aq, const float *ad, const int32_t *as,
     const uint8_t *pw, const float *pd, const float *bias, const float *resid, int fmt, int K,
     int N, int n0) {
    int KB = K / QB;
    __m256 f[MR][NV];
    for (int r = 0; r < R; r++)
        for (int h = 0; h < NV; h++) f[r][h] = _mm256_setzero_ps();
    for (int b = 0; b < KB; b++) {
        __m256i acc[MR][NV];
        const uint8_t *wb = pw + (size_t)b * 8 * PANEL * 4;
        if (fmt == ANDREA_QUANT_Q8_0)
            block_q8_0(R, acc, aq, as, wb, K, KB, b);
        else
            block_q4_0(R, acc, aq, as, wb, K, KB, b);
        for (int r = 0; r < R; r++) {
            __m256 da = _mm256_set1_ps(ad[(size_t)r * KB + b]);
            for (int h = 0; h < NV; h++)
                f[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][h]),
                                          _mm256_mul_ps(da, _mm256_loadu_ps(pd + b * PANEL + 8 * h)), f[r][h]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int h = 0; h < NV; h++) {
            __m256 v = f[r][h];
            if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + n0 + 8 * h));
            if (resid) v = _mm256_add_ps(v, _mm256_loadu_ps(resid + (size_t)r * N + n0 + 8 * h));
            _mm256_storeu_ps(out + (size_t)r * N + n0 + 8 * h, v);
        }
}

static Q8_TARGET void panel_rows(float *out, const int8_t *aq, const float *ad,
                                 const int32_t *as, const uint8_t *pw, const float *pd,
                                 const float *bias, const float *resid, int fmt, int M, int K,
                                 int N, int n0) {
    int KB = K / QB, m = 0;
    for (; m + MR <= M; m += MR)
        tile(MR, out + (size_t)m * N, aq + (size_t)m * K, ad + (size_t)m * KB, as + (size_t)m * KB,
             pw, pd, bias, resid ? resid + (size_t)m * N : NULL, fmt, K, N, n0);
    for (; m < M; m++)
        tile(1, out + (size_t)m * N, aq + (size_t)m * K, ad + (size_t)m * KB, as + (size_t)m * KB,
             pw, pd, bias, resid ? resid + (size_t)m * N : NULL, fmt, K, N, n0);
}

const andrea_q8_kernel *andrea_q8_kernel_avx2(void) {
    static const andrea_q8_kernel k = {PANEL, 0, -8, pack_panel, panel_rows};
    return &k;
}
#else
const andrea_q8_kernel *andrea_q8_kernel_avx2(void) { return NULL; }
void andrea_q8_quantize_avx2(int8_t *q, float *d, int32_t *sums, int offset, const float *x, int M, int K) {
    (void)q, (void)d, (void)sums, (void)offset, (void)x, (void)M, (void)K; /* never called */
}
#endif
