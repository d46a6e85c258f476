/*
 * attention_flash.c - causal attention without the T x T matrix (FlashAttention-2
 * on the CPU): the same maths as attention.c, but the probabilities are never stored.
 *
 * Forward. Keys are visited in blocks of FLASH_BK with an online softmax: each
 * query row keeps a running max m, a running sum l = sum_j exp(s_j - m) and an
 * unnormalised output o = sum_j exp(s_j - m) v_j. When a block raises the max
 * to m', the old l and o are multiplied by exp(m - m') so that every term is
 * relative to the same max again; at the end out = o / l. This is exactly the
 * softmax of attention.c, only summed in pieces. lse_i = m + log(l) is saved:
 * it is all the backward needs to rebuild a row of probabilities.
 *
 * Backward. p_ij = exp(s_ij - lse_i) recomputes the forward's probability from
 * q, k and lse alone. With D_i = dout_i . out_i (= sum_j p_ij dP_ij, the softmax
 * backward's row term, from the saved output instead of the T x T matrix):
 *     dP_ij = dout_i . v_j,   dS_ij = p_ij (dP_ij - D_i)
 *     dv_j += p_ij dout_i,    dq_i += scale dS_ij k_j,   dk_j += scale dS_ij q_i
 * Key blocks outside, query rows inside, so one block's k, v, dk and dv stay in
 * cache while the rows stream past.
 *
 * Tiles. For each tile of FLASH_BQ query rows x FLASH_BK keys every step is a
 * small matrix product through one register-tiled kernel, mm: S = Q K^T and
 * dP = dout V^T (the block's k and v transposed into a stack buffer, so that the
 * inner loop runs along keys: full vectors, no horizontal sums, which a q.k dot
 * over HS = 16..64 channels is too short to amortise), then O += P V,
 * dQ += dS K, dV += P^T dout, dK += dS^T Q (transposes read through strides).
 * Blocks above the diagonal are skipped; inside a diagonal tile the masked
 * entries are computed, then set to 0 in P and dS (exact zeros added). Channels
 * go FLASH_DC at a time, so every buffer is a fixed-size stack array (~48 KiB
 * in the backward) whatever HS is: no allocation, nothing that can fail. D_i is
 * recomputed for each key block (one dot per row and block, ~1% of the work)
 * instead of being kept in an O(T) buffer.
 *
 * Determinism. One (batch, head) pair is one thread's; every sum runs in a fixed
 * order (channels in order for scores, keys in order for outputs, rows in order
 * for dk and dv), so results do not depend on the thread count. The kernels are
 * compiled for AVX-512, AVX2+FMA and the baseline and picked from the CPU at run
 * time, as matmul.c does; the summation order is the same in all three, but FMA
 * rounds differently, so results can differ in the last bits between CPUs, never
 * between runs. Exponentials use andrea_expf's method (relative error < 2e-7): in the
 * baseline copy andrea_expf itself, which vectorises where libm's expf does not; in the
 * AVX2 and AVX-512 copies the same polynomial in intrinsics (act_simd.h), because there
 * GCC 12 leaves andrea_expf's loops scalar.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/kernels/act_simd.h"
#include "backend/cpu/kernels/fastmath.h"
#include "backend/cpu/kernels/isa_copies.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/tile.h"

#define FLASH_BK 64 /* keys per block */
#define FLASH_BQ 32 /* query rows per tile */
#define FLASH_DC 64 /* channels per transposed chunk */

/* Every row of a query tile must see the first key of each block it visits. */
_Static_assert(FLASH_BK % FLASH_BQ == 0, "key blocks are whole query tiles");

/* Everything below is inlined into the per-ISA entry points at the end, so it is
 * compiled once for each target. */
#define FLASH_INLINE static inline __attribute__((always_inline))

FLASH_INLINE int imin(int a, int b) { return a < b ? a : b; }

/* xt[c * FLASH_BK + j] = x[j * stride + c] for j < nk, c < nc. */
FLASH_INLINE void transpose_block(float *xt, const float *x, long stride, int nk, int nc) {
    for (int j = 0; j < nk; j++)
        for (int c = 0; c < nc; c++) xt[c * FLASH_BK + j] = x[j * stride + c];
}

