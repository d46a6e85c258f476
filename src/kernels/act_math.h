/* act_math.h - the MLP nonlinearities and their derivatives, one element at a time:
 * shared by the activation passes (activation.c) and the matmul epilogue that applies
 * them to a tile while it is still in cache (matmul.c). */
#ifndef ANDREA_KERNELS_ACT_MATH_H
#define ANDREA_KERNELS_ACT_MATH_H

#include "kernels/fastmath.h"

#define ANDREA_GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

/* GELU, tanh approximation (GPT-2's). */
static inline float act_gelu(float x) {
    return 0.5f * x * (1.0f + andrea_tanhf(ANDREA_GELU_SCALE * (x + 0.044715f * x * x * x)));
}

static inline float act_gelu_grad(float x) {
    float u = ANDREA_GELU_SCALE * (x + 0.044715f * x * x * x);
    float th = andrea_tanhf(u);
    float sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) +
           0.5f * x * sech2 * ANDREA_GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
}

static inline float act_relu(float x) { return x > 0.0f ? x : 0.0f; }
static inline float act_relu_grad(float x) { return x > 0.0f ? 1.0f : 0.0f; }
static inline float act_relu2(float x) { return x > 0.0f ? x * x : 0.0f; }
static inline float act_relu2_grad(float x) { return x > 0.0f ? 2.0f * x : 0.0f; }

#endif
