/* activation.c - the MLP nonlinearities (gelu-tanh, relu, relu^2) and the residual add. */
#include <math.h>

#include "andrea.h"
#include "backend/cpu/kernels/act_math.h"
#include "backend/cpu/kernels/act_simd.h"
#include "backend/cpu/kernels/kernels.h"

#define GELU_CHUNK 4096 /* floats per call of an ISA's row copy */

/* GELU through the matmul epilogue's vector code at the engine's ISA (act_simd.h): the
 * scalar act_gelu's clamps and polynomial vectorise only at the baseline's width, which
 * made a q8_0 prompt's separate GELU ~12% of its prefill (AVX-512, Xeon). The row copy is
 * called per chunk from plain code: a copy must not open a parallel region (isa_copies.h). */
static void gelu_forward(int isa, float *out, const float *inp, long N) {
    void (*row)(float *, const float *, int) = ANDREA_ISA_PICK(andrea_cpu_isa(isa), gelu_row);
    long chunks = (N + GELU_CHUNK - 1) / GELU_CHUNK;
#pragma omp parallel for schedule(static) if (N >= (1L << 15))
    for (long c = 0; c < chunks; c++) {
        long i = c * GELU_CHUNK;
        row(out + i, inp + i, (int)(N - i < GELU_CHUNK ? N - i : GELU_CHUNK));
    }
}

void andrea_activation_forward(float *out, const float *inp, size_t n, int act) {
    andrea_activation_forward_isa(-1, out, inp, n, act);
}

void andrea_activation_forward_isa(int isa, float *out, const float *inp, size_t n, int act) {
    long N = (long)n;
    switch (act) {
    case ANDREA_ACT_GELU:
        gelu_forward(isa, out, inp, N);
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
