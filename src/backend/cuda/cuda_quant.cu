/*
 * cuda_quant.cu - the CUDA backend's quantised copies: quantize (rows to bf16 or f16, or to
 * int8 with a scale per row) and gather_rows (rows of a table dequantised: decoding's
 * embeddings). The same rounding as the CPU's buffer.c: bf16 to nearest even on the
 * dropped bits, f16 IEEE round-to-nearest-even (__float2half_rn, as fmt_num.c's
 * andrea_f32_to_f16), int8 = rint(x / (absmax / 127)), a zero row's scale 1. q8_0/q4_0
 * blocks are not here yet: a file in them decodes on the CPU (issue 24).
 */
#include <cuda_fp16.h>

#include "backend/cuda/cuda_ops.h"

enum { NT = 256 };

__global__ static void k_quant_bf16(uint16_t *q, const float *x, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned u = __float_as_uint(x[i]);
        u += 0x7FFFu + ((u >> 16) & 1u);
        q[i] = (uint16_t)(u >> 16);
    }
}

__global__ static void k_quant_f16(uint16_t *q, const float *x, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        q[i] = __half_as_ushort(__float2half_rn(x[i]));
}

__global__ static void k_quant_i8(int8_t *q, float *scale, const float *src, size_t cols) {
    __shared__ float s[NT];
    const float *x = src + (size_t)blockIdx.x * cols;
    float m = 0.0f;
    for (size_t c = threadIdx.x; c < cols; c += NT) m = fmaxf(m, fabsf(x[c]));
    s[threadIdx.x] = m;
    __syncthreads();
    for (int h = NT / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + h]);
        __syncthreads();
    }
    float sc = s[0] > 0.0f ? s[0] / 127.0f : 1.0f;
    if (threadIdx.x == 0) scale[blockIdx.x] = sc;
    for (size_t c = threadIdx.x; c < cols; c += NT)
        q[(size_t)blockIdx.x * cols + c] = (int8_t)rintf(x[c] / sc);
}

void cuda_quantize(be_t be, void *dst, float *scale, const float *src, int fmt, size_t rows,
                   size_t cols) {
    (void)be;
    size_t n = rows * cols;
    if (!cuda_ok() || !n) return;
    if (fmt == ANDREA_QUANT_BF16) {
        k_quant_bf16<<<cuda_blocks(n), NT>>>((uint16_t *)dst, src, n);
    } else if (fmt == ANDREA_QUANT_F16) {
        k_quant_f16<<<cuda_blocks(n), NT>>>((uint16_t *)dst, src, n);
    } else if (fmt == ANDREA_QUANT_INT8) {
        if (rows > 2147483647u) {
            cuda_failf("quantize", "too many rows for one grid", "rows %zu", rows);
            return;
        }
        k_quant_i8<<<(unsigned)rows, NT>>>((int8_t *)dst, scale, src, cols);
    } else {
        cuda_failf("quantize", "unknown format", "fmt %d rows %zu cols %zu", fmt, rows, cols);
        return;
    }
    CU_LAUNCHED("quantize", "fmt %d rows %zu cols %zu", fmt, rows, cols);
}

__global__ static void k_gather(float *out, const void *w, int fmt, const float *scale,
                                const int32_t *ids, int K, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t row = i / K, k = i % K, r = ids ? (size_t)ids[row] : row;
        float v;
        if (fmt == ANDREA_QUANT_BF16)
            v = __uint_as_float((unsigned)((const uint16_t *)w)[r * K + k] << 16);
        else if (fmt == ANDREA_QUANT_F16)
            v = __half2float(__ushort_as_half(((const uint16_t *)w)[r * K + k]));
        else if (fmt == ANDREA_QUANT_INT8)
            v = ((const int8_t *)w)[r * K + k] * scale[r];
        else
            v = ((const float *)w)[r * K + k];
        out[i] = v;
    }
}

void cuda_gather_rows(be_t be, float *out, const void *w, int fmt, const float *scale,
                      const int32_t *ids, int n, int K) {
    (void)be;
    size_t total = (size_t)n * K;
    if (!cuda_ok() || !total) return;
    int32_t *d = NULL;
    if (ids && !(d = (int32_t *)cuda_upload_temp(ids, sizeof(int32_t) * n, "gather_rows"))) return;
    k_gather<<<cuda_blocks(total), NT>>>(out, w, fmt, scale, d, K, total);
    cudaError_t e = cudaGetLastError();
    cudaFree(d);
    if (e != cudaSuccess)
        cuda_failf("gather_rows", cudaGetErrorString(e), "fmt %d n %d K %d", fmt, n, K);
}
