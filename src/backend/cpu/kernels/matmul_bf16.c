/*
 * matmul_bf16.c - the same products as andrea_gemm_nn with bf16 operands and fp32
 * accumulation, on AVX512-BF16's vdpbf16ps (two bf16 products per fp32 lane per
 * instruction: twice the fp32 FMA rate). Mixed precision: the master weights,
 * gradients, optimizer state and every non-matmul op stay fp32; only the matmul
 * inputs are rounded (to nearest even) to bf16 as they are packed.
 * Packing: A panels and B panels are stored as 32-bit pairs (x[k], x[k+1]) along
 * k, which is the operand layout vdpbf16ps multiplies; an odd last k pairs with 0.
 * The loop structure is andrea_gemm_nn's (matmul.c): per-thread slabs, a KC x NC block of
 * B packed once per thread, MR x KC panels of A, an MR x NR register tile.
 */
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/cpu/kernels/fastmath.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/transpose.h"
#include "util/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_BF16_KERNEL 1
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#define MR 8
#define NR 32
#define KC 256 /* even: k pairs never straddle a block */
#define NC 512

int andrea_bf16_supported(void) {
#ifdef HAVE_BF16_KERNEL
    /* an AVX-512 instruction: not under an ANDREA_ISA cap below avx512 */
    return andrea_isa_machine() == ANDREA_ISA_AVX512 && __builtin_cpu_supports("avx512bf16") &&
           __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

#ifdef HAVE_BF16_KERNEL
static inline uint32_t bf16_pair(float x0, float x1) {
    return (uint32_t)andrea_bf16_from_f32(x0) | (uint32_t)andrea_bf16_from_f32(x1) << 16;
}

/* C[0:8, 0:32] += A @ B over kc2 k-pairs; A's pair (r, kp) at ap[r a_rs + kp a_cs] (rows
 * of pairs: a_rs = kc2, a_cs = 1; k-major: a_rs = 1, a_cs = MR), bp: kc2 x 32 pairs.
 * vdpbf16ps has a 6-cycle latency at two per cycle on Zen 5 (bench/bench_peak.c):
 * 16 accumulators reach ~400 GFLOP/s per core where the old 4 x 32 tile's 8 reached 290. */
#define ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
__attribute__((target("avx512f,avx512bf16"))) static void tile_bf16(float *c, int ldc,
                                                                    const uint32_t *ap,
                                                                    long a_rs, long a_cs,
                                                                    const uint32_t *bp, int kc2) {
#define LOAD_ROW(r)                                                                           \
    __m512 c##r##a = _mm512_loadu_ps(c + (r) * ldc), c##r##b = _mm512_loadu_ps(c + (r) * ldc + 16);
    ROWS8(LOAD_ROW)
    for (int kp = 0; kp < kc2; kp++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + (long)kp * NR);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + (long)kp * NR + 16);
        const uint32_t *ak = ap + kp * a_cs;
#define DOT_ROW(r)                                                                            \
    {                                                                                         \
        __m512bh av = (__m512bh)_mm512_set1_epi32((int)ak[(r) * a_rs]);                              \
        c##r##a = _mm512_dpbf16_ps(c##r##a, av, b0);                                          \
        c##r##b = _mm512_dpbf16_ps(c##r##b, av, b1);                                          \
    }
        ROWS8(DOT_ROW)
    }
#define STORE_ROW(r)                                                                          \
    _mm512_storeu_ps(c + (r) * ldc, c##r##a), _mm512_storeu_ps(c + (r) * ldc + 16, c##r##b);
    ROWS8(STORE_ROW)
#undef LOAD_ROW
#undef DOT_ROW
#undef STORE_ROW
}

/* One k pair of a full 32-column panel from two contiguous rows (r1 NULL = zeros):
 * 32 (r0[j], r1[j]) pairs, converted 32 at a time (vcvtne2ps2bf16 rounds to nearest
 * even) and interleaved with one word permute. */
__attribute__((target("avx512f,avx512bw,avx512bf16"))) static void pack_pairs32(
    uint32_t *dst, const float *r0, const float *r1) {
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                         24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                         16, 0);
    for (int h = 0; h < 32; h += 16) {
        __m512 lo = _mm512_loadu_ps(r0 + h);
        __m512 hi = r1 ? _mm512_loadu_ps(r1 + h) : _mm512_setzero_ps();
        __m512i both = (__m512i)_mm512_cvtne2ps_pbh(hi, lo); /* words 0-15 lo, 16-31 hi */
        _mm512_storeu_si512(dst + h, _mm512_permutexvar_epi16(idx, both));
    }
}