/* ---- the one product: C(M, N) += A(M, K) @ B(K, N) ------------------------------------
 * A(m, k) = a[m * a_rs + k * a_cs] (any strides: transposes are free), B and C
 * row-major with row strides ldb, ldc. Every C element is summed in k order, in
 * the register tiles and at the edges alike, so all tile shapes round alike.
 * Register tiles (tile.h): 8 rows x 2 vectors where the ISA has 32 registers
 * (AVX-512), 4 rows x 2 vectors, then 4 rows x 1 vector, then plain loops. */
typedef void (*mm_fn)(float *c, long ldc, const float *a, long a_rs, long a_cs, const float *b,
                      long ldb, int M, int K, int N);

/* Fewer than 4 rows or one vector of columns: plain loops, the same k order. */
FLASH_INLINE void tile_edge(float *c, long ldc, const float *a, long a_rs, long a_cs,
                            const float *b, long ldb, int K, int mr, int nr) {
    for (int r = 0; r < mr; r++)
        for (int k = 0; k < K; k++) {
            float ar = a[r * a_rs + k * a_cs];
            for (int n = 0; n < nr; n++) c[r * ldc + n] += ar * b[k * ldb + n];
        }
}

/* One copy per instruction set, with vectors of its own register width (VW floats):
 * a GCC vector wider than the target's registers is lowered through memory and
 * ran 5-10x slower than plain loops. Vectors are loaded with memcpy: unaligned. */
#define DEFINE_MM(SFX, ATTR, VW, ROWS, TILE)                                                \
    typedef float vf_##SFX __attribute__((vector_size(VW * 4)));                             \
    ANDREA_DEFINE_TILE_4X2(tile_4x2v_##SFX, ATTR, vf_##SFX, VW)                               \
    ATTR static inline void tile_4x1v_##SFX(float *c, long ldc, const float *a, long a_rs,   \
                                            long a_cs, const float *b, long ldb, int K) {    \
        vf_##SFX c0, c1, c2, c3, b0;                                                         \
        size_t vb = sizeof b0;                                                               \
        memcpy(&c0, c, vb);                                                                  \
        memcpy(&c1, c + ldc, vb);                                                            \
        memcpy(&c2, c + 2 * ldc, vb);                                                        \
        memcpy(&c3, c + 3 * ldc, vb);                                                        \
        for (int k = 0; k < K; k++) {                                                        \
            memcpy(&b0, b + k * ldb, vb);                                                    \
            const float *ak = a + k * a_cs;                                                  \
            c0 += ak[0] * b0;                                                                \
            c1 += ak[a_rs] * b0;                                                             \
            c2 += ak[2 * a_rs] * b0;                                                         \
            c3 += ak[3 * a_rs] * b0;                                                         \
        }                                                                                    \
        memcpy(c, &c0, vb);                                                                  \
        memcpy(c + ldc, &c1, vb);                                                            \
        memcpy(c + 2 * ldc, &c2, vb);                                                        \
        memcpy(c + 3 * ldc, &c3, vb);                                                        \
    }                                                                                        \
    /* rows m .. m+mr-1 (mr <= 4) from column n on */                                         \
    ATTR static inline void mm_rows4_##SFX(float *cm, long ldc, const float *am, long a_rs,   \
                                           long a_cs, const float *b, long ldb, int mr, int K,  \
                                           int n, int N) {                                    \
        if (mr == 4) {                                                                       \
            for (; n + 2 * VW <= N; n += 2 * VW)                                             \
                tile_4x2v_##SFX(cm + n, ldc, am, a_rs, a_cs, b + n, ldb, K, 1);              \
            for (; n + VW <= N; n += VW)                                                     \
                tile_4x1v_##SFX(cm + n, ldc, am, a_rs, a_cs, b + n, ldb, K);                 \
        }                                                                                    \
        if (n < N) tile_edge(cm + n, ldc, am, a_rs, a_cs, b + n, ldb, K, mr, N - n);         \
    }                                                                                        \
    ATTR static void mm_##SFX(float *c, long ldc, const float *a, long a_rs, long a_cs,       \
                              const float *b, long ldb, int M, int K, int N) {               \
        int m = 0;                                                                           \
        if (ROWS) /* 8-row (AVX-512) or 6-row (AVX2) tiles: 16 or 12 accumulators */         \
            for (; m + (ROWS) <= M; m += (ROWS)) {                                           \
                float *cm = c + m * ldc;                                                     \
                const float *am = a + m * a_rs;                                              \
                int n = 0;                                                                   \
                for (; n + 2 * VW <= N; n += 2 * VW)                                         \
                    TILE(cm + n, ldc, am, a_rs, a_cs, b + n, ldb, K, 1);                     \
                mm_rows4_##SFX(cm, ldc, am, a_rs, a_cs, b, ldb, 4, K, n, N);                 \
                mm_rows4_##SFX(cm + 4 * ldc, ldc, am + 4 * a_rs, a_rs, a_cs, b, ldb,         \
                               (ROWS) - 4, K, n, N);                                         \
            }                                                                                \
        for (; m < M; m += 4)                                                                \
            mm_rows4_##SFX(c + m * ldc, ldc, a + m * a_rs, a_rs, a_cs, b, ldb, imin(4, M - m), \
                           K, 0, N);                                                         \
    }

