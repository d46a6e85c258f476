/*
 * test_cuda_lt.cpp - cuda-bf16's fused products (src/backend/cuda/cuda_lt.cu) take the
 * cuBLASLt path where they can and give what the unfused path gives: each product op on an
 * aligned shape runs one cublasLtMatmul with the epilogue it should (the emulator counts
 * them: BIAS for a biased forward, C for the residual and for accumulating gradients,
 * GELU_AUX_BIAS keeping GELU's input, DGELU in its backward), and the same op on buffers
 * one float off 16-byte alignment runs unfused (no cuBLASLt call) with the same result
 * within float rounding. test_backend_ops checks both against the double references; this
 * test checks which path ran. Built only with -DANDREA_CUDA_EMU=ON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/cuda_api.h"
#include "backend/cuda/cuda_lt.h"

extern "C" {
#include "andrea.h"
#include "test_util.h"
}


/* OFF16: 16-byte aligned, not 256 (as activations inside one allocation are: cuBLASLt's
 * heuristic assumes 256 unless told); OFF1: not 16-byte aligned (the unfused path) */
enum { M = 64, K = 64, N = 128, OFF16 = 4, OFF1 = 1, PAD = 4 };

static const andrea_backend *be;

/* a device copy of n values of a fixed pattern, at offset off floats into its allocation */
static float *device_pattern(size_t n, int seed, int off) {
    float *h = (float *)malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) h[i] = sinf((float)(i * 7 + seed)) * 0.5f;
    float *d = (float *)be->ops.alloc(be, sizeof(float) * (n + PAD));
    be->ops.upload(be, d + off, h, sizeof(float) * n);
    free(h);
    return d + off;
}

static float *host(const float *d, size_t n) {
    float *h = (float *)malloc(sizeof(float) * n);
    be->ops.download(be, h, d, sizeof(float) * n);
    return h;
}

/* the largest difference relative to the largest magnitude */
static double rel_diff(const float *a, const float *b, size_t n) {
    double d = 0, s = 1e-30;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs((double)a[i]));
    }
    return d / s;
}

/* The op on fresh buffers at offset off: its output (n floats of slot `out`), and how
 * many cuBLASLt calls with the epilogue it made. */
typedef struct {
    float *x, *w, *bias, *resid, *pre, *post, *dout, *dinp, *dw;
} bufs;

static bufs make(int off) {
    bufs b;
    b.x = device_pattern((size_t)M * K, 1, off), b.w = device_pattern((size_t)N * K, 2, off);
    b.bias = device_pattern(N, 3, off), b.resid = device_pattern((size_t)M * N, 4, off);
    b.pre = device_pattern((size_t)M * N, 5, off), b.post = device_pattern((size_t)M * N, 6, off);
    b.dout = device_pattern((size_t)M * N, 7, off), b.dinp = device_pattern((size_t)M * K, 8, off);
    b.dw = device_pattern((size_t)N * K, 9, off);
    return b;
}

/* op on buffers at offset off: its cuBLASLt calls with epilogue, and the result out */
static long run(void (*op)(const bufs &), int off, float *bufs::*out, size_t n, int epilogue,
                float **result) {
    bufs b = make(off);
    long before = cuda_emu::lt_matmuls(epilogue);
    op(b);
    *result = host(b.*out, n);
    return cuda_emu::lt_matmuls(epilogue) - before;
}

/* op fused at 16-byte alignment (and at 256), unfused off it, the same results */
static void check(const char *name, void (*op)(const bufs &), float *bufs::*out, size_t n,
                  int epilogue, long calls) {
    float *r256, *r16, *r1;
    long c256 = run(op, 0, out, n, epilogue, &r256), c16 = run(op, OFF16, out, n, epilogue, &r16);
    long c1 = run(op, OFF1, out, n, epilogue, &r1);
    double d16 = rel_diff(r256, r16, n), d1 = rel_diff(r256, r1, n);
    printf("test_cuda_lt: %-26s cuBLASLt calls (epilogue %3d) at 256/16/4-byte alignment: "
           "%ld/%ld/%ld; unfused vs fused %.2g\n", name, epilogue, c256, c16, c1, d1);
    CHECK(c256 == calls && c16 == calls && c1 == 0);
    CHECK(d16 == 0 && d1 <= 1e-6);
    CHECK(andrea_cuda_last_error() == NULL);
    free(r256), free(r16), free(r1);
}

static void fwd_bias(const bufs &b) { be->ops.matmul_forward(be, b.post, b.x, b.w, b.bias, M, K, N); }
static void fwd_resid(const bufs &b) {
    be->ops.matmul_forward_residual(be, b.post, b.x, b.w, b.bias, b.resid, M, K, N);
}
static void fwd_gelu(const bufs &b) {
    be->ops.matmul_forward_act(be, b.pre, b.post, b.x, b.w, b.bias, M, K, N, ANDREA_ACT_GELU);
}
/* the backward of a (M, N) = x (M, K) w^T whose input is a GELU's output: dinp is dpre */
static void bwd_gelu(const bufs &b) {
    be->ops.matmul_backward_act(be, b.dinp, b.dw, NULL, b.dout, b.x, b.w, b.pre, M, K, N,
                                ANDREA_ACT_GELU, 0);
}
static void bwd_accumulate(const bufs &b) {
    be->ops.matmul_backward(be, b.dinp, b.dw, NULL, b.dout, b.x, b.w, M, K, N, 0);
}

int main(void) {
    be = andrea_backend_find("cuda-bf16");
    if (!be) {
        fprintf(stderr, "test_cuda_lt: cuda-bf16 not found: %s\n", andrea_error());
        return 1;
    }
    size_t out_n = (size_t)M * N;
    const int bias = CUBLASLT_EPILOGUE_BIAS, gelu = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    check("matmul_forward", fwd_bias, &bufs::post, out_n, bias, 1);
    check("matmul_forward_residual", fwd_resid, &bufs::post, out_n, bias, 1);
    check("matmul_forward_act gelu", fwd_gelu, &bufs::post, out_n, gelu, 1);
    check("  (its kept input)", fwd_gelu, &bufs::pre, out_n, gelu, 1);
    check("matmul_backward_act gelu", bwd_gelu, &bufs::dinp, (size_t)M * K,
          CUBLASLT_EPILOGUE_DGELU, 1);
    /* dinp += dout w and dw += dout^T x: two accumulating products, C = D */
    check("matmul_backward: dinp", bwd_accumulate, &bufs::dinp, (size_t)M * K,
          CUBLASLT_EPILOGUE_DEFAULT, 2);
    check("  dw (dw_init 0)", bwd_accumulate, &bufs::dw, (size_t)N * K,
          CUBLASLT_EPILOGUE_DEFAULT, 2);
    return tu_finish("test_cuda_lt");
}
