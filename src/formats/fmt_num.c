/* fmt_num.c - half precision, bfloat16 and ggml's q8_0 and q4_0 blocks. The f16 rounding is
 * IEEE round-to-nearest-even, as numpy and ggml's F32 -> F16 conversion do, so a
 * tensor we write is bit-identical to what llama.cpp's own converter writes. */
#include <math.h>
#include <string.h>

#include "formats/fmt.h"
#include "backend/cpu/kernels/kernels.h"
#include "util/le.h"

uint16_t andrea_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t e = (x >> 23) & 0xffu, man = x & 0x7fffffu;
    if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0)); /* inf, nan */
    int32_t he = (int32_t)e - 127 + 15;
    if (he >= 31) return (uint16_t)(sign | 0x7c00u); /* overflow */
    if (he <= 0) {                                   /* subnormal or zero */
        if (he < -10) return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - he);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | ((uint32_t)he << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may carry into the exponent */
    return (uint16_t)h;
}

float andrea_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t x;
    if (e == 0x1f) x = sign | 0x7f800000u | (man << 13);
    else if (e != 0) x = sign | ((e + 112) << 23) | (man << 13);
    else if (man == 0) x = sign;
    else { /* subnormal: normalise */
        e = 113;
        while (!(man & 0x400u)) {
            man <<= 1;
            e--;
        }
        x = sign | (e << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

float andrea_bf16_to_f32(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ggml's quantize_row_q8_0_ref, block by block (the rule is andrea_q8_0_block's, the one
 * the decoding path's quantize op uses: a file we write decodes as we wrote it). */
void andrea_q8_0_quantize(const float *x, uint8_t *out, int64_t n) {
    for (int64_t b = 0; b < n / ANDREA_Q8_0_BLOCK; b++, out += ANDREA_Q8_0_BYTES) {
        uint16_t dh = andrea_f32_to_f16(andrea_q8_0_block(x + b * ANDREA_Q8_0_BLOCK,
                                                          (int8_t *)(out + 2)));
        out[0] = (uint8_t)dh;
        out[1] = (uint8_t)(dh >> 8);
    }
}

void andrea_q8_0_dequantize(const uint8_t *q, float *out, int64_t n) {
    for (int64_t b = 0; b < n / ANDREA_Q8_0_BLOCK; b++, q += ANDREA_Q8_0_BYTES) {
        float d = andrea_f16_to_f32((uint16_t)(q[0] | q[1] << 8));
        for (int j = 0; j < ANDREA_Q8_0_BLOCK; j++)
            out[b * ANDREA_Q8_0_BLOCK + j] = d * (float)(int8_t)q[2 + j];
    }
}

/* ggml's quantize_row_q4_0_ref, block by block (andrea_q4_0_block's rule, as q8_0's) */
void andrea_q4_0_quantize(const float *x, uint8_t *out, int64_t n) {
    for (int64_t b = 0; b < n / ANDREA_Q4_0_BLOCK; b++, out += ANDREA_Q4_0_BYTES) {
        uint16_t dh = andrea_f32_to_f16(andrea_q4_0_block(x + b * ANDREA_Q4_0_BLOCK, out + 2));
        out[0] = (uint8_t)dh;
        out[1] = (uint8_t)(dh >> 8);
    }
}

void andrea_q4_0_dequantize(const uint8_t *q, float *out, int64_t n) {
    for (int64_t b = 0; b < n / ANDREA_Q4_0_BLOCK; b++, q += ANDREA_Q4_0_BYTES, out += 32) {
        float d = andrea_f16_to_f32((uint16_t)(q[0] | q[1] << 8));
        for (int j = 0; j < 16; j++) {
            out[j] = d * (float)((q[2 + j] & 15) - 8);
            out[16 + j] = d * (float)((q[2 + j] >> 4) - 8);
        }
    }
}
