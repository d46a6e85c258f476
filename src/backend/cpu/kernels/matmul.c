/*
 * matmul.c - the dense products of every linear layer, forward and backward.
 *
 * One engine, andrea_gemm_nn, computes C (+)= A @ B with B row-major, so the inner
 * loop is a broadcast of one A element times a contiguous row of B: that
 * vectorises perfectly and needs no horizontal sums. A is read through
 * strides, which lets the same engine serve all three products:
 *   forward      out  = inp  @ w^T   (B = w^T, gathered while B is packed)
 *   backward     dinp += dout @ w    (A = dout, B = w)
 *   backward     dw   += dout^T @ inp (A = dout read transposed, B = inp)
 * Both operands are packed (MR x KC panels of A, KC x NC blocks of B) and
 * multiplied by an MR x NR register tile: 8 x 32 on AVX-512, 6 x 16 on AVX2+FMA and
 * NEON (tile.h says why). Each C element is summed in
 * k order by exactly one thread, so results do not depend on thread count.
 * The tile is compiled per ISA (AVX-512, AVX2+FMA, NEON, baseline) and chosen
 * at run time from the CPU's features under the cap (andrea_cpu_isa, isa.c).
 */
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/cpu/kernels/act_math.h"
#include "backend/cpu/kernels/act_simd.h"
#include "backend/cpu/kernels/isa_copies.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/tile.h"
#include "backend/cpu/kernels/transpose.h"
#include "util/error.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static const andrea_cpu_engine DEFAULT_ENGINE = {ANDREA_MATMUL_BUILTIN, ANDREA_PRECISION_FP32, -1};

int andrea_blas_available(void) {
#ifdef ANDREA_HAVE_BLAS
    return 1;
#else
    return 0;
#endif
}

/* bf16 serves the products big enough to be matmul-bound, like BLAS. */
static int use_bf16(const andrea_cpu_engine *e, long M, long K, long N) {
    return e->precision == ANDREA_PRECISION_BF16 && M > 4 && M * K * N >= (1L << 18) &&
           andrea_cpu_isa(e->isa) == ANDREA_ISA_AVX512;
}

/* BLAS pays off only on big products; small ones stay on our kernels. The auto engine
 * asks the per-shape measurement (matmul_tune.c); fp32 only. */
static int use_blas(const andrea_cpu_engine *e, int op, long M, long K, long N) {
    if (!andrea_blas_available() || M <= 4 || M * K * N < (1L << 18)) return 0;
    if (e->engine == ANDREA_MATMUL_BLAS) return 1;
    return e->engine == ANDREA_MATMUL_AUTO && e->precision == ANDREA_PRECISION_FP32 &&
           andrea_mm_tune_blas(e->isa, op, (int)M, (int)K, (int)N);
}

#define KC 256
#define NC 512
#define MR_MAX 8 /* the largest tile (AVX-512's 8 x 32), for buffers */
#define NR_MAX 32

typedef float vf8 __attribute__((vector_size(32)));
typedef float vf4 __attribute__((vector_size(16)));

/* A tile: C[0:mr, 0:nr] (+)= A[0:mr, 0:kc] @ Bp[0:kc, 0:nr], A(r, k) = a[r a_rs + k a_cs]
 * (a packed panel: a_rs = 1, a_cs = mr; rows of the caller's matrix: a_rs = lda,
 * a_cs = 1), Bp packed k-major (bp[k * nr + j]), each C element summed in k order; acc = 0
 * overwrites C. The AVX-512, AVX2 and NEON tiles sum the kc products first and add C's old
 * value last (so that C's cache misses overlap the loop, and an overwrite never reads C);
 * the baseline one starts from C's value. Either way the order is fixed by the shapes. */
typedef void (*tile_fn)(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *bp,
                        int kc, int acc);

/* A tile with its geometry: packing and the thread split follow mr and nr. */
typedef struct {
    tile_fn tile;
    int mr, nr, isa;
} gemm_kernel;

