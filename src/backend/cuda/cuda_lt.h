/*
 * cuda_lt.h - cuda-bf16's fused products (cuda_lt.cu): one cuBLASLt call for the product
 * and what follows it. Column-major, as cuBLAS: D (m, n, ld m) = op(A) op(B) [+ C] and the
 * epilogue, A and B bf16 (the copies cuda_dense.cu makes), C and D fp32; cuBLASLt's
 * epilogues: BIAS, GELU_AUX(_BIAS) (GELU keeping its input), DGELU (its derivative).
 */
#ifndef ANDREA_BACKEND_CUDA_LT_H
#define ANDREA_BACKEND_CUDA_LT_H

#include <cublasLt.h>

#include "backend/cuda/cuda_internal.h"

/* What follows a product, in the terms of the ops (cuda_dense.cu): D = op(A) op(B) + C +
 * bias, then, with an activation, forward: pre = that, D = act(pre); backward: D *= act'(pre). */
typedef struct {
    const float *bias; /* (m): added to each column; NULL: none */
    const float *C;    /* (m, n), ld m, added (beta 1); NULL: none; may differ from D */
    float *pre;        /* the activation's input: written forward, read backward; ld m */
    int act;           /* -1: none, else ANDREA_ACT_* */
    int backward;      /* with act: D *= act'(pre) instead of D = act(pre) */
} cuda_epilogue;

/* The product and its epilogue in one cuBLASLt call: 0 done; 1 not through cuBLASLt
 * (an activation other than GELU, a pointer not 16-byte aligned, pre's rows not a multiple
 * of 8 floats, no algorithm for the shape and epilogue): the caller runs it unfused, D
 * untouched; -1 failed, recorded. */
int cuda_lt_matmul(const char *op, int m, int n, int k, const void *A, int ta, int lda,
                   const void *B, int tb, int ldb, float *D, const cuda_epilogue *e);

#endif
