/* activation.c - the MLP nonlinearities (gelu-tanh, relu, relu^2) and the residual add. */
#include <math.h>

#include "andrea.h"
#include "kernels/fastmath.h"
#include "kernels/kernels.h"

#define GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

void activation_forward(float *out, const float *inp, size_t n, int act) {
    long N = (long)n;
    switch (act) {
    case ANDREA_ACT_GELU:
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) {
            float x = inp[i];
            out[i] = 0.5f * x * (1.0f + andrea_tanhf(GELU_SCALE * (x + 0.044715f * x * x * x)));
        }
        break;
    case ANDREA_ACT_RELU:
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
        break;
    default: /* ANDREA_ACT_RELU2 */
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) out[i] = inp[i] > 0.0f ? inp[i] * inp[i] : 0.0f;
        break;
    }
}

void activation_backward(float *dinp, const float *inp, const float *dout, size_t n, int act) {
    long N = (long)n;
    switch (act) {
    case ANDREA_ACT_GELU:
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) {
            float x = inp[i];
            float u = GELU_SCALE * (x + 0.044715f * x * x * x);
            float th = andrea_tanhf(u);
            float sech2 = 1.0f - th * th;
            float g = 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
            dinp[i] += g * dout[i];
        }
        break;
    case ANDREA_ACT_RELU:
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) dinp[i] += inp[i] > 0.0f ? dout[i] : 0.0f;
        break;
    default:
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
        for (long i = 0; i < N; i++) dinp[i] += inp[i] > 0.0f ? 2.0f * inp[i] * dout[i] : 0.0f;
        break;
    }
}

void residual_forward(float *out, const float *a, const float *b, size_t n) {
    long N = (long)n;
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
    for (long i = 0; i < N; i++) out[i] = a[i] + b[i];
}