/* ---- the softmax rows, per ISA ------------------------------------------------------ */

/* Forward: p_j = exp(s_j scale - m) for j < jn; returns their sum. Backward: the exps
 * recomputed, p_j = exp(s_j scale - l), and the score gradients ds_j = p_j (dp_j - D) scale.
 * GCC 12 leaves these loops scalar in AVX2 and AVX-512 functions ("control flow in loop"
 * from andrea_expf's clamps), where they were most of the kernel outside its products:
 * those ISAs run the same arithmetic through act_simd.h's vector exp. */
typedef float (*softmax_fwd_fn)(float *p, int jn, float scale, float m);
typedef void (*softmax_bwd_fn)(float *p, float *ds, int jn, float scale, float l, float D);

FLASH_INLINE float softmax_fwd_generic(float *p, int jn, float scale, float m) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < jn; j++) {
        p[j] = andrea_expf(p[j] * scale - m);
        sum += p[j];
    }
    return sum;
}

FLASH_INLINE void softmax_bwd_generic(float *p, float *ds, int jn, float scale, float l,
                                      float D) {
#pragma omp simd
    for (int j = 0; j < jn; j++) {
        float pj = andrea_expf(p[j] * scale - l);
        p[j] = pj;
        ds[j] = pj * (ds[j] - D) * scale;
    }
}

