/*
 * tile.h - the register tile under every dense product (matmul.c, attention_flash.c):
 *     C[0:4, 0:2W] += A[0:4, 0:K] @ B[0:K, 0:2W]
 * 4 rows x 2 vectors of W floats: 8 independent accumulators (enough to hide the FMA
 * latency) plus 2 B vectors and a broadcast fit the registers of every ISA. A is read
 * through strides (A(r, k) = a[r a_rs + k a_cs]), B row-major with row stride ldb;
 * each C element is summed in k order. Instantiate once per instruction set, with a
 * vector type VT of that set's register width (a wider GCC vector is lowered through
 * memory and runs many times slower). Vectors move with memcpy: no alignment needed.
 */
#ifndef ANDREA_KERNELS_TILE_H
#define ANDREA_KERNELS_TILE_H

#include <string.h>

#define ANDREA_DEFINE_TILE_4X2(NAME, ATTR, VT, W)                                             \
    ATTR static inline void NAME(float *c, long ldc, const float *a, long a_rs, long a_cs,     \
                                 const float *b, long ldb, int K) {                            \
        VT c00, c01, c10, c11, c20, c21, c30, c31, b0, b1;                                     \
        memcpy(&c00, c, sizeof(VT));                                                           \
        memcpy(&c01, c + (W), sizeof(VT));                                                     \
        memcpy(&c10, c + ldc, sizeof(VT));                                                     \
        memcpy(&c11, c + ldc + (W), sizeof(VT));                                               \
        memcpy(&c20, c + 2 * ldc, sizeof(VT));                                                 \
        memcpy(&c21, c + 2 * ldc + (W), sizeof(VT));                                           \
        memcpy(&c30, c + 3 * ldc, sizeof(VT));                                                 \
        memcpy(&c31, c + 3 * ldc + (W), sizeof(VT));                                           \
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

#endif