#ifdef ANDREA_X86_COPIES
#include <immintrin.h>
typedef float vf16 __attribute__((vector_size(64)));
/* AVX-512: 8 x 32, 16 accumulators of AVX-512's 32 registers (tile.h) */
ANDREA_DEFINE_TILE_8X2(tile8_avx512, ANDREA_TARGET_AVX512, vf16, 16)
ANDREA_TARGET_AVX512 static void tile_avx512(float *c, int ldc, const float *a, long a_rs,
                                             long a_cs, const float *bp, int kc, int acc) {
    tile8_avx512(c, ldc, a, a_rs, a_cs, bp, 32, kc, acc);
}
/* AVX2+FMA: 6 x 16, 12 accumulators of its 16 registers (tile.h) */
ANDREA_DEFINE_TILE_6X2(tile6_avx2, ANDREA_TARGET_AVX2, vf8, 8)
ANDREA_TARGET_AVX2 static void tile_avx2(float *c, int ldc, const float *a, long a_rs,
                                         long a_cs, const float *bp, int kc, int acc) {
    tile6_avx2(c, ldc, a, a_rs, a_cs, bp, 16, kc, acc);
}
#endif
#if defined(__aarch64__)
/* NEON: 6 x 16, 24 accumulators of its 32 q registers (tile.h) */
ANDREA_DEFINE_TILE_6X4(tile6_neon, , vf4, 4)
static void tile_neon(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *bp,
                      int kc, int acc) {
    tile6_neon(c, ldc, a, a_rs, a_cs, bp, 16, kc, acc);
}
#endif
/* Baseline (SSE2 on x86-64, plain 128-bit vectors elsewhere): the 4-row tile twice over
 * an 8 x 32 block, 8 accumulators of 16 registers. */
ANDREA_DEFINE_TILE_4X2(tile4_generic, , vf4, 4)
static void tile_generic(float *c, int ldc, const float *a, long a_rs, long a_cs,
                         const float *bp, int kc, int acc) {
    for (int r = 0; r < 8; r += 4)
        for (int j = 0; j < 32; j += 8)
            tile4_generic(c + (long)r * ldc + j, ldc, a + r * a_rs, a_rs, a_cs, bp + j, 32, kc, acc);
}

static const gemm_kernel *pick_kernel(int cap) { /* a cached feature lookup: cheap */
    static const gemm_kernel generic = {tile_generic, 8, 32, ANDREA_ISA_BASELINE};
    int isa = andrea_cpu_isa(cap);
#ifdef ANDREA_X86_COPIES
    static const gemm_kernel avx512 = {tile_avx512, 8, 32, ANDREA_ISA_AVX512};
    static const gemm_kernel avx2 = {tile_avx2, 6, 16, ANDREA_ISA_AVX2};
    if (isa == ANDREA_ISA_AVX512) return &avx512;
    if (isa == ANDREA_ISA_AVX2) return &avx2;
#elif defined(__aarch64__)
    static const gemm_kernel neon = {tile_neon, 6, 16, ANDREA_ISA_NEON};
    if (isa >= ANDREA_ISA_NEON) return &neon;
#else
    (void)isa;
#endif
    return &generic;
}

/* One product as the threads see it. */
typedef struct {
    float *c;
    int ldc;
    const float *a, *b;
    long a_rs, a_cs, b_rs, b_cs;
    int K, accumulate;
    const matmul_epilogue *epi;
    const gemm_kernel *kern;
} gemm_job;

/* The epilogue on C[m:m+mr, n:n+nr], finished (all of k summed): one copy per ISA, GELU
 * through that ISA's vector code (act_simd.h; at the baseline's scalar code it cost an
 * AVX2 step ~2.5%). */
