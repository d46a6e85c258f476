/* activation.c - the MLP nonlinearities (gelu-tanh, relu, relu^2) and the residual add. */
#include <math.h>

#include "andrea.h"
#include "backend/cpu/kernels/act_math.h"
#include "backend/cpu/kernels/kernels.h"

void andrea_activation_forward(float *out, const float *inp, size_t n, int act) {
    long N = (long)n;
    switch (act) {
    case ANDREA_ACT_GELU:
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) out[i] = act_gelu(inp[i]);
        break;
    case ANDREA_ACT_RELU:
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) out[i] = act_relu(inp[i]);
        break;
    default: /* ANDREA_ACT_RELU2 */
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) out[i] = act_relu2(inp[i]);
        break;
    }
}

void andrea_activation_backward(float *dinp, const float *inp, const float *dout, size_t n, int act) {
    long N = (long)n;
    switch (act) {
    case ANDREA_ACT_GELU:
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) dinp[i] += act_gelu_grad(inp[i]) * dout[i];
        break;
    case ANDREA_ACT_RELU:
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) dinp[i] += act_relu_grad(inp[i]) * dout[i];
        break;
    default:
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) dinp[i] += act_relu2_grad(inp[i]) * dout[i];
        break;
    }
}

void andrea_residual_forward(float *out, const float *a, const float *b, size_t n) {
    long N = (long)n;
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
    for (long i = 0; i < N; i++) out[i] = a[i] + b[i];
}
