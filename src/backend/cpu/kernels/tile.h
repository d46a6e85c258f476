/*
 * tile.h - the register tiles under every dense product (matmul.c, attention_flash.c):
 *     C[0:R, 0:2W] += A[0:R, 0:K] @ B[0:K, 0:2W],  R = 4 or 8
 * R rows x 2 vectors of W floats. 4 rows: 8 independent accumulators plus 2 B vectors
 * and a broadcast fit the 16 registers of AVX2 and SSE. 8 rows: 16 accumulators, for
 * AVX-512's 32 registers; a core that retires two FMAs per cycle at 4 cycles latency
 * (Zen 5, bench/bench_peak.c) needs >= 8 in flight, and 8 rows halve the B loads per
 * FMA (4 x 32 ran at 134 GFLOP/s per core there, 8 x 32 at 203, the peak 217). A is read
 * through strides (A(r, k) = a[r a_rs + k a_cs]), B row-major with row stride ldb.
 * The 4-row tile starts from C (acc) or zero and adds the products in k order; the 8- and 6-row
 * tiles sum the products in k order from zero and then add C (acc) or overwrite it. Instantiate once per instruction set, with a
 * vector type VT of that set's register width (a wider GCC vector is lowered through
 * memory and runs many times slower). Vectors move with memcpy: no alignment needed.
 */
#ifndef ANDREA_KERNELS_TILE_H
#define ANDREA_KERNELS_TILE_H

#include <string.h>

#define ANDREA_DEFINE_TILE_4X2(NAME, ATTR, VT, W)                                             \
    ATTR static inline void NAME(float *c, long ldc, const float *a, long a_rs, long a_cs,     \
                                 const float *b, long ldb, int K, int acc) {                   \
        VT c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0};        \
        VT c31 = {0}, b0, b1;                                                                  \
        if (acc) {                                                                             \
            memcpy(&c00, c, sizeof(VT));                                                       \
            memcpy(&c01, c + (W), sizeof(VT));                                                 \
            memcpy(&c10, c + ldc, sizeof(VT));                                                 \
            memcpy(&c11, c + ldc + (W), sizeof(VT));                                           \
            memcpy(&c20, c + 2 * ldc, sizeof(VT));                                             \
            memcpy(&c21, c + 2 * ldc + (W), sizeof(VT));                                       \
            memcpy(&c30, c + 3 * ldc, sizeof(VT));                                             \
            memcpy(&c31, c + 3 * ldc + (W), sizeof(VT));                                       \
        }                                                                                      \
        for (int k = 0; k < K; k++) {                                                          \
            memcpy(&b0, b + k * ldb, sizeof(VT));                                              \
            memcpy(&b1, b + k * ldb + (W), sizeof(VT));                                        \
            const float *ak = a + k * a_cs;                                                    \
            float a0 = ak[0], a1 = ak[a_rs], a2 = ak[2 * a_rs], a3 = ak[3 * a_rs];             \
            c00 += a0 * b0;                                                                    \
            c01 += a0 * b1;                                                                    \
            c10 += a1 * b0;                                                                    \
            c11 += a1 * b1;                                                                    \
            c20 += a2 * b0;                                                                    \
            c21 += a2 * b1;                                                                    \
            c30 += a3 * b0;                                                                    \
            c31 += a3 * b1;                                                                    \
        }                                                                                      \
        memcpy(c, &c00, sizeof(VT));                                                           \
        memcpy(c + (W), &c01, sizeof(VT));                                                     \
        memcpy(c + ldc, &c10, sizeof(VT));                                                     \
        memcpy(c + ldc + (W), &c11, sizeof(VT));                                               \
        memcpy(c + 2 * ldc, &c20, sizeof(VT));                                                 \
        memcpy(c + 2 * ldc + (W), &c21, sizeof(VT));                                           \
        memcpy(c + 3 * ldc, &c30, sizeof(VT));                                                 \
        memcpy(c + 3 * ldc + (W), &c31, sizeof(VT));                                           \
    }

/* The 8-row tile: two 4-row halves' worth of accumulators in one k loop. */
#define ANDREA_TILE_ROW_FMA(r)                                                                 \
    {                                                                                          \
        float ar = ak[(r) * a_rs];                                                             \
        c##r##0 += ar * b0;                                                                    \
        c##r##1 += ar * b1;                                                                    \
    }
/* The 8- and 6-row tiles sum the products from zero and add C's old values after the
 * loop (acc), so that C's cache misses (prefetched here) overlap the FMAs instead of
 * stalling before them, and an overwrite (acc = 0) never reads C. */
#define ANDREA_TILE_PREFETCH_C(R, W)                                                           \
    for (int r = 0; r < (R); r++) {                                                            \
        __builtin_prefetch(c + r * ldc, 1);                                                    \
        __builtin_prefetch(c + r * ldc + 2 * (W) - 1, 1);                                      \
    }
