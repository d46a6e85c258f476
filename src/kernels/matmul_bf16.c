/*
 * matmul_bf16.c - the same products as gemm_nn with bf16 operands and fp32
 * accumulation, on AVX512-BF16's vdpbf16ps (two bf16 products per fp32 lane per
 * instruction: twice the fp32 FMA rate). Mixed precision: the master weights,
 * gradients, optimizer state and every non-matmul op stay fp32; only the matmul
 * inputs are rounded (to nearest even) to bf16 as they are packed.
 * Packing: A rows and B columns are stored as 32-bit pairs (x[k], x[k+1]) along
 * k, which is the operand layout vdpbf16ps multiplies.
 */
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "kernels/fastmath.h"
#include "kernels/kernels.h"
#include "util/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_BF16_KERNEL 1
#endif

#define MR 4
#define NR 32
#define KC 256 /* even: k pairs never straddle a block */
#define NC 512
#define MB 256 /* B panels are repacked per row block: larger blocks amortise the bf16 conversion */

static inline uint32_t bf16_bits(float f) { return andrea_bf16_from_f32(f); }
static inline float bf16_round(float f) { return andrea_bf16_to_f32(andrea_bf16_from_f32(f)); }

int andrea_bf16_supported(void) {
#ifdef HAVE_BF16_KERNEL
    return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw");
#else
    return 0;
#endif
}

#ifdef HAVE_BF16_KERNEL
/* C[0:4, 0:32] += A @ B over kc2 k-pairs; ap: 4 rows of kc2 pairs, bp: kc2 x 32 pairs. */
__attribute__((target("avx512f,avx512bf16"))) static void tile_bf16(float *c, int ldc,
                                                                    const uint32_t *ap,
                                                                    int kc2, const uint32_t *bp) {
    __m512 c00 = _mm512_loadu_ps(c), c01 = _mm512_loadu_ps(c + 16);
    __m512 c10 = _mm512_loadu_ps(c + ldc), c11 = _mm512_loadu_ps(c + ldc + 16);
    __m512 c20 = _mm512_loadu_ps(c + 2 * ldc), c21 = _mm512_loadu_ps(c + 2 * ldc + 16);
    __m512 c30 = _mm512_loadu_ps(c + 3 * ldc), c31 = _mm512_loadu_ps(c + 3 * ldc + 16);
    for (int kp = 0; kp < kc2; kp++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + (long)kp * NR);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + (long)kp * NR + 16);
        __m512bh a0 = (__m512bh)_mm512_set1_epi32((int)ap[kp]);
        __m512bh a1 = (__m512bh)_mm512_set1_epi32((int)ap[kc2 + kp]);
        __m512bh a2 = (__m512bh)_mm512_set1_epi32((int)ap[2 * kc2 + kp]);
        __m512bh a3 = (__m512bh)_mm512_set1_epi32((int)ap[3 * kc2 + kp]);
        c00 = _mm512_dpbf16_ps(c00, a0, b0);
        c01 = _mm512_dpbf16_ps(c01, a0, b1);
        c10 = _mm512_dpbf16_ps(c10, a1, b0);
        c11 = _mm512_dpbf16_ps(c11, a1, b1);
        c20 = _mm512_dpbf16_ps(c20, a2, b0);
        c21 = _mm512_dpbf16_ps(c21, a2, b1);
        c30 = _mm512_dpbf16_ps(c30, a3, b0);
        c31 = _mm512_dpbf16_ps(c31, a3, b1);
    }
    _mm512_storeu_ps(c, c00), _mm512_storeu_ps(c + 16, c01);
    _mm512_storeu_ps(c + ldc, c10), _mm512_storeu_ps(c + ldc + 16, c11);
    _mm512_storeu_ps(c + 2 * ldc, c20), _mm512_storeu_ps(c + 2 * ldc + 16, c21);
    _mm512_storeu_ps(c + 3 * ldc, c30), _mm512_storeu_ps(c + 3 * ldc + 16, c31);
}

/* One k pair of a 32-column B panel: rows r0 and r1 (NULL = zeros) -> 32 (r0[j], r1[j])
 * bf16 pairs, converted 32 at a time (vcvtne2ps2bf16 rounds to nearest even) and
 * interleaved with one word permute. */
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
#endif

