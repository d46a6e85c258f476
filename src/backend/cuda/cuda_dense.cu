/*
 * cuda_dense.cu - the CUDA backend's products (cuBLAS sgemm in pedantic math mode: exact
 * fp32, no TF32; on cuda-bf16, cublasGemmEx on bf16 copies of both operands), with bias,
 * residual and activation as separate passes (correct first; cuBLASLt epilogues are the
 * next step), and decoding's matvec. dbias is cuda_colsum.cu's deterministic column sum.
 *
 * cuBLAS is column-major: a row-major (R, C) matrix is its (C, R) transpose there, so
 * out(M, N) = inp w^T is out^T = w^T(stored) transposed times inp^T(stored):
 * cublasSgemm(T, N, N, M, K, w, K, inp, K, out, N); the backward products likewise.
 */
#include <math.h>
#include <stdlib.h>

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

/* C (m, n column-major, ld m) = op(A) op(B) + beta C. cuda: cublasSgemm in pedantic fp32;
 * cuda-bf16: both operands rounded to bf16 (nearest even, the CPU's rounding) and
 * cublasGemmEx with fp32 accumulation and result. 0, or -1 with the failure recorded. */
static int gemm(be_t be, const char *what, int m, int n, int k, operand A, operand B,
                float beta, float *C, const char *op, int M, int K, int N) {
    float one = 1.0f;
    int bf16 = be->precision == ANDREA_PRECISION_BF16;
    cublasHandle_t blas = cuda_blas(op, !bf16);
    if (!blas) return -1;
    cublasStatus_t st;
    if (!bf16) {
        st = cublasSgemm(blas, A.op, B.op, m, n, k, &one, A.p, A.ld, B.p, B.ld, &beta, C, m);
    } else {
        size_t a_span = (A.n + 7) / 8 * 8; /* B's copy starts 16-byte aligned */
        uint16_t *s = (uint16_t *)cuda_scratch(CUDA_SCRATCH_BF16,
                                               (a_span + B.n) * sizeof(uint16_t), op);
        if (!s || cuda_to_bf16(s, A.p, A.n) || cuda_to_bf16(s + a_span, B.p, B.n))
            return cuda_failf(op, cudaGetErrorString(cudaGetLastError()),
                              "%s bf16 operands M %d K %d N %d", what, M, K, N);
        st = cublasGemmEx(blas, A.op, B.op, m, n, k, &one, s, CUDA_R_16BF, A.ld, s + a_span,
                          CUDA_R_16BF, B.ld, &beta, C, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS)
        return cuda_failf(op, cublasGetStatusString(st), "%s %s M %d K %d N %d", what,
                          bf16 ? "gemmEx bf16" : "sgemm", M, K, N);
    return 0;
}

/* out = resid + bias + inp @ w^T (resid, bias NULL: not there) */
static void forward(be_t be, const char *op, float *out, const float *inp, const float *w,
                    const float *bias, const float *resid, int M, int K, int N) {
    size_t n = (size_t)M * N;
    if (bias || resid) {
        CU_LAUNCH(k_rows_bias, cuda_blocks(n), 256, 0)(out, bias, resid, N, n);
        CU_LAUNCHED(op, "bias M %d K %d N %d", M, K, N);
    }
    operand wt = {w, K, CUBLAS_OP_T, (size_t)N * K}, x = {inp, K, CUBLAS_OP_N, (size_t)M * K};
    gemm(be, "out", N, M, K, wt, x, bias || resid ? 1.0f : 0.0f, out, op, M, K, N);
}

void cuda_matmul_forward(be_t be, float *out, const float *inp, const float *w, const float *bias,
                         int M, int K, int N) {
    if (!cuda_ok() || !M || !N) return;
    forward(be, "matmul_forward", out, inp, w, bias, NULL, M, K, N);
}

void cuda_matmul_forward_residual(be_t be, float *out, const float *inp, const float *w,
                                  const float *bias, const float *resid, int M, int K, int N) {
    if (!cuda_ok() || !M || !N) return;
    forward(be, "matmul_forward_residual", out, inp, w, bias, resid, M, K, N);
}

void cuda_matmul_forward_act(be_t be, float *pre, float *post, const float *inp, const float *w,
                             const float *bias, int M, int K, int N, int act) {
    if (!cuda_ok() || !M || !N) return;
    forward(be, "matmul_forward_act", pre, inp, w, bias, NULL, M, K, N);
    if (!cuda_ok()) return;
    if (cuda_act_launch(post, pre, (size_t)M * N, act, 0))
        cuda_failf("matmul_forward_act", cudaGetErrorString(cudaGetLastError()),
                   "act M %d K %d N %d act %d", M, K, N, act);
}

/* dw (+)= dout^T @ x, dbias (+)= column sums of dout */
static void weight_grads(be_t be, const char *op, float *dw, float *dbias, const float *dout,
                         const float *x, int M, int K, int N, int init) {
    operand xs = {x, K, CUBLAS_OP_N, (size_t)M * K}, dy = {dout, N, CUBLAS_OP_T, (size_t)M * N};
    if (dw && gemm(be, "dw", K, N, M, xs, dy, init ? 0.0f : 1.0f, dw, op, M, K, N)) return;
    if (dbias) cuda_column_sums(dbias, dout, M, N, !init, op);
}

/* d (M, K) = dout @ w, into d (beta 1: +=) or over it (beta 0) */
static int input_grads(be_t be, const char *op, float *d, const float *dout, const float *w,
                       float beta, int M, int K, int N) {
    operand ws = {w, K, CUBLAS_OP_N, (size_t)N * K}, dy = {dout, N, CUBLAS_OP_N, (size_t)M * N};
    return gemm(be, "dinp", K, M, N, ws, dy, beta, d, op, M, K, N);
}

void cuda_matmul_backward(be_t be, float *dinp, float *dw, float *dbias, const float *dout,
                          const float *inp, const float *w, int M, int K, int N, int dw_init) {
    const char *op = "matmul_backward";
    if (!cuda_ok() || !M || !N || !K) return;
    if (dinp && input_grads(be, op, dinp, dout, w, 1.0f, M, K, N)) return;
    weight_grads(be, op, dw, dbias, dout, inp, M, K, N, dw_init);
}

void cuda_matmul_backward_act(be_t be, float *dpre, float *dw, float *dbias, const float *dout,
                              const float *post, const float *w, const float *pre, int M, int K,
                              int N, int act, int dw_init) {
    const char *op = "matmul_backward_act";
    if (!cuda_ok() || !M || !N || !K) return;
    if (input_grads(be, op, dpre, dout, w, 0.0f, M, K, N)) return;
    if (cuda_act_launch(dpre, pre, (size_t)M * K, act, 1)) {
        cuda_failf(op, cudaGetErrorString(cudaGetLastError()), "act' M %d K %d act %d", M, K,
                   act);
        return;
    }
    weight_grads(be, op, dw, dbias, dout, post, M, K, N, dw_init);
}

/* ---- decoding's product: one block per (input, output row), a fixed tree over K ----------- */

__global__ static void k_matvec(float *out, const float *x, const void *w, int fmt,
                                const float *scale, const float *bias, int K, int N) {
    __shared__ float s[128];
    int j = blockIdx.x, i = blockIdx.y;
    float acc = 0.0f;
    for (int k = threadIdx.x; k < K; k += 128)
        acc += cuda_weight_at(w, fmt, scale, (size_t)j, K, k) * x[(size_t)i * K + k];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int h = 64; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[(size_t)i * N + j] = s[0] + (bias ? bias[j] : 0.0f);
}

void cuda_matvec(be_t be, float *out, const float *x, const void *w, int fmt, const float *scale,
                 const float *bias, int K, int N, int n) {
    (void)be;
    if (!cuda_ok() || !N || !n) return;
    if (n > 65535) {
        cuda_failf("matvec", "too many inputs for one grid", "K %d N %d n %d", K, N, n);
        return;
    }
    CU_LAUNCH(k_matvec, dim3((unsigned)N, (unsigned)n), 128, 0)(out, x, w, fmt, scale, bias, K, N);
    CU_LAUNCHED("matvec", "K %d N %d n %d fmt %d", K, N, n, fmt);
}