#define DEFINE_EPILOGUE(SFX, ATTR)                                                            \
    ATTR static void epilogue_##SFX(const matmul_epilogue *e, float *c, int ldc, int m, int n, \
                                    int mr, int nr) {                                         \
        for (int r = 0; r < mr; r++) {                                                        \
            float *cr = c + (long)(m + r) * ldc + n;                                          \
            long o = (long)(m + r) * e->ld + n;                                               \
            float *post = e->post ? e->post + o : NULL;                                       \
            const float *pre = e->post ? NULL : e->pre + o;                                   \
            if (post && e->act == ANDREA_ACT_GELU)                                            \
                gelu_row_##SFX(post, cr, nr);                                                 \
            else if (post && e->act == ANDREA_ACT_RELU)                                       \
                for (int j = 0; j < nr; j++) post[j] = act_relu(cr[j]);                       \
            else if (post)                                                                    \
                for (int j = 0; j < nr; j++) post[j] = act_relu2(cr[j]);                      \
            else if (e->act == ANDREA_ACT_GELU)                                               \
                gelu_grad_row_##SFX(cr, pre, nr);                                             \
            else if (e->act == ANDREA_ACT_RELU)                                               \
                for (int j = 0; j < nr; j++) cr[j] *= act_relu_grad(pre[j]);                  \
            else                                                                              \
                for (int j = 0; j < nr; j++) cr[j] *= act_relu2_grad(pre[j]);                 \
        }                                                                                     \
    }
ANDREA_DEFINE_ISA_COPIES(DEFINE_EPILOGUE)

static void epilogue_apply(int isa, const matmul_epilogue *e, float *c, int ldc, int m, int n,
                           int mr, int nr) {
    ANDREA_ISA_PICK(isa, epilogue)(e, c, ldc, m, n, mr, nr);
}

/* The epilogue over all of C(M, N), for the paths that cannot fuse it (BLAS, bf16, rows). */
static void epilogue_apply_all(int isa, const matmul_epilogue *e, float *c, int M, int N) {
    if (!e) return;
#pragma omp parallel for schedule(static) if ((long)M * N >= (1L << 15))
    for (int m = 0; m < M; m++) epilogue_apply(isa, e, c, N, m, 0, 1, N);
}

/* Without scratch memory (malloc failed): the same product, plain loops, k order. */
static void block_plain(const gemm_job *j, int m0, int mr, int n0, int nr, int k0, int kc) {
    for (int r = 0; r < mr; r++) {
        float *cr = j->c + (long)(m0 + r) * j->ldc + n0;
        if (k0 == 0 && !j->accumulate) memset(cr, 0, sizeof(float) * (size_t)nr);
        for (int k = k0; k < k0 + kc; k++) {
            float av = j->a[(m0 + r) * j->a_rs + k * j->a_cs];
            for (int col = 0; col < nr; col++) cr[col] += av * j->b[k * j->b_rs + (n0 + col) * j->b_cs];
        }
    }
    if (j->epi && k0 + kc == j->K) epilogue_apply(j->kern->isa, j->epi, j->c, j->ldc, m0, n0, mr, nr);
}

/* Per-thread packed copies of one mr x KC panel of A and one KC x NC block of B (nr-column
 * panels, k-major), zero-padded to whole panels. The B block (512 KiB) stays in L2 while
 * every A panel of the thread's rows passes over it, and the A panel (8 KiB) stays in L1
 * while the B panels stream by; ragged edges run the same tile on padding. */
static _Thread_local float *g_apanel = NULL, *g_bpanel = NULL;

/* n floats, n a tile's side (6, 8, 16, 32) or not: the tiles' sides are copied with
 * constant sizes, so each is a few vector moves instead of a memmove call per row */
static inline void copy_floats(float *dst, const float *src, int n) {
    switch (n) {
    case 6: memcpy(dst, src, sizeof(float) * 6); return;
    case 8: memcpy(dst, src, sizeof(float) * 8); return;
    case 16: memcpy(dst, src, sizeof(float) * 16); return;
    case 32: memcpy(dst, src, sizeof(float) * 32); return;
    default: memcpy(dst, src, sizeof(float) * (size_t)n);
    }
}