static _Thread_local uint32_t *g_apack = NULL, *g_bpack = NULL;

/* Edge tiles: the same bf16-rounded operands, fp32 arithmetic, plain loops. */
static void edge_bf16(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *b,
                      int ldb, int kc, int mr, int nr) {
    for (int r = 0; r < mr; r++)
        for (int k = 0; k < kc; k++) {
            float av = bf16_round(a[r * a_rs + k * a_cs]);
            const float *bk = b + (long)k * ldb;
            for (int j = 0; j < nr; j++) c[(long)r * ldc + j] += av * bf16_round(bk[j]);
        }
}

int gemm_bf16(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *b, int ldb,
              int M, int K, int N) {
    if (!andrea_bf16_supported())
        return andrea_set_error("bf16 matmuls need a CPU with AVX512-BF16");
#ifdef HAVE_BF16_KERNEL
    int n_mb = (M + MB - 1) / MB, n_nb = (N + NC - 1) / NC;
    int failed = 0;
#pragma omp parallel for collapse(2) schedule(static) reduction(| : failed)
    for (int mbi = 0; mbi < n_mb; mbi++) {
        for (int nbi = 0; nbi < n_nb; nbi++) {
            if (!g_apack) g_apack = malloc(sizeof(uint32_t) * MB * (KC / 2));
            if (!g_bpack) g_bpack = malloc(sizeof(uint32_t) * (KC / 2) * NC);
            if (!g_apack || !g_bpack) {
                failed = 1;
                continue;
            }
            int m0 = mbi * MB, m1 = m0 + MB < M ? m0 + MB : M;
            int n0 = nbi * NC, n1 = n0 + NC < N ? n0 + NC : N;
            int m_full = (m1 - m0) / MR * MR, n_full = (n1 - n0) / NR * NR;
            for (int k0 = 0; k0 < K; k0 += KC) {
                int kc = K - k0 < KC ? K - k0 : KC, kc2 = (kc + 1) / 2;
                /* pack A rows and B panels as bf16 pairs; an odd last k pairs with 0 */
                for (int r = 0; r < m_full; r++)
                    for (int kp = 0; kp < kc2; kp++) {
                        int k = k0 + 2 * kp;
                        float x0 = a[(long)(m0 + r) * a_rs + (long)k * a_cs];
                        float x1 = 2 * kp + 1 < kc ? a[(long)(m0 + r) * a_rs + (long)(k + 1) * a_cs] : 0.0f;
                        g_apack[r * kc2 + kp] = bf16_bits(x0) | bf16_bits(x1) << 16;
                    }
                for (int p = 0; p < n_full / NR; p++)
                    for (int kp = 0; kp < kc2; kp++) {
                        int k = k0 + 2 * kp;
                        const float *r0 = b + (long)k * ldb + n0 + p * NR;
                        const float *r1 = 2 * kp + 1 < kc ? r0 + ldb : NULL;
                        pack_pairs32(g_bpack + ((long)p * kc2 + kp) * NR, r0, r1);
                    }
                for (int m = m0; m < m1; m += MR) {
                    int mr = m1 - m < MR ? m1 - m : MR;
                    for (int n = n0; n < n1; n += NR) {
                        int nr = n1 - n < NR ? n1 - n : NR;
                        float *cmn = c + (long)m * ldc + n;
                        if (mr == MR && nr == NR && m - m0 < m_full && n - n0 < n_full)
                            tile_bf16(cmn, ldc, g_apack + (long)(m - m0) * kc2, kc2,
                                      g_bpack + (long)(n - n0) / NR * kc2 * NR);
                        else
                            edge_bf16(cmn, ldc, a + (long)m * a_rs + (long)k0 * a_cs, a_rs, a_cs,
                                      b + (long)k0 * ldb + n, ldb, kc, mr, nr);
                    }
                }
            }
        }
    }
    if (failed) return andrea_set_error("out of memory packing bf16 operands");
    return 0;
#else
    (void)c, (void)ldc, (void)a, (void)a_rs, (void)a_cs, (void)b, (void)ldb, (void)M, (void)K,
        (void)N;
    return -1;
#endif
}