/* 32 contiguous floats -> 16 bf16 pairs (x[2i], x[2i+1]) in order: vcvtne2ps2bf16
 * puts the first 16 in words 0-15 and the next 16 in words 16-31, which read as
 * 32-bit words are exactly the pairs. */
__attribute__((target("avx512f,avx512bf16"))) static inline void pairs_from32(uint32_t *dst,
                                                                              const float *x) {
    __m512i p = (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 16), _mm512_loadu_ps(x));
    _mm512_storeu_si512(dst, p);
}

/* 8 adjacent floats of k rows 2kp and 2kp + 1 (x1 NULL = zeros) -> 8 pairs, k-major. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static inline void pairs_from8x2(
    uint32_t *dst, const float *x0, const float *x1) {
    const __m256i idx = _mm256_set_epi16(15, 7, 14, 6, 13, 5, 12, 4, 11, 3, 10, 2, 9, 1, 8, 0);
    __m256 lo = _mm256_loadu_ps(x0), hi = x1 ? _mm256_loadu_ps(x1) : _mm256_setzero_ps();
    __m256i both = (__m256i)_mm256_cvtne2ps_pbh(hi, lo); /* words 0-7 lo, 8-15 hi */
    _mm256_storeu_si256((__m256i *)dst, _mm256_permutexvar_epi16(idx, both));
}

/* A(r, k) = a[r a_rs + k a_cs] for r < rows (zeros after): the A panel of one tile row
 * block as bf16 pairs, in whichever layout its source reads fastest; sets the tile's
 * strides. Vectorised for rows along k (a_cs = 1: the forward and dinp products) and
 * for k along rows (a_rs = 1: dw); scalar otherwise. */
static void pack_a(uint32_t *ap, long *p_rs, long *p_cs, const float *a, long a_rs, long a_cs,
                   int rows, int kc) {
    int kc2 = (kc + 1) / 2;
    if (a_cs == 1 && rows == MR) { /* rows of pairs */
        *p_rs = kc2, *p_cs = 1;
        for (int r = 0; r < MR; r++) {
            const float *ar = a + r * a_rs;
            uint32_t *dr = ap + (long)r * kc2;
            int k = 0;
            for (; k + 32 <= kc; k += 32) pairs_from32(dr + k / 2, ar + k);
            for (; k < kc; k += 2)
                dr[k / 2] = bf16_pair(ar[k], k + 1 < kc ? ar[k + 1] : 0.0f);
        }
        return;
    }
    *p_rs = 1, *p_cs = MR; /* k-major pairs */
    if (a_rs == 1 && rows == MR) {
        for (int kp = 0; kp < kc2; kp++) {
            const float *x0 = a + 2L * kp * a_cs;
            pairs_from8x2(ap + (long)kp * MR, x0, 2 * kp + 1 < kc ? x0 + a_cs : NULL);
        }
        return;
    }
    if (rows < MR) memset(ap, 0, sizeof(uint32_t) * MR * (size_t)kc2);
    for (int r = 0; r < rows; r++) {
        const float *ar = a + r * a_rs;
        for (int kp = 0; kp < kc2; kp++) {
            long k = 2L * kp;
            ap[kp * MR + r] = bf16_pair(ar[k * a_cs], k + 1 < kc ? ar[(k + 1) * a_cs] : 0.0f);
        }
    }
}

/* B(k, n) = b[k b_rs + n b_cs], cols columns (zeros up to whole panels) -> panels of
 * kc2 x NR pairs. Rows are converted 32 at a time when b_cs = 1, else gathered along k. */
static void pack_b(uint32_t *bp, const float *b, long b_rs, long b_cs, int kc, int cols) {
    int kc2 = (kc + 1) / 2;
    for (int p = 0; p < cols; p += NR, bp += (long)NR * kc2) {
        int w = cols - p < NR ? cols - p : NR;
        if (b_cs == 1 && w == NR) {
            for (int kp = 0; kp < kc2; kp++) {
                const float *r0 = b + 2L * kp * b_rs + p;
                pack_pairs32(bp + (long)kp * NR, r0, 2 * kp + 1 < kc ? r0 + b_rs : NULL);
            }
            continue;
        }
        if (w < NR) memset(bp, 0, sizeof(uint32_t) * NR * (size_t)kc2);
        if (b_rs == 1) { /* a transposed weight matrix: each column is a run along k */
            int k0 = 0;
            if (w == NR) /* 16 columns x 32 k -> 16 x 16 pairs, transposed in registers */
                for (; k0 + 32 <= kc; k0 += 32)
                    for (int h = 0; h < NR; h += 16) {
                        uint32_t tmp[16 * 16];
                        for (int j = 0; j < 16; j++) pairs_from32(tmp + j * 16, b + (p + h + j) * b_cs + k0);
                        transpose16((float *)(bp + (long)(k0 / 2) * NR + h), NR, (const float *)tmp, 16);
                    }
            for (int j = 0; j < w; j++) {
                const float *bj = b + (p + j) * b_cs;
                for (int k = k0; k < kc; k += 2)
                    bp[(long)(k / 2) * NR + j] = bf16_pair(bj[k], k + 1 < kc ? bj[k + 1] : 0.0f);
            }
            continue;
        }
        for (int j = 0; j < w; j++) {
            const float *bj = b + (p + j) * b_cs;
            for (int kp = 0; kp < kc2; kp++) {
                long k = 2L * kp;
                bp[kp * NR + j] = bf16_pair(bj[k * b_rs], k + 1 < kc ? bj[(k + 1) * b_rs] : 0.0f);
            }
        }
    }
}