static void pack_a(float *ap, const float *a, long a_rs, long a_cs, int rows, int kc, int MR) {
    if (rows == MR && a_rs == 1) { /* A transposed (dw): each k's MR rows are adjacent */
        for (int k = 0; k < kc; k++) copy_floats(ap + k * MR, a + k * a_cs, MR);
        return;
    }
    if (rows < MR) memset(ap, 0, sizeof(float) * (size_t)MR * (size_t)kc);
    for (int r = 0; r < rows; r++) /* read along k, the contiguous direction when a_cs = 1 */
        for (int k = 0; k < kc; k++) ap[k * MR + r] = a[r * a_rs + k * a_cs];
}

/* B's rows copied whole (b_cs = 1), k outermost: each row of the block is read once, front
 * to back, and dealt out to the panels. Panel-major order read 64 bytes per row of the
 * weight, the rows a matrix width apart, and stalled on DRAM (dinp and dw packing were
 * ~4% of a gpt2-124m step at AVX2). */
static void pack_b_rows(float *bp, const float *b, long b_rs, int kc, int cols, int NR) {
    int full = cols / NR * NR;
    for (int k = 0; k < kc; k++) {
        const float *row = b + k * b_rs;
        float *dst = bp + (long)k * NR;
        for (int p = 0; p < full; p += NR) copy_floats(dst + (long)p * kc, row + p, NR);
    }
    if (full == cols) return;
    float *edge = bp + (long)full * kc; /* the ragged last panel, zero-padded */
    memset(edge, 0, sizeof(float) * (size_t)NR * (size_t)kc);
    for (int k = 0; k < kc; k++)
        memcpy(edge + (long)k * NR, b + k * b_rs + full, sizeof(float) * (size_t)(cols - full));
}

/* B(k, n) = b[k * b_rs + n * b_cs]: rows copied whole when b_cs = 1, else gathered
 * along k (b_rs = 1: B is a transposed weight matrix, read along its rows), in register
 * transposes of 16 x 16 (AVX-512) or 8 x 8 (AVX2) where the kernel's ISA has them. */
static void pack_b(float *bp, const float *b, long b_rs, long b_cs, int kc, int cols,
                   const gemm_kernel *kern) {
    const int NR = kern->nr;
    if (b_cs == 1) return pack_b_rows(bp, b, b_rs, kc, cols, NR);
    for (int p = 0; p < cols; p += NR, bp += (long)NR * kc) {
        int w = cols - p < NR ? cols - p : NR;
        if (w < NR) memset(bp, 0, sizeof(float) * (size_t)NR * (size_t)kc);
        int k0 = 0;
#ifdef ANDREA_X86_COPIES
        if (kern->isa == ANDREA_ISA_AVX512 && b_rs == 1 && w == NR) /* 16 x 16 blocks */
            for (; k0 + 16 <= kc; k0 += 16)
                for (int h = 0; h < NR; h += 16)
                    transpose16(bp + (long)k0 * NR + h, NR, b + (p + h) * b_cs + k0, b_cs);
        if (kern->isa == ANDREA_ISA_AVX2 && b_rs == 1 && w == NR) /* 8 x 8 blocks */
            for (; k0 + 8 <= kc; k0 += 8)
                for (int h = 0; h < NR; h += 8)
                    transpose8(bp + (long)k0 * NR + h, NR, b + (p + h) * b_cs + k0, b_cs);
#endif
        for (int j = 0; j < w; j++) {
            const float *bj = b + (p + j) * b_cs;
            for (int k = k0; k < kc; k++) bp[k * NR + j] = bj[k * b_rs];
        }
    }
}

