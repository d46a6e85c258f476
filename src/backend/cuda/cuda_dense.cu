/*
 * cuda_dense.cu - the CUDA backend's products, and decoding's matvec. cuda: cuBLAS sgemm in
 * pedantic math mode (exact fp32, no TF32: the reference the fast mode is checked against),
 * with bias, residual and activation as separate passes. cuda-bf16: bf16 copies of both
 * operands, and one cuBLASLt call with the bias, residual, GELU or GELU' as its epilogue
 * (cuda_lt.cu), or cublasGemmEx and the same passes where cuBLASLt has no such epilogue.
 * dbias is cuda_colsum.cu's deterministic column sum.
 *
 * cuBLAS is column-major: a row-major (R, C) matrix is its (C, R) transpose there, so
 * out(M, N) = inp w^T is out^T = w^T(stored) transposed times inp^T(stored):
 * cublasSgemm(T, N, N, M, K, w, K, inp, K, out, N); the backward products likewise.
 */
#include <math.h>
#include <stdlib.h>

#include "backend/cuda/cuda_lt.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cuda_weights.h"

#define GRID_STRIDE(i, n)                                                                     \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                   \
         i += (size_t)gridDim.x * blockDim.x)

__global__ static void k_rows_bias(float *out, const float *bias, const float *resid, int N,
                                   size_t n) {
    GRID_STRIDE(i, n) out[i] = (resid ? resid[i] : 0.0f) + (bias ? bias[i % N] : 0.0f);
}

/* ---- one product: fp32 (pedantic sgemm) or, on cuda-bf16, bf16 operands ---------------- */

/* A column-major product's operand: a device matrix of n floats (ld, transposed or not) */
typedef struct {
    const float *p;
    int ld;
    cublasOperation_t op;
    size_t n;
} operand;

/* A product, for messages: the op, which of its products, the op's shapes */
typedef struct {
    const char *op, *what;
    int M, K, N;
} product_id;

/* cuda-bf16's operands: A and B rounded to bf16 (nearest even, the CPU's rounding) into one
 * scratch, B's copy 16-byte aligned. 0, or -1 with the failure recorded. */
static int bf16_operands(operand A, operand B, const uint16_t **a, const uint16_t **b,
                         const product_id *id) {
    size_t a_span = (A.n + 7) / 8 * 8;
    uint16_t *s = (uint16_t *)cuda_scratch(CUDA_SCRATCH_BF16, (a_span + B.n) * sizeof(uint16_t),
                                           id->op);
    if (!s || cuda_to_bf16(s, A.p, A.n) || cuda_to_bf16(s + a_span, B.p, B.n))
        return cuda_failf(id->op, cudaGetErrorString(cudaGetLastError()),
                          "%s bf16 operands M %d K %d N %d", id->what, id->M, id->K, id->N);
    *a = s, *b = s + a_span;
    return 0;
}

/* C (m, n column-major, ld m) = op(A) op(B) + beta C: cublasSgemm in pedantic fp32, or,
 * given bf16 copies (a16, b16), cublasGemmEx on them with fp32 accumulation and result on
 * a default-math handle (tensor cores). 0, or -1 with the failure recorded. */