/* C's old values added to a row's sums */
#define ANDREA_TILE_ROW_ADD(VT, W, r)                                                          \
    {                                                                                          \
        VT o0, o1;                                                                             \
        memcpy(&o0, c + (r) * ldc, sizeof(VT));                                                \
        memcpy(&o1, c + (r) * ldc + (W), sizeof(VT));                                          \
        c##r##0 = o0 + c##r##0;                                                                \
        c##r##1 = o1 + c##r##1;                                                                \
    }
#define ANDREA_TILE_ROW_STORE(VT, W, r)                                                        \
    memcpy(c + (r) * ldc, &c##r##0, sizeof(VT));                                               \
    memcpy(c + (r) * ldc + (W), &c##r##1, sizeof(VT));

#define ANDREA_DEFINE_TILE_8X2(NAME, ATTR, VT, W)                                             \
    ATTR static inline void NAME(float *c, long ldc, const float *a, long a_rs, long a_cs,     \
                                 const float *b, long ldb, int K, int acc) {                   \
        VT c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0};        \
        VT c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0}, c60 = {0}, c61 = {0};        \
        VT c70 = {0}, c71 = {0}, b0, b1;                                                       \
        if (acc) ANDREA_TILE_PREFETCH_C(8, W)                                                  \
        for (int k = 0; k < K; k++) {                                                          \
            memcpy(&b0, b + k * ldb, sizeof(VT));                                              \
            memcpy(&b1, b + k * ldb + (W), sizeof(VT));                                        \
            const float *ak = a + k * a_cs;                                                    \
            ANDREA_TILE_ROW_FMA(0) ANDREA_TILE_ROW_FMA(1) ANDREA_TILE_ROW_FMA(2)               \
            ANDREA_TILE_ROW_FMA(3) ANDREA_TILE_ROW_FMA(4) ANDREA_TILE_ROW_FMA(5)               \
            ANDREA_TILE_ROW_FMA(6) ANDREA_TILE_ROW_FMA(7)                                      \
        }                                                                                      \
        if (acc) {                                                                             \
            ANDREA_TILE_ROW_ADD(VT, W, 0) ANDREA_TILE_ROW_ADD(VT, W, 1)                        \
            ANDREA_TILE_ROW_ADD(VT, W, 2) ANDREA_TILE_ROW_ADD(VT, W, 3)                        \
            ANDREA_TILE_ROW_ADD(VT, W, 4) ANDREA_TILE_ROW_ADD(VT, W, 5)                        \
            ANDREA_TILE_ROW_ADD(VT, W, 6) ANDREA_TILE_ROW_ADD(VT, W, 7)                        \
        }                                                                                      \
        ANDREA_TILE_ROW_STORE(VT, W, 0) ANDREA_TILE_ROW_STORE(VT, W, 1)                        \
        ANDREA_TILE_ROW_STORE(VT, W, 2) ANDREA_TILE_ROW_STORE(VT, W, 3)                        \
        ANDREA_TILE_ROW_STORE(VT, W, 4) ANDREA_TILE_ROW_STORE(VT, W, 5)                        \
        ANDREA_TILE_ROW_STORE(VT, W, 6) ANDREA_TILE_ROW_STORE(VT, W, 7)                        \
    }

/* The 6-row tile of AVX2 and NEON (6 x 16 floats): AVX2, 2 ymm vectors per row = 12
 * accumulators + 2 B vectors + 1 broadcast = 15 of its 16 registers; NEON, 4 q vectors
 * per row = 24 accumulators + 4 B + 1 = 29 of its 32. Against the 4-row tile on AVX2 it
 * loads 8 values per 12 FMAs instead of 6 per 8, and keeps 12 FMAs in flight where two
 * FMA ports at 4 cycles' latency need 8 (measured: docs/performance.md). */
#define ANDREA_DEFINE_TILE_6X2(NAME, ATTR, VT, W)                                             \
    ATTR static inline void NAME(float *c, long ldc, const float *a, long a_rs, long a_cs,     \
                                 const float *b, long ldb, int K, int acc) {                   \
        VT c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};                   \
        VT c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0}, b0, b1;           \
        if (acc) ANDREA_TILE_PREFETCH_C(6, W)                                                  \
        for (int k = 0; k < K; k++) {                                                          \
            memcpy(&b0, b + k * ldb, sizeof(VT));                                              \
            memcpy(&b1, b + k * ldb + (W), sizeof(VT));                                        \
            const float *ak = a + k * a_cs;                                                    \
            ANDREA_TILE_ROW_FMA(0) ANDREA_TILE_ROW_FMA(1) ANDREA_TILE_ROW_FMA(2)               \
            ANDREA_TILE_ROW_FMA(3) ANDREA_TILE_ROW_FMA(4) ANDREA_TILE_ROW_FMA(5)               \
        }                                                                                      \
        if (acc) {                                                                             \
            ANDREA_TILE_ROW_ADD(VT, W, 0) ANDREA_TILE_ROW_ADD(VT, W, 1)                        \
            ANDREA_TILE_ROW_ADD(VT, W, 2) ANDREA_TILE_ROW_ADD(VT, W, 3)                        \
            ANDREA_TILE_ROW_ADD(VT, W, 4) ANDREA_TILE_ROW_ADD(VT, W, 5)                        \
        }                                                                                      \
        ANDREA_TILE_ROW_STORE(VT, W, 0) ANDREA_TILE_ROW_STORE(VT, W, 1)                        \
        ANDREA_TILE_ROW_STORE(VT, W, 2) ANDREA_TILE_ROW_STORE(VT, W, 3)                        \
        ANDREA_TILE_ROW_STORE(VT, W, 4) ANDREA_TILE_ROW_STORE(VT, W, 5)                        \
    }

