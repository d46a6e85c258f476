/* test_matmul_backends.c - every matmul engine against the double-precision reference,
 * forward and all three backward products: the built-in tile at each instruction set
 * (baseline, AVX2, AVX-512: runtime dispatch means a machine normally runs only one),
 * and the BLAS backend when built in. */
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "kernels/kernels.h"
#include "test_util.h"

static void fill(float *p, size_t n, andrea_rng *r) {
    for (size_t i = 0; i < n; i++) p[i] = andrea_rng_normal(r);
}

static void check_shape(int M, int K, int N) {
    andrea_rng r;
    andrea_rng_seed(&r, (uint64_t)(M * 131 + K * 7 + N));
    size_t mk = (size_t)M * K, nk = (size_t)N * K, mn = (size_t)M * N;
    float *inp = malloc(4 * mk), *w = malloc(4 * nk), *b = malloc(4 * N), *dout = malloc(4 * mn);
    float *out = malloc(4 * mn), *ref = malloc(4 * mn);
    float *dinp = malloc(4 * mk), *dinp_r = malloc(4 * mk), *dw = malloc(4 * nk), *dw_r = malloc(4 * nk);
    float *db = malloc(4 * N), *db_r = malloc(4 * N);
    fill(inp, mk, &r), fill(w, nk, &r), fill(b, N, &r), fill(dout, mn, &r);
    fill(dinp, mk, &r), fill(dw, nk, &r), fill(db, N, &r); /* pre-filled: backward accumulates */
    memcpy(dinp_r, dinp, 4 * mk), memcpy(dw_r, dw, 4 * nk), memcpy(db_r, db, 4 * N);
    matmul_forward(out, inp, w, b, M, K, N);
    ref_matmul_forward(ref, inp, w, b, M, K, N);
    matmul_backward(dinp, dw, db, dout, inp, w, M, K, N);
    ref_matmul_backward(dinp_r, dw_r, db_r, dout, inp, w, M, K, N);
    /* float32 sums of K (or M) unit-variance products: error ~ sqrt(K) eps per unit of scale */
    double tol = 2e-5 * (K > M ? K : M);
    tu_check_array("blas forward", out, ref, mn, tol, 1e-4);
    tu_check_array("blas dinp", dinp, dinp_r, mk, tol, 1e-4);
    tu_check_array("blas dw", dw, dw_r, nk, tol, 1e-4);
    tu_check_array("blas dbias", db, db_r, N, tol, 1e-4);
    free(inp), free(w), free(b), free(dout), free(out), free(ref);
    free(dinp), free(dinp_r), free(dw), free(dw_r), free(db), free(db_r);
}

int main(void) {
    for (int cap = 0; cap <= 2; cap++) {
        matmul_set_isa(cap);
        check_shape(64, 128, 384);
        check_shape(130, 96, 257); /* odd sizes: edge tiles */
        check_shape(300, 700, 96); /* several k blocks */
    }
    matmul_set_isa(-1);
    if (andrea_set_matmul_backend(ANDREA_MATMUL_BLAS) != 0) {
        printf("BLAS not built in: %s\n", andrea_error());
        return tu_finish("test_matmul_backends");
    }
    check_shape(64, 128, 384);  /* big enough to take the BLAS path */
    check_shape(130, 96, 257);  /* odd sizes */
    check_shape(768, 128, 512);
    andrea_set_matmul_backend(ANDREA_MATMUL_BUILTIN);
    return tu_finish("test_matmul_backends");
}
