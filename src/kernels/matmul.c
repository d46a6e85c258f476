/*
 * matmul.c - the dense products of every linear layer, forward and backward.
 *
 * One engine, gemm_nn, computes C (+)= A @ B with B row-major, so the inner
 * loop is a broadcast of one A element times a contiguous row of B: that
 * vectorises perfectly and needs no horizontal sums. A is read through
 * strides, which lets the same engine serve all three products:
 *   forward      out  = inp  @ w^T   (w^T packed once per call)
 *   backward     dinp += dout @ w    (A = dout, B = w)
 *   backward     dw   += dout^T @ inp (A = dout read transposed, B = inp)
 * The register tile is MR x NR = 4 x 32 floats; cache blocks KC x NC of B are
 * reused across the rows of one thread's block. Each C element is summed in
 * k order by exactly one thread, so results do not depend on thread count.
 * The tile is compiled three times (AVX-512, AVX2+FMA, baseline) and chosen
 * at run time from the CPU's features.
 */
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "kernels/kernels.h"
#include "kernels/tile.h"
#include "util/error.h"

#ifdef ANDREA_HAVE_BLAS
#include <cblas.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

static int g_backend = ANDREA_MATMUL_BUILTIN;

int andrea_set_matmul_backend(int backend) {
    if (backend == ANDREA_MATMUL_BUILTIN) return g_backend = backend, 0;
#ifdef ANDREA_HAVE_BLAS
    if (backend == ANDREA_MATMUL_BLAS) return g_backend = backend, 0;
#endif
    return andrea_set_error("matmul backend %d is not available in this build (BLAS: %s)", backend,
#ifdef ANDREA_HAVE_BLAS
                            "yes"
#else
                            "no; install libopenblas-dev and rebuild"
#endif
    );
}

int andrea_matmul_backend(void) { return g_backend; }

static int g_precision = ANDREA_PRECISION_FP32;

int andrea_set_matmul_precision(int precision) {
    if (precision == ANDREA_PRECISION_FP32) return g_precision = precision, 0;
    if (precision == ANDREA_PRECISION_BF16) {
        if (!andrea_bf16_supported())
            return andrea_set_error("bf16 precision needs a CPU with AVX512-BF16 (this one has none)");
        return g_precision = precision, 0;
    }
    return andrea_set_error("unknown matmul precision %d", precision);
}

int andrea_matmul_precision(void) { return g_precision; }

/* bf16 serves the products big enough to be matmul-bound, like BLAS. */
static int use_bf16(long M, long K, long N) {
    return g_precision == ANDREA_PRECISION_BF16 && M > 4 && M * K * N >= (1L << 18);
}

/* BLAS pays off only on big products; small ones stay on our kernels. OpenBLAS has
 * its own thread pool: keep it the size of ours (-t), so results depend on -t only. */
static int use_blas(long M, long K, long N) {
    if (g_backend != ANDREA_MATMUL_BLAS || M <= 4 || M * K * N < (1L << 18)) return 0;
#if defined(ANDREA_HAVE_BLAS) && defined(_OPENMP)
    openblas_set_num_threads(omp_get_max_threads());
#endif
    return 1;
}

#define MR 4
#define NR 32
#define KC 256
#define NC 512
#define MB 64

typedef float vf16 __attribute__((vector_size(64)));
typedef float vf8 __attribute__((vector_size(32)));
typedef float vf4 __attribute__((vector_size(16)));

/* C[0:4, 0:32] += A[0:4, 0:kc] @ B[0:kc, 0:32]: tile.h's 4 x 2-vector tile over column
 * chunks of 2 W floats: one chunk for AVX-512 (W = 16), two for AVX2 (8), four for SSE (4). */