#define ANDREA_TILE_ROW4_ADD(VT, W, r)                                                         \
    {                                                                                          \
        VT o0, o1, o2, o3;                                                                     \
        memcpy(&o0, c + (r) * ldc, sizeof(VT));                                                \
        memcpy(&o1, c + (r) * ldc + (W), sizeof(VT));                                          \
        memcpy(&o2, c + (r) * ldc + 2 * (W), sizeof(VT));                                      \
        memcpy(&o3, c + (r) * ldc + 3 * (W), sizeof(VT));                                      \
        c##r##0 = o0 + c##r##0;                                                                \
        c##r##1 = o1 + c##r##1;                                                                \
        c##r##2 = o2 + c##r##2;                                                                \
        c##r##3 = o3 + c##r##3;                                                                \
    }
#define ANDREA_TILE_ROW4_FMA(r)                                                                \
    {                                                                                          \
        float ar = ak[(r) * a_rs];                                                             \
        c##r##0 += ar * b0;                                                                    \
        c##r##1 += ar * b1;                                                                    \
        c##r##2 += ar * b2;                                                                    \
        c##r##3 += ar * b3;                                                                    \
    }
#define ANDREA_TILE_ROW4_STORE(VT, W, r)                                                       \
    memcpy(c + (r) * ldc, &c##r##0, sizeof(VT));                                               \
    memcpy(c + (r) * ldc + (W), &c##r##1, sizeof(VT));                                         \
    memcpy(c + (r) * ldc + 2 * (W), &c##r##2, sizeof(VT));                                     \
    memcpy(c + (r) * ldc + 3 * (W), &c##r##3, sizeof(VT));

/* 6 rows x 4 vectors (NEON: 6 x 16 floats), see above. */
#define ANDREA_DEFINE_TILE_6X4(NAME, ATTR, VT, W)                                             \
    ATTR static inline void NAME(float *c, long ldc, const float *a, long a_rs, long a_cs,     \
                                 const float *b, long ldb, int K, int acc) {                   \
        VT c00 = {0}, c01 = {0}, c02 = {0}, c03 = {0}, c10 = {0}, c11 = {0}, c12 = {0};        \
        VT c13 = {0}, c20 = {0}, c21 = {0}, c22 = {0}, c23 = {0}, c30 = {0}, c31 = {0};        \
        VT c32 = {0}, c33 = {0}, c40 = {0}, c41 = {0}, c42 = {0}, c43 = {0}, c50 = {0};        \
        VT c51 = {0}, c52 = {0}, c53 = {0}, b0, b1, b2, b3;                                    \
        if (acc) ANDREA_TILE_PREFETCH_C(6, 2 * (W))                                            \
        for (int k = 0; k < K; k++) {                                                          \
            const float *bk = b + k * ldb;                                                     \
            memcpy(&b0, bk, sizeof(VT));                                                       \
            memcpy(&b1, bk + (W), sizeof(VT));                                                 \
            memcpy(&b2, bk + 2 * (W), sizeof(VT));                                             \
            memcpy(&b3, bk + 3 * (W), sizeof(VT));                                             \
            const float *ak = a + k * a_cs;                                                    \
            ANDREA_TILE_ROW4_FMA(0) ANDREA_TILE_ROW4_FMA(1) ANDREA_TILE_ROW4_FMA(2)            \
            ANDREA_TILE_ROW4_FMA(3) ANDREA_TILE_ROW4_FMA(4) ANDREA_TILE_ROW4_FMA(5)            \
        }                                                                                      \
        if (acc) {                                                                             \
            ANDREA_TILE_ROW4_ADD(VT, W, 0) ANDREA_TILE_ROW4_ADD(VT, W, 1)                      \
            ANDREA_TILE_ROW4_ADD(VT, W, 2) ANDREA_TILE_ROW4_ADD(VT, W, 3)                      \
            ANDREA_TILE_ROW4_ADD(VT, W, 4) ANDREA_TILE_ROW4_ADD(VT, W, 5)                      \
        }                                                                                      \
        ANDREA_TILE_ROW4_STORE(VT, W, 0) ANDREA_TILE_ROW4_STORE(VT, W, 1)                      \
        ANDREA_TILE_ROW4_STORE(VT, W, 2) ANDREA_TILE_ROW4_STORE(VT, W, 3)                      \
        ANDREA_TILE_ROW4_STORE(VT, W, 4) ANDREA_TILE_ROW4_STORE(VT, W, 5)                      \
    }

#endif
