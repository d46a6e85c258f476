/*
 * cuda_weights.h - one weight of a stored matrix as a float, for every format the ops
 * table stores (andrea.h ANDREA_QUANT_*, laid out as the CPU's buffer.c stores them):
 * decoding's matvec and gather_rows read weights through it. Device code: .cu files only.
 */
#ifndef ANDREA_BACKEND_CUDA_WEIGHTS_H
#define ANDREA_BACKEND_CUDA_WEIGHTS_H

#include <cuda_fp16.h>

#include "backend/cuda/cuda_internal.h"

/* w[row][k] of a (rows, K) matrix in fmt; scale: int8's per row, q8_0/q4_0's per 32-block
 * (K % 32 == 0 for those: each row is whole blocks) */
__device__ static inline float cuda_weight_at(const void *w, int fmt, const float *scale,
                                              size_t row, int K, int k) {
    size_t i = row * (size_t)K + (size_t)k;
    switch (fmt) {
    case ANDREA_QUANT_BF16: return __uint_as_float((unsigned)((const uint16_t *)w)[i] << 16);
    case ANDREA_QUANT_F16: return __half2float(__ushort_as_half(((const uint16_t *)w)[i]));
    case ANDREA_QUANT_INT8: return ((const int8_t *)w)[i] * scale[row];
    case ANDREA_QUANT_Q8_0: return ((const int8_t *)w)[i] * scale[i >> 5];
    case ANDREA_QUANT_Q4_0: {
        /* a block is 16 bytes: element j's nibble is the low one of byte j (j < 16), else
         * the high one of byte j - 16 */
        unsigned j = (unsigned)(i & 31);
        unsigned byte = ((const uint8_t *)w)[(i >> 5) * 16 + (j & 15)];
        return (float)((int)(j < 16 ? byte & 15 : byte >> 4) - 8) * scale[i >> 5];
    }
    default: return ((const float *)w)[i];
    }
}

#endif
