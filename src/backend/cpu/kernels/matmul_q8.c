/*
 * matmul_q8.c - a prompt's products against q8_0 or q4_0 weights in integer arithmetic,
 * as llama.cpp runs such files: each input row is quantised to int8 blocks of 32 (ggml's
 * q8_0: d = absmax / 127, q = round(x / d) half away from 0, d kept in fp32 here), each block's dot with
 * the weights' block is an exact integer sum, and the blocks add up in fp32:
 *
 *   out[m][n] = (sum over b, in order, of fmaf(isum(m, n, b), da[m][b] * dw[n][b], .) + bias[n]) + resid[m][n]
 *
 * An f32 product reads each weight as a float and multiplies 16 pairs an instruction;
 * AVX-512 VNNI's vpdpbusd multiplies 64 int8 pairs and sums them in fours into int32,
 * so the product's arithmetic shrinks about 4x (llama.cpp's q4_0 prompts ran 1.5x our f32
 * forward's best rate on the same AVX-512 core). The cost is the input's rounding: about
 * q8_0's own error on every product, which is what llama.cpp users get from these files.
 *
 * The weights are repacked per panel of 32 output rows into vpdpbusd's order (for each
 * block, 8 steps of 4 consecutive k, each step the 4 bytes of 32 rows side by side: two
 * registers) with their scales. vpdpbusd multiplies unsigned by signed bytes, so the
 * weights go in as w + 128 and 128 x the input block's sum is taken off again (the sum
 * stays exact). A panel is packed right before its use, in the thread's buffer (99 KB
 * for K = 3072: no second copy of the model is kept), with vector loads and word
 * copies: the packing is about a tenth of the products at 128 rows.
 *
 * AVX-512 VNNI only: elsewhere the caller runs the f32 product (at AVX2, int8 products
 * need as many instructions per weight as f32 FMAs, and andrea's f32 prefill is already
 * past llama.cpp's int8 one there; see docs/performance.md).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/kernels.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define QB 32          /* entries per block */
#define PANEL 32       /* output rows (columns of out) per packed panel */
#define MR 4           /* input rows per register tile */

#ifdef _OPENMP
static int max_threads(void) { return omp_get_max_threads(); }
static int thread_num(void) { return omp_get_thread_num(); }
#else
static int max_threads(void) { return 1; }
static int thread_num(void) { return 0; }
#endif

void andrea_q8_quantize_rows(int8_t *q, float *d, const float *x, int M, int K) {
    int KB = K / QB;
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++) {
        for (int b = 0; b < KB; b++) {
            const float *xb = x + (size_t)m * K + (size_t)b * QB;
            float amax = 0.0f;
            for (int k = 0; k < QB; k++) amax = fmaxf(amax, fabsf(xb[k]));
            float db = amax / 127.0f, id = db > 0.0f ? 1.0f / db : 0.0f;
            d[(size_t)m * KB + b] = db;
            for (int k = 0; k < QB; k++) /* half away from 0, as ggml */
                q[(size_t)m * K + (size_t)b * QB + k] = (int8_t)roundf(xb[k] * id);
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define Q8_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni,fma")))
#define HAVE_Q8_VNNI 1

/* 128 x the sum of each input block (M, K / 32): vpdpbusd multiplies unsigned by signed
 * bytes, so the weights go in as w + 128 and the tile starts each block's sums at
 * -128 x sum(q), which leaves sum(q w) exact */
static void block_sums(int32_t *s, const int8_t *q, int M, int K) {
    for (size_t i = 0; i < (size_t)M * (K / QB); i++) {
        int32_t t = 0;
        for (int k = 0; k < QB; k++) t += q[i * QB + k];
        s[i] = -128 * t;
    }
}

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
    int KB = K / QB;
    for (int c = 0; c < PANEL; c++)
        for (int b = 0; b < KB; b++) {
            uint32_t four[8];
            _mm256_storeu_si256((__m256i *)four, row_block(w, fmt, K, n0 + c, b));
            uint32_t *dst = (uint32_t *)pw + (size_t)b * 8 * PANEL + c;
            for (int step = 0; step < 8; step++) dst[step * PANEL] = four[step];
            pd[(size_t)b * PANEL + c] = scale[(size_t)(n0 + c) * KB + b];
        }
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
                                 const float *bias, const float *resid, int M, int K, int N,
                                 int n0) {
    int KB = K / QB, m = 0;
    for (; m + MR <= M; m += MR)
        tile(MR, out + (size_t)m * N, aq + (size_t)m * K, ad + (size_t)m * KB, as + (size_t)m * KB,
             pw, pd, bias, resid ? resid + (size_t)m * N : NULL, K, N, n0);
    for (; m < M; m++)
        tile(1, out + (size_t)m * N, aq + (size_t)m * K, ad + (size_t)m * KB, as + (size_t)m * KB,
             pw, pd, bias, resid ? resid + (size_t)m * N : NULL, K, N, n0);
}
#endif

int andrea_mm_q8_supported(int isa) {
#ifdef HAVE_Q8_VNNI
    return andrea_cpu_isa(isa) == ANDREA_ISA_AVX512 && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx512bw");
#else
    (void)isa;
    return 0;
#endif
}

int andrea_mm_q8_forward(int isa, float *out, const float *inp, const void *w, int fmt,
                         const float *scale, const float *bias, const float *resid, int M,
                         int K, int N) {
    if ((fmt != ANDREA_QUANT_Q8_0 && fmt != ANDREA_QUANT_Q4_0) || M < 0 || K <= 0 || K % QB ||
        N % PANEL || !andrea_mm_q8_supported(isa))
        return -1;
    if (M == 0) return 0; /* the question whether it can */
#ifdef HAVE_Q8_VNNI
    int KB = K / QB, threads = max_threads();
    size_t pack = (size_t)KB * PANEL * (QB + sizeof(float));
    int8_t *aq = malloc((size_t)M * K);
    float *ad = malloc(sizeof(float) * (size_t)M * KB);
    int32_t *as = malloc(sizeof(int32_t) * (size_t)M * KB);
    char *packs = malloc(pack * (size_t)threads);
    if (!aq || !ad || !as || !packs) {
        free(aq), free(ad), free(as), free(packs);
        return -1;
    }
    andrea_q8_quantize_rows(aq, ad, inp, M, K);
    block_sums(as, aq, M, K);
#pragma omp parallel num_threads(threads)
    {
        uint8_t *pw = (uint8_t *)(packs + pack * (size_t)thread_num());
        float *pd = (float *)(pw + (size_t)KB * PANEL * QB);
#pragma omp for schedule(static)
        for (int p = 0; p < N / PANEL; p++) {
            pack_panel(pw, pd, w, fmt, scale, K, p * PANEL);
            panel_rows(out, aq, ad, as, pw, pd, bias, resid, M, K, N, p * PANEL);
        }
    }
    free(aq), free(ad), free(as), free(packs);
    return 0;
#else
    (void)out, (void)inp, (void)w, (void)scale, (void)bias, (void)resid;
    return -1;
#endif
}
