/* act_math.h - the MLP nonlinearities and their derivatives, one element at a time:
 * shared by the activation passes (activation.c) and the matmul epilogue that applies
 * them to a tile while it is still in cache (matmul.c). */
#ifndef ANDREA_KERNELS_ACT_MATH_H
#define ANDREA_KERNELS_ACT_MATH_H

#include "backend/cpu/kernels/fastmath.h"

#define ANDREA_GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

/* GELU, tanh approximation (GPT-2's). */
static inline float act_gelu(float x) {
    return 0.5f * x * (1.0f + andrea_tanhf(ANDREA_GELU_SCALE * (x + 0.044715f * x * x * x)));
}

/* With e = e^(2u): tanh u = 1 - 2 / (1 + e) and sech^2 u = 4 e / (1 + e)^2. The latter
 * instead of 1 - tanh^2, which cancels where tanh is near +-1 (|x| > 2): there a rounding
 * of tanh moved gelu' by 1e-4 relative, and how it rounded depended on whether the
 * compiler fused multiply-adds (AVX2 and AVX-512 builds of the same loop disagreed). */
static inline float act_gelu_grad(float x) {
    float u = ANDREA_GELU_SCALE * (x + 0.044715f * x * x * x);
    float e = andrea_expf(2.0f * u), inv = 1.0f / (1.0f + e);
    float th = 1.0f - 2.0f * inv, sech2 = 4.0f * (e * inv) * inv; /* e * inv <= 1 */
    return 0.5f * (1.0f + th) +
           0.5f * x * sech2 * ANDREA_GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
}

static inline float act_relu(float x) { return x > 0.0f ? x : 0.0f; }
static inline float act_relu_grad(float x) { return x > 0.0f ? 1.0f : 0.0f; }
static inline float act_relu2(float x) { return x > 0.0f ? x * x : 0.0f; }
static inline float act_relu2_grad(float x) { return x > 0.0f ? 2.0f * x : 0.0f; }

#endif
