/*
 * cuda_dense.cu - the CUDA backend's products (cuBLAS sgemm in pedantic math mode: exact
 * fp32, no TF32), with bias, residual and activation as separate passes (correct first;
 * cuBLASLt epilogues are the next step), the norms, the cross-entropy and decoding's
 * matvec. Reductions over rows (dbias, dw of the norms) are one thread per column summing
 * the rows in order: deterministic, no float atomics.
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
__global__ static void k_colsum(float *dbias, const float *dout, int M, int N, int init) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    float s = 0.0f;
    for (int m = 0; m < M; m++) s += dout[(size_t)m * N + n];
    dbias[n] = init ? s : dbias[n] + s;
}

/* out = resid + bias + inp @ w^T (resid, bias NULL: not there) */
static void forward(const char *op, float *out, const float *inp, const float *w,
                    const float *bias, const float *resid, int M, int K, int N) {
    size_t n = (size_t)M * N;
    float one = 1.0f, beta = bias || resid ? 1.0f : 0.0f;
    cublasHandle_t blas = cuda_blas(op);
    if (!blas) return;
    if (bias || resid) {
        CU_LAUNCH(k_rows_bias, cuda_blocks(n), 256, 0)(out, bias, resid, N, n);
        CU_LAUNCHED(op, "bias M %d K %d N %d", M, K, N);
    }
    CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w,
                             K, inp, K, &beta, out, N),
                 op, "sgemm M %d K %d N %d", M, K, N);
}

void cuda_matmul_forward(be_t be, float *out, const float *inp, const float *w, const float *bias,
                         int M, int K, int N) {
    (void)be;
    if (!cuda_ok() || !M || !N) return;
    forward("matmul_forward", out, inp, w, bias, NULL, M, K, N);
}

void cuda_matmul_forward_residual(be_t be, float *out, const float *inp, const float *w,
                                  const float *bias, const float *resid, int M, int K, int N) {
    (void)be;
    if (!cuda_ok() || !M || !N) return;
    forward("matmul_forward_residual", out, inp, w, bias, resid, M, K, N);
}

void cuda_matmul_forward_act(be_t be, float *pre, float *post, const float *inp, const float *w,
                             const float *bias, int M, int K, int N, int act) {
    (void)be;
    if (!cuda_ok() || !M || !N) return;
    forward("matmul_forward_act", pre, inp, w, bias, NULL, M, K, N);
    if (!cuda_ok()) return;
    if (cuda_act_launch(post, pre, (size_t)M * N, act, 0))
        cuda_failf("matmul_forward_act", cudaGetErrorString(cudaGetLastError()),
                   "act M %d K %d N %d act %d", M, K, N, act);
}

/* dw (+)= dout^T @ x, dbias (+)= column sums of dout */
static void weight_grads(const char *op, float *dw, float *dbias, const float *dout,
                         const float *x, int M, int K, int N, int init) {
    float one = 1.0f, beta = init ? 0.0f : 1.0f;
    cublasHandle_t blas = cuda_blas(op);
    if (!blas) return;
    if (dw)
        CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, K, N, M, &one,
                                 x, K, dout, N, &beta, dw, K),
                     op, "dw sgemm M %d K %d N %d", M, K, N);
    if (dbias) {
        CU_LAUNCH(k_colsum, (N + 255) / 256, 256, 0)(dbias, dout, M, N, init);
        CU_LAUNCHED(op, "dbias M %d N %d", M, N);
    }
}

void cuda_matmul_backward(be_t be, float *dinp, float *dw, float *dbias, const float *dout,
                          const float *inp, const float *w, int M, int K, int N, int dw_init) {
    (void)be;
    float one = 1.0f;
    if (!cuda_ok() || !M || !N || !K) return;
    cublasHandle_t blas = cuda_blas("matmul_backward");
    if (!blas) return;
    if (dinp)
        CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, K, M, N, &one,
                                 w, K, dout, N, &one, dinp, K),
                     "matmul_backward", "dinp sgemm M %d K %d N %d", M, K, N);
    weight_grads("matmul_backward", dw, dbias, dout, inp, M, K, N, dw_init);
}

void cuda_matmul_backward_act(be_t be, float *dpre, float *dw, float *dbias, const float *dout,
                              const float *post, const float *w, const float *pre, int M, int K,
                              int N, int act, int dw_init) {
    (void)be;
    float one = 1.0f, zero = 0.0f;
    if (!cuda_ok() || !M || !N || !K) return;
    cublasHandle_t blas = cuda_blas("matmul_backward_act");
    if (!blas) return;
    CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, K, M, N, &one, w,
                             K, dout, N, &zero, dpre, K),
                 "matmul_backward_act", "dpre sgemm M %d K %d N %d", M, K, N);
    if (cuda_act_launch(dpre, pre, (size_t)M * K, act, 1)) {
        cuda_failf("matmul_backward_act", cudaGetErrorString(cudaGetLastError()),
                   "act' M %d K %d act %d", M, K, act);
        return;
    }
    weight_grads("matmul_backward_act", dw, dbias, dout, post, M, K, N, dw_init);
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