static _Thread_local uint32_t *g_apack = NULL, *g_bpack = NULL;

/* C[m0:m1, n0:n1] += A[m0:m1, :] @ B[:, n0:n1] by one thread, in its packing buffers. */
static void gemm_bf16_part(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *b,
                           long b_rs, long b_cs, int K, int m0, int m1, int n0, int n1) {
    for (int nb = n0; nb < n1; nb += NC) {
        int cols = n1 - nb < NC ? n1 - nb : NC;
        for (int k0 = 0; k0 < K; k0 += KC) {
            int kc = K - k0 < KC ? K - k0 : KC, kc2 = (kc + 1) / 2;
            pack_b(g_bpack, b + k0 * b_rs + nb * b_cs, b_rs, b_cs, kc, cols);
            for (int m = m0; m < m1; m += MR) {
                int mr = m1 - m < MR ? m1 - m : MR;
                long p_rs, p_cs;
                pack_a(g_apack, &p_rs, &p_cs, a + m * a_rs + k0 * a_cs, a_rs, a_cs, mr, kc);
                for (int n = 0; n < cols; n += NR) {
                    int nr = cols - n < NR ? cols - n : NR;
                    const uint32_t *bp = g_bpack + (long)n * kc2;
                    float *cmn = c + (long)m * ldc + nb + n;
                    if (mr == MR && nr == NR) {
                        tile_bf16(cmn, ldc, g_apack, p_rs, p_cs, bp, kc2);
                        continue;
                    }
                    float t[MR * NR] = {0}; /* ragged edge: through a full-size tile */
                    for (int r = 0; r < mr; r++)
                        memcpy(t + r * NR, cmn + (long)r * ldc, sizeof(float) * (size_t)nr);
                    tile_bf16(t, NR, g_apack, p_rs, p_cs, bp, kc2);
                    for (int r = 0; r < mr; r++)
                        memcpy(cmn + (long)r * ldc, t + r * NR, sizeof(float) * (size_t)nr);
                }
            }
        }
    }
}
#endif

int andrea_gemm_bf16(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *b, long b_rs,
              long b_cs, int M, int K, int N) {
    if (!andrea_bf16_supported())
        return andrea_set_error("bf16 matmuls need a CPU with AVX512-BF16");
#ifdef HAVE_BF16_KERNEL
    int failed = 0;
#pragma omp parallel
    {
        /* every thread gets its buffers before any touches C, so that on failure C is
         * untouched and the caller can fall back to fp32 */
        if (!g_apack) g_apack = malloc(sizeof(uint32_t) * MR * (KC / 2));
        if (!g_bpack) g_bpack = malloc(sizeof(uint32_t) * (KC / 2) * NC);
        if (!g_apack || !g_bpack) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp barrier
        int any_failed;
#pragma omp atomic read
        any_failed = failed;
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num(), nt = omp_get_num_threads();
#endif
        int m0, m1, n0, n1; /* bf16 packs A always: converting is packing */
        gemm_split(M, K, N, 1, MR, NR, NC, t, nt, &m0, &m1, &n0, &n1);
        if (!any_failed && m0 < m1 && n0 < n1)
            gemm_bf16_part(c, ldc, a, a_rs, a_cs, b, b_rs, b_cs, K, m0, m1, n0, n1);
    }
    if (failed) return andrea_set_error("out of memory packing bf16 operands");
    return 0;
#else
    (void)c, (void)ldc, (void)a, (void)a_rs, (void)a_cs, (void)b, (void)b_rs, (void)b_cs, (void)M,
        (void)K, (void)N;
    return -1;
#endif
}