static int gemm(int m, int n, int k, operand A, operand B, const uint16_t *a16,
                const uint16_t *b16, float beta, float *C, const product_id *id) {
    float one = 1.0f;
    cublasHandle_t blas = cuda_blas(id->op, a16 == NULL);
    if (!blas) return -1;
    cublasStatus_t st;
    if (!a16)
        st = cublasSgemm(blas, A.op, B.op, m, n, k, &one, A.p, A.ld, B.p, B.ld, &beta, C, m);
    else
        st = cublasGemmEx(blas, A.op, B.op, m, n, k, &one, a16, CUDA_R_16BF, A.ld, b16,
                          CUDA_R_16BF, B.ld, &beta, C, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
        return cuda_failf(id->op, cublasGetStatusString(st), "%s %s M %d K %d N %d", id->what,
                          a16 ? "gemmEx bf16" : "sgemm", id->M, id->K, id->N);
    return 0;
}

/* D = op(A) op(B) and e's epilogue as separate passes: C + bias written first (into pre
 * when an activation follows; nothing to write when C is the target itself, an
 * accumulation), the product added, then the activation or its derivative */
static int unfused(int m, int n, int k, operand A, operand B, const uint16_t *a16,
                   const uint16_t *b16, float *D, const cuda_epilogue *e, const product_id *id) {
    int fwd_act = e->act >= 0 && !e->backward;
    float *target = fwd_act ? e->pre : D;
    size_t count = (size_t)m * n;
    if (e->bias || (e->C && e->C != target)) {
        CU_LAUNCH(k_rows_bias, cuda_blocks(count), 256, 0)(target, e->bias, e->C, m, count);
        CU_LAUNCHED_R(-1, id->op, "bias M %d K %d N %d", id->M, id->K, id->N);
    }
    if (gemm(m, n, k, A, B, a16, b16, e->bias || e->C ? 1.0f : 0.0f, target, id)) return -1;
    if (e->act >= 0 && cuda_act_launch(D, e->pre, count, e->act, e->backward))
        return cuda_failf(id->op, cudaGetErrorString(cudaGetLastError()), "%s M %d K %d N %d "
                          "act %d", e->backward ? "act'" : "act", id->M, id->K, id->N, e->act);
    return 0;
}

/* D = op(A) op(B) with epilogue e: on cuda-bf16 one cuBLASLt call where it has the epilogue
 * (cuda_lt.cu), else the product and separate passes. 0, or -1 with the failure recorded. */
static int product(be_t be, int m, int n, int k, operand A, operand B, float *D,
                   const cuda_epilogue *e, const product_id *id) {
    const uint16_t *a16 = NULL, *b16 = NULL;
    if (be->precision == ANDREA_PRECISION_BF16) {
        if (bf16_operands(A, B, &a16, &b16, id)) return -1;
        int rc = cuda_lt_matmul(id->op, m, n, k, a16, A.op == CUBLAS_OP_T, A.ld, b16,
                                B.op == CUBLAS_OP_T, B.ld, D, e);
        if (rc != 1) return rc;
    }
    return unfused(m, n, k, A, B, a16, b16, D, e, id);
}

/* out (M, N) = inp (M, K) w^T (+ bias + resid): column-major out^T = w (T) inp^T */
static int forward(be_t be, float *out, const float *inp, const float *w, const cuda_epilogue *e,
                   const product_id *id) {
    int M = id->M, K = id->K, N = id->N;
    operand wt = {w, K, CUBLAS_OP_T, (size_t)N * K}, x = {inp, K, CUBLAS_OP_N, (size_t)M * K};
    return product(be, N, M, K, wt, x, out, e, id);
}

void cuda_matmul_forward(be_t be, float *out, const float *inp, const float *w, const float *bias,
                         int M, int K, int N) {
    if (!cuda_ok() || !M || !N) return;
    product_id id = {"matmul_forward", "out", M, K, N};
    cuda_epilogue e = {bias, NULL, NULL, -1, 0};
    forward(be, out, inp, w, &e, &id);
}

void cuda_matmul_forward_residual(be_t be, float *out, const float *inp, const float *w,
                                  const float *bias, const float *resid, int M, int K, int N) {
    if (!cuda_ok() || !M || !N) return;
    product_id id = {"matmul_forward_residual", "out", M, K, N};
    cuda_epilogue e = {bias, resid, NULL, -1, 0};
    forward(be, out, inp, w, &e, &id);
}

void cuda_matmul_forward_act(be_t be, float *pre, float *post, const float *inp, const float *w,
                             const float *bias, int M, int K, int N, int act) {
    if (!cuda_ok() || !M || !N) return;
    product_id id = {"matmul_forward_act", "out", M, K, N};
    cuda_epilogue e = {bias, NULL, pre, act, 0};
    forward(be, post, inp, w, &e, &id);
}

/* dw (+)= dout^T @ x, dbias (+)= column sums of dout (cuda_colsum.cu: deterministic, and it
 * accumulates, which cuBLASLt's BGRAD epilogues do not) */
static void weight_grads(be_t be, float *dw, float *dbias, const float *dout, const float *x,
                         int init, const product_id *pid) {
    int M = pid->M, K = pid->K, N = pid->N;
    product_id id = *pid;
    id.what = "dw";
    operand xs = {x, K, CUBLAS_OP_N, (size_t)M * K}, dy = {dout, N, CUBLAS_OP_T, (size_t)M * N};
    /* accumulating: C is dw itself */
    cuda_epilogue e = {NULL, init ? NULL : dw, NULL, -1, 0};
    if (dw && product(be, K, N, M, xs, dy, dw, &e, &id)) return;
    if (dbias) cuda_column_sums(dbias, dout, M, N, !init, id.op);
}

/* dinp (M, K) = dout @ w (+ dinp when e->C is dinp), the epilogue e */
static int input_grads(be_t be, float *dinp, const float *dout, const float *w,
                       const cuda_epilogue *e, const product_id *pid) {
    int M = pid->M, K = pid->K, N = pid->N;
    product_id id = *pid;
    id.what = "dinp";
    operand ws = {w, K, CUBLAS_OP_N, (size_t)N * K}, dy = {dout, N, CUBLAS_OP_N, (size_t)M * N};
    return product(be, K, M, N, ws, dy, dinp, e, &id);
}

void cuda_matmul_backward(be_t be, float *dinp, float *dw, float *dbias, const float *dout,
                          const float *inp, const float *w, int M, int K, int N, int dw_init) {
    if (!cuda_ok() || !M || !N || !K) return;
    product_id id = {"matmul_backward", "", M, K, N};
    cuda_epilogue add = {NULL, dinp, NULL, -1, 0}; /* dinp += */
    if (dinp && input_grads(be, dinp, dout, w, &add, &id)) return;
    weight_grads(be, dw, dbias, dout, inp, dw_init, &id);
}

void cuda_matmul_backward_act(be_t be, float *dpre, float *dw, float *dbias, const float *dout,
                              const float *post, const float *w, const float *pre, int M, int K,
                              int N, int act, int dw_init) {
    if (!cuda_ok() || !M || !N || !K) return;
    product_id id = {"matmul_backward_act", "", M, K, N};
    cuda_epilogue e = {NULL, NULL, (float *)pre, act, 1}; /* dpre = (dout w) act'(pre) */
    if (input_grads(be, dpre, dout, w, &e, &id)) return;
    weight_grads(be, dw, dbias, dout, post, dw_init, &id);
}

/* ---- decoding's product: one block per (output row, group of NB inputs) ----------------
 * Each weight is read once per group, not once per input: batched decoding (n sequences,
 * the server's steps, --gen-batch) reads the weights n / NB times instead of n (at n 32 and
 * 120M f32 weights, 4 GB a step less). Each input's sum is the one of a block per input:
 * thread t adds k = t, t + 128, ... in order, then a fixed tree, so the bits do not depend
 * on NB or on how many inputs go together (a sequence decoded alone or batched: the same). */

template <int NB>
__global__ static void k_matvec(float *out, const float *x, const void *w, int fmt,
                                const float *scale, const float *bias, int K, int N, int n) {
    __shared__ float s[NB][128];
    int j = blockIdx.x, i0 = blockIdx.y * NB, nb = n - i0 < NB ? n - i0 : NB;
    float acc[NB]; /* unrolled loops with constant indices: registers, not local memory */
#pragma unroll
    for (int b = 0; b < NB; b++) acc[b] = 0.0f;
    for (int k = threadIdx.x; k < K; k += 128) {
        float wk = cuda_weight_at(w, fmt, scale, (size_t)j, K, k);
#pragma unroll
        for (int b = 0; b < NB; b++)
            if (b < nb) acc[b] += wk * x[(size_t)(i0 + b) * K + k];
    }
#pragma unroll
    for (int b = 0; b < NB; b++) s[b][threadIdx.x] = acc[b];
    __syncthreads();
    for (int h = 64; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h)
            for (int b = 0; b < nb; b++) s[b][threadIdx.x] += s[b][threadIdx.x + h];
        __syncthreads();
    }
    if ((int)threadIdx.x < nb)
        out[(size_t)(i0 + threadIdx.x) * N + j] = s[threadIdx.x][0] + (bias ? bias[j] : 0.0f);
}

void cuda_matvec(be_t be, float *out, const float *x, const void *w, int fmt, const float *scale,
                 const float *bias, int K, int N, int n) {
    (void)be;
    if (!cuda_ok() || !N || !n) return;
    int nb = n == 1 ? 1 : n <= 4 ? 4 : 16; /* inputs a block: one, a few, or many */
    if ((n + nb - 1) / nb > 65535) {
        cuda_failf("matvec", "too many inputs for one grid", "K %d N %d n %d", K, N, n);
        return;
    }
    dim3 grid((unsigned)N, (unsigned)((n + nb - 1) / nb));
    if (nb == 1) CU_LAUNCH(k_matvec<1>, grid, 128, 0)(out, x, w, fmt, scale, bias, K, N, n);
    else if (nb == 4) CU_LAUNCH(k_matvec<4>, grid, 128, 0)(out, x, w, fmt, scale, bias, K, N, n);
    else CU_LAUNCH(k_matvec<16>, grid, 128, 0)(out, x, w, fmt, scale, bias, K, N, n);
    CU_LAUNCHED("matvec", "K %d N %d n %d fmt %d", K, N, n, fmt);
}