/* C[m0:m1, n0:n1] (+)= A[m0:m1, :] @ B[:, n0:n1], then the epilogue, by one thread. */
static void gemm_part(const gemm_job *j, int m0, int m1, int n0, int n1) {
    if (!g_apanel) g_apanel = malloc(sizeof(float) * MR_MAX * KC);
    if (!g_bpanel) g_bpanel = malloc(sizeof(float) * KC * NC);
    const gemm_kernel *kern = j->kern;
    const int MR = kern->mr, NR = kern->nr;
    int K = j->K, ldc = j->ldc;
    for (int nb = n0; nb < n1; nb += NC) {
        int cols = n1 - nb < NC ? n1 - nb : NC;
        for (int k0 = 0; k0 < K; k0 += KC) {
            int kc = K - k0 < KC ? K - k0 : KC;
            int first = k0 == 0 && !j->accumulate, last = k0 + kc == K;
            if (!g_apanel || !g_bpanel) {
                block_plain(j, m0, m1 - m0, nb, cols, k0, kc);
                continue;
            }
            pack_b(g_bpanel, j->b + k0 * j->b_rs + nb * j->b_cs, j->b_rs, j->b_cs, kc, cols, kern);
            for (int m = m0; m < m1; m += MR) {
                int mr = m1 - m < MR ? m1 - m : MR;
                /* rows along k (a_cs = 1) are read in place: MR short streams; other
                 * layouts and ragged rows are packed into an MR-row panel */
                const float *am = j->a + m * j->a_rs + k0 * j->a_cs;
                long p_rs = j->a_rs, p_cs = j->a_cs;
                if (p_cs != 1 || mr < MR) {
                    pack_a(g_apanel, am, p_rs, p_cs, mr, kc, MR);
                    am = g_apanel, p_rs = 1, p_cs = MR;
                }
                for (int n = 0; n < cols; n += NR) {
                    int nr = cols - n < NR ? cols - n : NR;
                    const float *bp = g_bpanel + (long)n * kc;
                    float *cmn = j->c + (long)m * ldc + nb + n;
                    if (mr == MR && nr == NR) {
                        kern->tile(cmn, ldc, am, p_rs, p_cs, bp, kc, !first);
                    } else {
                        float t[MR_MAX * NR_MAX] = {0}; /* ragged edge: through a full-size tile */
                        if (!first)
                            for (int r = 0; r < mr; r++)
                                memcpy(t + r * NR, cmn + (long)r * ldc, sizeof(float) * (size_t)nr);
                        kern->tile(t, NR, am, p_rs, p_cs, bp, kc, !first);
                        for (int r = 0; r < mr; r++)
                            memcpy(cmn + (long)r * ldc, t + r * NR, sizeof(float) * (size_t)nr);
                    }
                    /* while the tile is still in L1 */
                    if (last && j->epi) epilogue_apply(kern->isa, j->epi, j->c, ldc, m, nb + n, mr, nr);
                }
            }
        }
    }
}

static void gemm_run(const gemm_job *j, int M, int N) {
    if (j->K <= 0) { /* no k blocks: C is only cleared and finished */
        if (!j->accumulate)
            for (int m = 0; m < M; m++) memset(j->c + (long)m * j->ldc, 0, sizeof(float) * (size_t)N);
        if (j->epi)
            for (int m = 0; m < M; m++) epilogue_apply(j->kern->isa, j->epi, j->c, j->ldc, m, 0, 1, N);
        return;
    }
    /* Each thread takes a slab of rows, or chunks of columns as it comes free (gemm_split,
     * gemm_col_chunk), and packs only the B it needs, once per k block. Each C element is
     * summed in k order by one thread. Rows stay a fixed split: a row chunk packs all of B. */
#pragma omp parallel if ((long)M * N * j->K >= (1L << 16))
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num(), nt = omp_get_num_threads();
#endif
        const int mr = j->kern->mr, nr = j->kern->nr, a_packed = j->a_cs != 1;
        if (nt > 1 && M <= GEMM_DYNAMIC_MAX_M &&
            gemm_split_by_cols(M, j->K, N, a_packed, mr, nr, NC, nt)) {
            int chunk = gemm_col_chunk(N, nr, NC, nt), chunks = (N + chunk - 1) / chunk;
#pragma omp for schedule(dynamic, 1) nowait /* the region's end is the barrier */
            for (int c = 0; c < chunks; c++)
                gemm_part(j, 0, M, c * chunk, N - c * chunk < chunk ? N : (c + 1) * chunk);
        } else {
            int m0, m1, n0, n1;
            gemm_split(M, j->K, N, a_packed, mr, nr, NC, t, nt, &m0, &m1, &n0, &n1);
            if (m0 < m1 && n0 < n1) gemm_part(j, m0, m1, n0, n1);
        }
    }
}