#ifdef ANDREA_X86_COPIES
#define DEFINE_SOFTMAX_ROWS(SFX, ATTR, P, V, W, EXP, HSUM)                                    \
    ATTR static inline float softmax_fwd_##SFX(float *p, int jn, float scale, float m) {      \
        V acc = P##_setzero_ps();                                                             \
        int j = 0;                                                                            \
        for (; j + (W) <= jn; j += (W)) {                                                     \
            V pj = EXP(P##_fmsub_ps(P##_loadu_ps(p + j), P##_set1_ps(scale), P##_set1_ps(m))); \
            P##_storeu_ps(p + j, pj);                                                         \
            acc = P##_add_ps(acc, pj);                                                        \
        }                                                                                     \
        return HSUM(acc) + softmax_fwd_generic(p + j, jn - j, scale, m); /* the tail */       \
    }                                                                                         \
    ATTR static inline void softmax_bwd_##SFX(float *p, float *ds, int jn, float scale,        \
                                               float l, float D) {                            \
        int j = 0;                                                                            \
        for (; j + (W) <= jn; j += (W)) {                                                     \
            V pj = EXP(P##_fmsub_ps(P##_loadu_ps(p + j), P##_set1_ps(scale), P##_set1_ps(l))); \
            P##_storeu_ps(p + j, pj);                                                         \
            V d = P##_mul_ps(pj, P##_sub_ps(P##_loadu_ps(ds + j), P##_set1_ps(D)));           \
            P##_storeu_ps(ds + j, P##_mul_ps(d, P##_set1_ps(scale)));                         \
        }                                                                                     \
        softmax_bwd_generic(p + j, ds + j, jn - j, scale, l, D); /* the tail */               \
    }
DEFINE_SOFTMAX_ROWS(avx2, ANDREA_TARGET_AVX2, _mm256, __m256, 8, exp_avx2, andrea_hsum_avx2)
DEFINE_SOFTMAX_ROWS(avx512, ANDREA_TARGET_AVX512, _mm512, __m512, 16, exp_avx512,
                    _mm512_reduce_add_ps)
#endif

/* ---- forward ------------------------------------------------------------------------- */

FLASH_INLINE void flash_forward_head(float *out, float *lse, const float *qkv, int b, int h,
                                     int T, int C, int NH, mm_fn mm, softmax_fwd_fn softmax_fwd) {
    int HS = C / NH;
    /* One float multiply per score, the same constant as attention.c. */
    float scale = 1.0f / sqrtf((float)HS);
    long C3 = 3L * C;
    const float *Q = qkv + (long)b * T * C3 + h * HS, *K = Q + C, *V = Q + 2 * C;
    float *O = out + (long)b * T * C + h * HS;
    float *L = lse + ((long)b * NH + h) * T;
    _Alignas(64) float kt[FLASH_DC * FLASH_BK]; /* one key block, channel-major */
    _Alignas(64) float s[FLASH_BQ * FLASH_BK];  /* the tile's scores, then exp(s - m) */
    float m[FLASH_BQ], l[FLASH_BQ];
    for (int i0 = 0; i0 < T; i0 += FLASH_BQ) {
        int nq = imin(FLASH_BQ, T - i0);
        for (int r = 0; r < nq; r++) {
            m[r] = -INFINITY;
            l[r] = 0.0f;
            memset(O + (long)(i0 + r) * C, 0, sizeof(float) * (size_t)HS);
        }
        /* Key blocks up to the tile's last row, none above the diagonal. Blocks are
         * a multiple of tiles, so every row of the tile sees key j0. */
        for (int j0 = 0; j0 < i0 + nq; j0 += FLASH_BK) {
            int nk = imin(FLASH_BK, i0 + nq - j0); /* keys the tile's last row sees */
            for (int r = 0; r < nq; r++) memset(s + r * FLASH_BK, 0, sizeof(float) * (size_t)nk);
            for (int c0 = 0; c0 < HS; c0 += FLASH_DC) {
                int nc = imin(FLASH_DC, HS - c0);
                transpose_block(kt, K + (long)j0 * C3 + c0, C3, nk, nc);
                mm(s, FLASH_BK, Q + (long)i0 * C3 + c0, C3, 1, kt, FLASH_BK, nq, nc, nk);
            }
            for (int r = 0; r < nq; r++) {
                int jn = imin(nk, i0 + r + 1 - j0); /* causal: row i sees keys j0 .. i */
                float *p = s + r * FLASH_BK;
                /* The row max of the raw scores: scale > 0 keeps the order, so the scaled
                 * max is max * scale, and the scale is applied inside the exp's pass.
                 * (Clang 14 cannot vectorise a max under strict FP and says so; GCC can.) */
                float mb = p[0];
#if defined(__GNUC__) && !defined(__clang__)
#pragma omp simd reduction(max : mb)
#endif
                for (int j = 1; j < jn; j++) mb = p[j] > mb ? p[j] : mb;
                mb *= scale;
                float mold = m[r], mnew = mold > mb ? mold : mb;
                /* mnew is finite (jn >= 1), so every exponent is <= 0 and exp <= 1. */
                float sum = softmax_fwd(p, jn, scale, mnew);
                for (int j = jn; j < nk; j++) p[j] = 0.0f; /* masked: adds exact zeros below */
                if (mnew != mold) {
                    /* Rescale what was summed against the old max. On the first block
                     * l and o are 0 and the factor (exp(-inf) -> ~1e-38) is moot. */
                    float corr = andrea_expf(mold - mnew), *o = O + (long)(i0 + r) * C;
                    l[r] *= corr;
                    for (int c = 0; c < HS; c++) o[c] *= corr;
                    m[r] = mnew;
                }
                l[r] += sum;
            }
            /* o += P V over the block's keys */
            mm(O + (long)i0 * C, C, s, FLASH_BK, 1, V + (long)j0 * C3, C3, nq, nk, HS);
        }
        for (int r = 0; r < nq; r++) {
            /* l >= 1: the max term contributes exp(0) = 1. */
            float inv = 1.0f / l[r], *o = O + (long)(i0 + r) * C;
            for (int c = 0; c < HS; c++) o[c] *= inv;
            L[i0 + r] = m[r] + logf(l[r]);
        }
    }
}

/* ---- backward ------------------------------------------------------------------------ */

FLASH_INLINE void flash_backward_head(float *dqkv, const float *dout, const float *qkv,
                                      const float *out, const float *lse, int b, int h, int T,
                                      int C, int NH, mm_fn mm, softmax_bwd_fn softmax_bwd) {
    int HS = C / NH;
    float scale = 1.0f / sqrtf((float)HS);
    long C3 = 3L * C;
    const float *Q = qkv + (long)b * T * C3 + h * HS, *K = Q + C, *V = Q + 2 * C;
    const float *G = dout + (long)b * T * C + h * HS, *O = out + (long)b * T * C + h * HS;
    const float *L = lse + ((long)b * NH + h) * T;
    float *dQ = dqkv + (long)b * T * C3 + h * HS, *dK = dQ + C, *dV = dQ + 2 * C;
    _Alignas(64) float kt[FLASH_DC * FLASH_BK], vt[FLASH_DC * FLASH_BK];
    _Alignas(64) float p[FLASH_BQ * FLASH_BK];  /* scores, then probabilities */
    _Alignas(64) float ds[FLASH_BQ * FLASH_BK]; /* dP, then scale * dS */
    int one_chunk = HS <= FLASH_DC; /* then k, v are transposed once per key block */
    for (int j0 = 0; j0 < T; j0 += FLASH_BK) {
        int nk = imin(FLASH_BK, T - j0);
        if (one_chunk) {
            transpose_block(kt, K + (long)j0 * C3, C3, nk, HS);
            transpose_block(vt, V + (long)j0 * C3, C3, nk, HS);
        }
        /* Rows before j0 do not see this block (causal). */
        for (int i0 = j0; i0 < T; i0 += FLASH_BQ) {
            int nq = imin(FLASH_BQ, T - i0);
            for (int r = 0; r < nq; r++) {
                memset(p + r * FLASH_BK, 0, sizeof(float) * (size_t)nk);
                memset(ds + r * FLASH_BK, 0, sizeof(float) * (size_t)nk);
            }
            for (int c0 = 0; c0 < HS; c0 += FLASH_DC) {
                int nc = imin(FLASH_DC, HS - c0);
                if (!one_chunk) {
                    transpose_block(kt, K + (long)j0 * C3 + c0, C3, nk, nc);
                    transpose_block(vt, V + (long)j0 * C3 + c0, C3, nk, nc);
                }
                mm(p, FLASH_BK, Q + (long)i0 * C3 + c0, C3, 1, kt, FLASH_BK, nq, nc, nk);
                mm(ds, FLASH_BK, G + (long)i0 * C + c0, C, 1, vt, FLASH_BK, nq, nc, nk);
            }
            for (int r = 0; r < nq; r++) {
                int i = i0 + r, jn = imin(nk, i + 1 - j0);
                const float *g = G + (long)i * C, *o = O + (long)i * C;
                float Di = 0.0f;
#pragma omp simd reduction(+ : Di)
                for (int c = 0; c < HS; c++) Di += g[c] * o[c];
                float *pr = p + r * FLASH_BK, *dsr = ds + r * FLASH_BK;
                softmax_bwd(pr, dsr, jn, scale, L[i], Di);
                for (int j = jn; j < nk; j++) pr[j] = dsr[j] = 0.0f; /* masked */
            }
            /* dq += dS K;  dv += P^T dout;  dk += dS^T q */
            mm(dQ + (long)i0 * C3, C3, ds, FLASH_BK, 1, K + (long)j0 * C3, C3, nq, nk, HS);
            mm(dV + (long)j0 * C3, C3, p, 1, FLASH_BK, G + (long)i0 * C, C, nk, nq, HS);
            mm(dK + (long)j0 * C3, C3, ds, 1, FLASH_BK, Q + (long)i0 * C3, C3, nk, nq, HS);
        }
    }
}

/* ---- per-ISA entry points ------------------------------------------------------------ */

typedef void (*flash_fwd_fn)(float *, float *, const float *, int, int, int, int, int);
typedef void (*flash_bwd_fn)(float *, const float *, const float *, const float *,
                             const float *, int, int, int, int, int);

/* GCC 12 does not vectorise andrea_expf for AVX targets: partial redundancy
 * elimination folds its clamped paths to constants, which leaves the polynomial
 * in a conditional block that if-conversion rejects ("control flow in loop"). Turning
 * PRE off fixed the forward's loop once (1.6-1.9x on the kernel) but not the backward's,
 * and later not the forward's either (perf showed scalar exps again): the softmax rows
 * now run intrinsics at those ISAs (above); PRE stays off for the rest of the kernel, as
 * it was measured with. */
#if defined(__GNUC__) && !defined(__clang__)
#define FLASH_NO_PRE __attribute__((optimize("no-tree-pre")))
#else
#define FLASH_NO_PRE
#endif

#define DEFINE_FLASH(SFX, ATTR, VW, ROWS, TILE)                                              \
    DEFINE_MM(SFX, ATTR, VW, ROWS, TILE)                                                     \
    ATTR FLASH_NO_PRE static void flash_forward_##SFX(float *out, float *lse,                \
                                                      const float *qkv, int b, int h, int T, \
                                                      int C, int NH) {                       \
        flash_forward_head(out, lse, qkv, b, h, T, C, NH, mm_##SFX, softmax_fwd_##SFX);      \
    }                                                                                        \
    ATTR FLASH_NO_PRE static void flash_backward_##SFX(                                      \
        float *dqkv, const float *dout, const float *qkv, const float *out, const float *lse, \
        int b, int h, int T, int C, int NH) {                                                \
        flash_backward_head(dqkv, dout, qkv, out, lse, b, h, T, C, NH, mm_##SFX,             \
                            softmax_bwd_##SFX);                                              \
    }

#ifdef ANDREA_X86_COPIES
typedef float vf16_8x2 __attribute__((vector_size(64)));
ANDREA_DEFINE_TILE_8X2(tile_8x2v_avx512, ANDREA_TARGET_AVX512, vf16_8x2, 16)
DEFINE_FLASH(avx512, ANDREA_TARGET_AVX512, 16, 8, tile_8x2v_avx512)
typedef float vf8_6x2 __attribute__((vector_size(32)));
ANDREA_DEFINE_TILE_6X2(tile_6x2v_avx2, ANDREA_TARGET_AVX2, vf8_6x2, 8)
DEFINE_FLASH(avx2, ANDREA_TARGET_AVX2, 8, 6, tile_6x2v_avx2)
#endif
DEFINE_FLASH(generic, , 4, 0, tile_4x2v_generic) /* SSE2 on x86-64, NEON on arm64 */

/* the best the CPU has under the engine's cap */
static int flash_isa(const andrea_cpu_engine *e) { return andrea_cpu_isa(e ? e->isa : -1); }

void andrea_attention_flash_forward(const andrea_cpu_engine *e, float *out, float *lse,
                                    const float *qkv, int B, int T, int C, int NH) {
    flash_fwd_fn fn = ANDREA_ISA_PICK(flash_isa(e), flash_forward);
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) fn(out, lse, qkv, b, h, T, C, NH);
}

void andrea_attention_flash_backward(const andrea_cpu_engine *e, float *dqkv, const float *dout,
                                     const float *qkv, const float *out, const float *lse, int B,
                                     int T, int C, int NH) {
    flash_bwd_fn fn = ANDREA_ISA_PICK(flash_isa(e), flash_backward);
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) fn(dqkv, dout, qkv, out, lse, b, h, T, C, NH);
}