#define DEFINE_TILE(NAME, ATTR, VT, W)                                                      \
    ANDREA_DEFINE_TILE_4X2(NAME##_chunk, ATTR, VT, W)                                       \
    ATTR static void NAME(float *c, int ldc, const float *a, long a_rs, long a_cs,          \
                          const float *b, int ldb, int kc) {                                \
        for (int j = 0; j < 32; j += 2 * (W)) NAME##_chunk(c + j, ldc, a, a_rs, a_cs, b + j, ldb, kc); \
    }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
DEFINE_TILE(tile_avx512, __attribute__((target("avx512f,fma"))), vf16, 16)
DEFINE_TILE(tile_avx2, __attribute__((target("avx2,fma"))), vf8, 8)
#define HAVE_X86_DISPATCH 1
#endif
DEFINE_TILE(tile_generic, , vf4, 4)

typedef void (*tile_fn)(float *, int, const float *, long, long, const float *, int, int);

static int g_isa_cap = -1; /* tests: cap the tile at 0 baseline, 1 AVX2, 2 AVX-512 */

int matmul_set_isa(int cap) {
    g_isa_cap = cap;
    return cap;
}

static tile_fn pick_tile(void) {
#ifdef HAVE_X86_DISPATCH
    if (g_isa_cap == 0) return tile_generic;
    if (g_isa_cap == 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return tile_avx2;
    if (g_isa_cap == 1) return tile_generic;
    if (__builtin_cpu_supports("avx512f")) return tile_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return tile_avx2;
#endif
    return tile_generic;
}

/* Edge tiles (fewer than MR rows or NR columns): same k order, plain loops. */
static void tile_edge(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *b,
                      int ldb, int kc, int mr, int nr) {
    for (int r = 0; r < mr; r++) {
        float *cr = c + (long)r * ldc;
        for (int k = 0; k < kc; k++) {
            float av = a[r * a_rs + k * a_cs];
            const float *bk = b + (long)k * ldb;
            for (int j = 0; j < nr; j++) cr[j] += av * bk[j];
        }
    }
}

/* Per-thread copy of one KC x NC block of B, in panels of NR columns stored k-major
 * (panel p holds B[k][p*NR .. p*NR+NR-1] for k = 0..kc-1, contiguous): the tile then
 * streams B sequentially instead of striding by a row of B per k (which thrashes the
 * cache sets and TLB when rows are 4 KB apart). */
static _Thread_local float *g_bpanel = NULL;

void gemm_nn(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *b, int ldb,
             int M, int K, int N, int accumulate) {
    tile_fn tile = pick_tile(); /* a cached feature lookup: cheap, and no shared state */
    if (!accumulate)
        for (int m = 0; m < M; m++) memset(c + (long)m * ldc, 0, sizeof(float) * (size_t)N);
    int n_mb = (M + MB - 1) / MB, n_nb = (N + NC - 1) / NC;
#pragma omp parallel for collapse(2) schedule(static) if ((long)M * N * K >= (1L << 16))
    for (int mbi = 0; mbi < n_mb; mbi++) {
        for (int nbi = 0; nbi < n_nb; nbi++) {
            int m0 = mbi * MB, m1 = m0 + MB < M ? m0 + MB : M;
            int n0 = nbi * NC, n1 = n0 + NC < N ? n0 + NC : N;
            int n_full = (n1 - n0) / NR * NR; /* columns served by packed full panels */
            if (!g_bpanel) g_bpanel = malloc(sizeof(float) * KC * NC);
            float *bp = g_bpanel;
            for (int k0 = 0; k0 < K; k0 += KC) {
                int kc = K - k0 < KC ? K - k0 : KC;
                if (bp)
                    for (int p = 0; p < n_full / NR; p++)
                        for (int k = 0; k < kc; k++)
                            memcpy(bp + ((long)p * kc + k) * NR, b + (long)(k0 + k) * ldb + n0 + p * NR,
                                   sizeof(float) * NR);
                for (int m = m0; m < m1; m += MR) {
                    int mr = m1 - m < MR ? m1 - m : MR;
                    const float *am = a + m * a_rs + (long)k0 * a_cs;
                    for (int n = n0; n < n1; n += NR) {
                        int nr = n1 - n < NR ? n1 - n : NR;
                        float *cmn = c + (long)m * ldc + n;
                        const float *bkn = b + (long)k0 * ldb + n;
                        if (mr == MR && nr == NR) {
                            if (bp) tile(cmn, ldc, am, a_rs, a_cs, bp + (long)(n - n0) / NR * kc * NR, NR, kc);
                            else tile(cmn, ldc, am, a_rs, a_cs, bkn, ldb, kc);
                        } else {
                            tile_edge(cmn, ldc, am, a_rs, a_cs, bkn, ldb, kc, mr, nr);
                        }
                    }
                }
            }
        }
    }
}

/* Per-thread scratch for the packed w^T; grows, never shrinks. */
static _Thread_local float *g_pack = NULL;
static _Thread_local size_t g_pack_cap = 0;

static float *pack_scratch(size_t n) {
    if (n > g_pack_cap) {
        free(g_pack);
        g_pack = malloc(n * sizeof(float));
        g_pack_cap = g_pack ? n : 0;
    }
    return g_pack;
}

/* One dot product, compiled for AVX-512, AVX2 and baseline (picked at load time). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "avx2,fma", "default")))
#endif
static float dot_f32(const float *a, const float *b, int K) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int k = 0; k < K; k++) s += a[k] * b[k];
    return s;
}

/* A few rows: dot products straight from w, no packing (generation, tiny batches). */
static void matmul_forward_rows(float *out, const float *inp, const float *w, const float *bias,
                                int M, int K, int N) {
    /* threads only pay off once there is real work (a fork/join costs microseconds) */
#pragma omp parallel for schedule(static) if ((long)M * N * K >= (1L << 16))
    for (int n = 0; n < N; n++) {
        const float *wn = w + (long)n * K;
        for (int m = 0; m < M; m++) {
            float s = dot_f32(wn, inp + (long)m * K, K);
            out[(long)m * N + n] = s + (bias ? bias[n] : 0.0f);
        }
    }
}

void matmul_forward(float *out, const float *inp, const float *w, const float *bias, int M,
                    int K, int N) {
#ifdef ANDREA_HAVE_BLAS
    if (use_blas(M, K, N)) {
        for (int m = 0; m < M; m++) {
            float *o = out + (long)m * N;
            if (bias) memcpy(o, bias, sizeof(float) * (size_t)N);
            else memset(o, 0, sizeof(float) * (size_t)N);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, inp, K, w, K, 1.0f,
                    out, N);
        return;
    }
#endif
    float *wt = M > 4 ? pack_scratch((size_t)K * N) : NULL;
    if (!wt) {
        matmul_forward_rows(out, inp, w, bias, M, K, N);
        return;
    }
    /* wt(K, N) = w(N, K)^T, in 32x32 blocks to stay in cache. */
#pragma omp parallel for collapse(2) schedule(static)
    for (int n0 = 0; n0 < N; n0 += 32)
        for (int k0 = 0; k0 < K; k0 += 32)
            for (int n = n0; n < n0 + 32 && n < N; n++)
                for (int k = k0; k < k0 + 32 && k < K; k++) wt[(long)k * N + n] = w[(long)n * K + k];
    for (int m = 0; m < M; m++) {
        float *o = out + (long)m * N;
        if (bias)
            memcpy(o, bias, sizeof(float) * (size_t)N);
        else
            memset(o, 0, sizeof(float) * (size_t)N);
    }
    if (use_bf16(M, K, N) && gemm_bf16(out, N, inp, K, 1, wt, N, M, K, N) == 0) return;
    gemm_nn(out, N, inp, K, 1, wt, N, M, K, N, 1);
}

void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                     const float *w, int M, int K, int N) {
#ifdef ANDREA_HAVE_BLAS
    if (use_blas(M, K, N)) {
        if (dinp)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, N, 1.0f, dout, N, w, K,
                        1.0f, dinp, K);
        if (dw)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, M, 1.0f, dout, N, inp, K,
                        1.0f, dw, K);
        dinp = NULL;
        dw = NULL;
    }
#endif
    if (use_bf16(M, K, N)) {
        if (dinp && gemm_bf16(dinp, K, dout, N, 1, w, K, M, N, K) == 0) dinp = NULL;
        if (dw && gemm_bf16(dw, K, dout, 1, N, inp, K, N, M, K) == 0) dw = NULL;
    }
    if (dinp) gemm_nn(dinp, K, dout, N, 1, w, K, M, N, K, 1);   /* (M,N) @ (N,K) */
    if (dw) gemm_nn(dw, K, dout, 1, N, inp, K, N, M, K, 1);     /* (N,M) @ (M,K) */
    if (dbias) {
#pragma omp parallel for schedule(static)
        for (int n0 = 0; n0 < N; n0 += 64) {
            int n1 = n0 + 64 < N ? n0 + 64 : N;
            for (int m = 0; m < M; m++) {
                const float *d = dout + (long)m * N;
                for (int n = n0; n < n1; n++) dbias[n] += d[n];
            }
        }
    }
}