void andrea_gemm_nn_isa(int isa, float *c, int ldc, const float *a, long a_rs, long a_cs,
                        const float *b, long b_rs, long b_cs, int M, int K, int N, int accumulate) {
    gemm_job j = {c, ldc, a, b, a_rs, a_cs, b_rs, b_cs, K, accumulate, NULL, pick_kernel(isa)};
    gemm_run(&j, M, N);
}

void andrea_gemm_nn(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *b, long b_rs,
             long b_cs, int M, int K, int N, int accumulate) {
    andrea_gemm_nn_isa(-1, c, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, K, N, accumulate);
}

/* A few rows: dot products straight from w, no packing (generation, tiny batches): the
 * decoding product with M inputs, each w row read once for all of them. */
static void matmul_forward_rows(int isa, float *out, const float *inp, const float *w,
                                const float *bias, int M, int K, int N) {
    andrea_matvec_rows_isa(isa, out, inp, w, ANDREA_QUANT_NONE, NULL, bias, K, N, M);
}

/* Each row of out starts as resid + bias (either may be NULL): the products then add to it. */
static void init_rows(float *out, const float *resid, const float *bias, int M, int N) {
#pragma omp parallel for schedule(static) if ((long)M * N >= (1L << 16))
    for (int m = 0; m < M; m++) {
        float *o = out + (long)m * N;
        const float *r = resid ? resid + (long)m * N : NULL;
        if (r && bias)
            for (int n = 0; n < N; n++) o[n] = r[n] + bias[n];
        else if (r || bias)
            memcpy(o, r ? r : bias, sizeof(float) * (size_t)N);
        else
            memset(o, 0, sizeof(float) * (size_t)N);
    }
}

/* out = resid + inp @ w^T + bias (resid NULL: none), then the epilogue. */
static void forward_epi(const andrea_cpu_engine *e, float *out, const float *inp, const float *w,
                        const float *bias, const float *resid, int M, int K, int N,
                        const matmul_epilogue *epi) {
    if (!e) e = &DEFAULT_ENGINE;
    if (use_blas(e, ANDREA_MM_FWD, M, K, N)) {
        init_rows(out, resid, bias, M, N);
        andrea_blas_gemm(0, 1, M, N, K, inp, K, w, K, out, N);
        epilogue_apply_all(pick_kernel(e->isa)->isa, epi, out, M, N);
        return;
    }
    if (M <= 4 && !resid) {
        matmul_forward_rows(e->isa, out, inp, w, bias, M, K, N);
        epilogue_apply_all(pick_kernel(e->isa)->isa, epi, out, M, N);
        return;
    }
    init_rows(out, resid, bias, M, N);
    /* B = w^T, read in place: B(k, n) = w[n K + k] */
    if (use_bf16(e, M, K, N) && andrea_gemm_bf16(out, N, inp, K, 1, w, 1, K, M, K, N) == 0) {
        epilogue_apply_all(pick_kernel(e->isa)->isa, epi, out, M, N);
        return;
    }
    gemm_job j = {out, N, inp, w, K, 1, 1, K, K, 1, epi, pick_kernel(e->isa)};
    gemm_run(&j, M, N);
}

void andrea_mm_forward(const andrea_cpu_engine *e, float *out, const float *inp, const float *w,
                       const float *bias, int M, int K, int N) {
    forward_epi(e, out, inp, w, bias, NULL, M, K, N, NULL);
}

