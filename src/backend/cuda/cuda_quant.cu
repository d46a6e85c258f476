/*
 * cuda_quant.cu - the CUDA backend's quantised copies: quantize (rows to bf16 or f16, or to
 * int8 with a scale per row) and gather_rows (rows of a table dequantised: decoding's
 * embeddings). The same rounding as the CPU's buffer.c: bf16 to nearest even on the
 * dropped bits, f16 IEEE round-to-nearest-even (__float2half_rn, as fmt_num.c's
 * andrea_f32_to_f16), int8 = rint(x / (absmax / 127)), a zero row's scale 1, and q8_0/q4_0
 * blocks as andrea_q8_0_block / andrea_q4_0_block make them (ggml's rules).
 */
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cuda_weights.h"

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

/* q8_0 and q4_0: one thread per 32-value block, buffer.c's andrea_q8_0_block and
 * andrea_q4_0_block step for step (the scale rounded to f16; NaN when the block is not finite) */
__device__ static float f16_round(float d) { return __half2float(__float2half_rn(d)); }

__global__ static void k_quant_q8_0(int8_t *q, float *scale, const float *src, size_t nb) {
    for (size_t b = (size_t)blockIdx.x * blockDim.x + threadIdx.x; b < nb;
         b += (size_t)gridDim.x * blockDim.x) {
        const float *x = src + 32 * b;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        int finite = isfinite(d);
        for (int j = 0; j < 32; j++) {
            float v = x[j] * id;
            finite &= isfinite(v);
            q[32 * b + j] = isfinite(v) ? (int8_t)roundf(v) : 0;
        }
        scale[b] = finite ? f16_round(d) : NAN;
    }
}

__global__ static void k_quant_q4_0(uint8_t *qs, float *scale, const float *src, size_t nb) {
    for (size_t b = (size_t)blockIdx.x * blockDim.x + threadIdx.x; b < nb;
         b += (size_t)gridDim.x * blockDim.x) {
        const float *x = src + 32 * b;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; j++)
            if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
        float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        int finite = isfinite(d);
        for (int j = 0; j < 16; j++) {
            float lo_f = x[j] * id + 8.5f, hi_f = x[16 + j] * id + 8.5f;
            finite &= isfinite(lo_f) && isfinite(hi_f);
            int lo = isfinite(lo_f) ? (int)(int8_t)lo_f : 8;
            int hi = isfinite(hi_f) ? (int)(int8_t)hi_f : 8;
            qs[16 * b + j] = (uint8_t)((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
        }
        scale[b] = finite ? f16_round(d) : NAN;
    }
}

int cuda_to_bf16(uint16_t *dst, const float *src, size_t n) {
    if (!n) return 0;
    CU_LAUNCH(k_quant_bf16, cuda_blocks(n), NT, 0)(dst, src, n);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

void cuda_quantize(be_t be, void *dst, float *scale, const float *src, int fmt, size_t rows,
                   size_t cols) {
    (void)be;
    size_t n = rows * cols;
    if (!cuda_ok() || !n) return;
    if (fmt == ANDREA_QUANT_BF16) {
        CU_LAUNCH(k_quant_bf16, cuda_blocks(n), NT, 0)((uint16_t *)dst, src, n);
    } else if (fmt == ANDREA_QUANT_F16) {
        CU_LAUNCH(k_quant_f16, cuda_blocks(n), NT, 0)((uint16_t *)dst, src, n);
    } else if (fmt == ANDREA_QUANT_INT8) {
        if (rows > 2147483647u) {
            cuda_failf("quantize", "too many rows for one grid", "rows %zu", rows);
            return;
        }
        CU_LAUNCH(k_quant_i8, (unsigned)rows, NT, 0)((int8_t *)dst, scale, src, cols);
    } else if ((fmt == ANDREA_QUANT_Q8_0 || fmt == ANDREA_QUANT_Q4_0) && cols % 32 == 0) {
        size_t nb = n / 32;
        if (fmt == ANDREA_QUANT_Q8_0)
            CU_LAUNCH(k_quant_q8_0, cuda_blocks(nb), NT, 0)((int8_t *)dst, scale, src, nb);
        else CU_LAUNCH(k_quant_q4_0, cuda_blocks(nb), NT, 0)((uint8_t *)dst, scale, src, nb);
    } else {
        cuda_failf("quantize", "unknown format, or q8_0/q4_0 columns not a multiple of 32",
                   "fmt %d rows %zu cols %zu", fmt, rows, cols);
        return;
    }
    CU_LAUNCHED("quantize", "fmt %d rows %zu cols %zu", fmt, rows, cols);
}

__global__ static void k_gather(float *out, const void *w, int fmt, const float *scale,
                                const int32_t *ids, int K, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t row = i / K, r = ids ? (size_t)ids[row] : row;
        out[i] = cuda_weight_at(w, fmt, scale, r, K, (int)(i % K));
    }
}

void cuda_gather_rows(be_t be, float *out, const void *w, int fmt, const float *scale,
                      const int32_t *ids, int n, int K) {
    (void)be;
    size_t total = (size_t)n * K;
    if (!cuda_ok() || !total) return;
    int32_t *d = NULL;
    if (ids && !(d = (int32_t *)cuda_upload_staging(ids, sizeof(int32_t) * n, "gather_rows")))
        return;
    CU_LAUNCH(k_gather, cuda_blocks(total), NT, 0)(out, w, fmt, scale, d, K, total);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        cuda_failf("gather_rows", cudaGetErrorString(e), "fmt %d n %d K %d", fmt, n, K);
}
