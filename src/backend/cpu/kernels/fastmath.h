/*
 * fastmath.h - a branch-free expf that compilers vectorise (libm's expf and
 * tanhf are scalar calls and were a third of a small model's step time).
 * Cephes' method: x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-6
 * polynomial, 2^n through the exponent bits. Relative error < 2e-7 on
 * [-87, 88]; inputs outside are clamped (e^-87 ~ 1.6e-38, e^88 ~ 1.7e38), Inf
 * included. NaN in gives NaN out: the clamp is written so that NaN compares false and
 * becomes -87 (converting NaN to int is undefined behaviour), and the result is
 * replaced by the input at the end; both are selects, so it still vectorises.
 */
#ifndef ANDREA_KERNELS_FASTMATH_H
#define ANDREA_KERNELS_FASTMATH_H

#include <stdint.h>
#include <string.h>

static inline float andrea_expf(float in) {
    float x = in > -87.0f ? in : -87.0f; /* NaN: -87 */
    x = x < 88.0f ? x : 88.0f;
    float t = x * 1.44269504088896341f + 0.5f;
    int32_t n = (int32_t)t;
    n -= t < (float)n; /* floor, also for negative t */
    float fn = (float)n;
    /* r = x - n ln2, with ln2 split in two so the product is exact */
    float r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
    float z = r * r;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * z + r + 1.0f;
    int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    return in == in ? y * scale : in;
}

/* tanh(u) = 1 - 2 / (1 + e^(2u)); saturates to +-1 through the clamp above.
 * Absolute error ~1e-7 (the relative error near 0 is larger, harmless in GELU). */
static inline float andrea_tanhf(float u) { return 1.0f - 2.0f / (1.0f + andrea_expf(2.0f * u)); }

/* fp32 <-> bf16 (the top 16 bits), rounding to nearest even on the dropped bits.
 * NaN and Inf are not expected (weights and activations are checked finite). */
static inline uint16_t andrea_bf16_from_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float andrea_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* f16 -> f32 without branches, so that a simd loop can widen it (the exact widening of
 * src/formats' andrea_f16_to_f32): the 15 bits below the sign, moved to f32's place, are
 * the value times 2^-112 (a normal's exponent rebiased by 112, a subnormal's mantissa an
 * f32 subnormal), so one multiply by 2^112 is exact; Inf/NaN keep f32's all-ones exponent
 * and their mantissa. Needs subnormals kept (no FTZ/DAZ, which this code never sets). */
static inline float andrea_f16_to_f32_simd(uint16_t h) {
    uint32_t mag = (uint32_t)(h & 0x7fffu) << 13, sign = (uint32_t)(h & 0x8000u) << 16;
    float f, two112 = 0x1p112f;
    memcpy(&f, &mag, 4);
    f *= two112;
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (h & 0x7c00u) == 0x7c00u ? 0x7f800000u | mag : u;
    u |= sign;
    memcpy(&f, &u, 4);
    return f;
}

#endif