void andrea_mm_forward_residual(const andrea_cpu_engine *e, float *out, const float *inp,
                                const float *w, const float *bias, const float *resid, int M,
                                int K, int N) {
    forward_epi(e, out, inp, w, bias, resid, M, K, N, NULL);
}

void andrea_mm_forward_act(const andrea_cpu_engine *e, float *pre, float *post, const float *inp,
                           const float *w, const float *bias, int M, int K, int N, int act) {
    matmul_epilogue ep = {act, post, NULL, N};
    forward_epi(e, pre, inp, w, bias, NULL, M, K, N, &ep);
}

/* dinp (+)= dout @ w, then the epilogue; dw (+)= dout^T @ inp; dbias (+)= column sums
 * (overwritten with dw_init). */
static void backward_epi(const andrea_cpu_engine *e, float *dinp, int accumulate, float *dw,
                         float *dbias, int dw_init, const float *dout, const float *inp,
                         const float *w, int M, int K, int N, const matmul_epilogue *epi) {
    if (!e) e = &DEFAULT_ENGINE;
    /* which engine for each product, decided once */
    int blas_dinp = dinp && use_blas(e, ANDREA_MM_DINP, M, K, N);
    int blas_dw = dw && use_blas(e, ANDREA_MM_DW, M, K, N);
    int bf16 = !blas_dinp && !blas_dw && use_bf16(e, M, K, N);
    const gemm_kernel *tile = pick_kernel(e->isa);
    if (dinp && !accumulate && (blas_dinp || bf16)) /* those engines only accumulate */
        for (int m = 0; m < M; m++) memset(dinp + (long)m * K, 0, sizeof(float) * (size_t)K);
    if (dbias && dw_init) memset(dbias, 0, sizeof(float) * (size_t)N);
    if (dw && dw_init && (blas_dw || bf16)) { /* those engines only accumulate */
        memset(dw, 0, sizeof(float) * (size_t)N * (size_t)K);
        dw_init = 0;
    }
    if (blas_dinp) {
        andrea_blas_gemm(0, 0, M, K, N, dout, N, w, K, dinp, K);
        epilogue_apply_all(pick_kernel(e->isa)->isa, epi, dinp, M, K);
        dinp = NULL;
    }
    if (blas_dw) {
        andrea_blas_gemm(1, 0, N, K, M, dout, N, inp, K, dw, K);
        dw = NULL;
    }
    if (bf16) {
        if (dinp && andrea_gemm_bf16(dinp, K, dout, N, 1, w, K, 1, M, N, K) == 0) {
            epilogue_apply_all(pick_kernel(e->isa)->isa, epi, dinp, M, K);
            dinp = NULL;
        }
        if (dw && andrea_gemm_bf16(dw, K, dout, 1, N, inp, K, 1, N, M, K) == 0) dw = NULL;
        accumulate = 1; /* zeroed above: a fallback to fp32 adds to the zeros */
    }
    if (dinp) { /* (M,N) @ (N,K) */
        gemm_job j = {dinp, K, dout, w, N, 1, K, 1, N, accumulate, epi, tile};
        gemm_run(&j, M, K);
    }
    if (dw) { /* (N,M) @ (M,K) */
        gemm_job j = {dw, K, dout, inp, 1, N, K, 1, M, !dw_init, NULL, tile};
        gemm_run(&j, N, K);
    }
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

void andrea_mm_backward(const andrea_cpu_engine *e, float *dinp, float *dw, float *dbias,
                        const float *dout, const float *inp, const float *w, int M, int K, int N,
                        int dw_init) {
    backward_epi(e, dinp, 1, dw, dbias, dw_init, dout, inp, w, M, K, N, NULL);
}

void andrea_mm_backward_act(const andrea_cpu_engine *e, float *dpre, float *dw, float *dbias,
                            const float *dout, const float *post, const float *w, const float *pre,
                            int M, int K, int N, int act, int dw_init) {
    matmul_epilogue ep = {act, NULL, pre, K};
    backward_epi(e, dpre, 0, dw, dbias, dw_init, dout, post, w, M, K, N, &ep);
}
