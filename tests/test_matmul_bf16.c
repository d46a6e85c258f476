/* test_matmul_bf16.c - bf16 mixed-precision matmuls (AVX512-BF16) against a double
 * reference computed on the same bf16-rounded operands: the only difference left is
 * fp32 accumulation order. Skipped (77) on CPUs without AVX512-BF16. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/backend.h"
#include "reference/reference.h"
#include "test_util.h"

static float bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    u &= 0xFFFF0000u;
    memcpy(&f, &u, 4);
    return f;
}

static void fill(float *p, size_t n, andrea_rng *r) {
    for (size_t i = 0; i < n; i++) p[i] = andrea_rng_normal(r);
}

static void check(int M, int K, int N) {
    andrea_rng r;
    andrea_rng_seed(&r, (uint64_t)(M * 7 + K * 3 + N));
    size_t mk = (size_t)M * K, nk = (size_t)N * K, mn = (size_t)M * N;
    float *inp = malloc(4 * mk), *w = malloc(4 * nk), *dout = malloc(4 * mn);
    float *ri = malloc(4 * mk), *rw = malloc(4 * nk), *rd = malloc(4 * mn);
    float *out = malloc(4 * mn), *ref = malloc(4 * mn);
    float *dinp = calloc(mk, 4), *dinp_r = calloc(mk, 4), *dw = calloc(nk, 4), *dw_r = calloc(nk, 4);
    fill(inp, mk, &r), fill(w, nk, &r), fill(dout, mn, &r);
    for (size_t i = 0; i < mk; i++) ri[i] = bf16_round(inp[i]);
    for (size_t i = 0; i < nk; i++) rw[i] = bf16_round(w[i]);
    for (size_t i = 0; i < mn; i++) rd[i] = bf16_round(dout[i]);
    const andrea_backend *be = andrea_backend_find("cpu-bf16");
    CHECK(be != NULL);
    if (!be) return;
    be->ops.matmul_forward(be, out, inp, w, NULL, M, K, N);
    be->ops.matmul_backward(be, dinp, dw, NULL, dout, inp, w, M, K, N, 0);
    andrea_ref_matmul_forward(ref, ri, rw, NULL, M, K, N);
    andrea_ref_matmul_backward(dinp_r, dw_r, NULL, rd, ri, rw, M, K, N);
    /* products of bf16 values are exact in fp32; what remains is fp32 summation of up to
     * max(K, M) unit-variance terms: ~sqrt(n) eps relative to the sum's scale */
    double tol = 4e-6 * sqrt((double)(K > M ? K : M) * (N > K ? N : K));
    tu_check_array("bf16 forward", out, ref, mn, tol, 1e-5);
    tu_check_array("bf16 dinp", dinp, dinp_r, mk, tol, 1e-5);
    tu_check_array("bf16 dw", dw, dw_r, nk, tol, 1e-5);
    free(inp), free(w), free(dout), free(ri), free(rw), free(rd), free(out), free(ref);
    free(dinp), free(dinp_r), free(dw), free(dw_r);
}

int main(void) {
    if (!andrea_bf16_supported()) {
        printf("skip: no AVX512-BF16 on this CPU\n");
        CHECK(andrea_backend_find("cpu-bf16") == NULL); /* a clear error */
        return tu_failures ? 1 : 77;
    }
    check(64, 128, 384);
    check(130, 97, 257); /* odd K (a k pair padded with 0), edge rows and columns */
    check(768, 512, 128);
    check(33, 1000, 70); /* several k blocks */
    check(12, 300, 1100); /* few rows: columns split across threads; several column blocks */
    return tu_finish("test_matmul_bf16");
}
