/* test_matmul_backends.c - every matmul engine against the double-precision reference,
 * forward and all three backward products: the built-in tile at each instruction set
 * (baseline, AVX2, AVX-512: runtime dispatch means a machine normally runs only one),
 * and the BLAS backend when built in. */
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/backend.h"
#include "reference/reference.h"
#include "test_util.h"

static const andrea_backend *g_be; /* the backend under test */

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
    g_be->ops.matmul_forward(g_be, out, inp, w, b, M, K, N);
    andrea_ref_matmul_forward(ref, inp, w, b, M, K, N);
    g_be->ops.matmul_backward(g_be, dinp, dw, db, dout, inp, w, M, K, N, 0);
    andrea_ref_matmul_backward(dinp_r, dw_r, db_r, dout, inp, w, M, K, N);
    /* float32 sums of K (or M) unit-variance products: error ~ sqrt(K) eps per unit of scale */
    double tol = 2e-5 * (K > M ? K : M);
    tu_check_array("blas forward", out, ref, mn, tol, 1e-4);
    tu_check_array("blas dinp", dinp, dinp_r, mk, tol, 1e-4);
    tu_check_array("blas dw", dw, dw_r, nk, tol, 1e-4);
    tu_check_array("blas dbias", db, db_r, N, tol, 1e-4);
    free(inp), free(w), free(b), free(dout), free(out), free(ref);
    free(dinp), free(dinp_r), free(dw), free(dw_r), free(db), free(db_r);
}

/* The fused products (activation epilogue, residual) on the same engine as the plain ones:
 * in the tiles for the built-in engine, as a pass after the product for BLAS. */
static void check_fused(int M, int K, int N, int act) {
    andrea_rng r;
    andrea_rng_seed(&r, (uint64_t)(M * 17 + K * 5 + N + act));
    size_t mk = (size_t)M * K, nk = (size_t)N * K, mn = (size_t)M * N;
    float *inp = malloc(4 * mk), *w = malloc(4 * nk), *b = malloc(4 * N), *res = malloc(4 * mn);
    float *pre = malloc(4 * mn), *post = malloc(4 * mn), *want = malloc(4 * mn);
    float *want_post = malloc(4 * mn), *out = malloc(4 * mn);
    float *w2 = malloc(4 * nk), *dout2 = malloc(4 * mk), *dpre = malloc(4 * mn);
    float *dpost = calloc(mn, 4), *want_dpre = calloc(mn, 4);
    fill(inp, mk, &r), fill(w, nk, &r), fill(b, N, &r), fill(res, mn, &r);
    fill(w2, nk, &r), fill(dout2, mk, &r), fill(dpre, mn, &r);
    double tol = 2e-5 * (K > M ? K : M);
    g_be->ops.matmul_forward_act(g_be, pre, post, inp, w, b, M, K, N, act);
    g_be->ops.matmul_forward(g_be, want, inp, w, b, M, K, N);
    andrea_ref_activation_forward(want_post, pre, mn, act);
    tu_check_array("fused forward: pre", pre, want, mn, tol, 1e-4);
    tu_check_array("fused forward: post = act(pre)", post, want_post, mn, 1e-5, 1e-4);
    g_be->ops.matmul_forward_residual(g_be, out, inp, w, b, res, M, K, N);
    for (size_t i = 0; i < mn; i++) want[i] += res[i];
    tu_check_array("fused residual", out, want, mn, tol, 1e-4);
    /* y = post @ w2^T with w2 (K outputs, N inputs): dpre = act'(pre) * (dout2 @ w2) */
    g_be->ops.matmul_backward_act(g_be, dpre, NULL, NULL, dout2, post, w2, pre, M, N, K, act, 0);
    g_be->ops.matmul_backward(g_be, dpost, NULL, NULL, dout2, post, w2, M, N, K, 0);
    andrea_ref_activation_backward(want_dpre, pre, dpost, mn, act);
    tu_check_array("fused backward: dpre", dpre, want_dpre, mn, tol, 1e-4);
    free(inp), free(w), free(b), free(res), free(pre), free(post), free(want), free(want_post);
    free(out), free(w2), free(dout2), free(dpre), free(dpost), free(want_dpre);
}

int main(void) {
    static const char *const isa_variants[] = {"cpu-baseline", "cpu-avx2", "cpu-avx512"};
    for (int cap = 0; cap <= 2; cap++) {
        g_be = andrea_backend_find(isa_variants[cap]);
        if (!g_be) { /* an ISA this CPU lacks */
            printf("%s: skipped (%s)\n", isa_variants[cap], andrea_error());
            continue;
        }
        check_shape(64, 128, 384);
        check_shape(130, 96, 257); /* odd sizes: edge tiles */
        check_shape(300, 700, 96); /* several k blocks */
        check_fused(130, 96, 257, ANDREA_ACT_RELU2);
        check_fused(64, 300, 128, ANDREA_ACT_GELU);
    }
    g_be = andrea_backend_find("cpu-blas");
    if (!g_be) {
        printf("BLAS not built in: %s\n", andrea_error());
        return tu_finish("test_matmul_backends");
    }
    check_shape(64, 128, 384);  /* big enough to take the BLAS path */
    check_shape(130, 96, 257);  /* odd sizes */
    check_shape(768, 128, 512);
    check_fused(130, 96, 257, ANDREA_ACT_RELU2);
    check_fused(64, 300, 128, ANDREA_ACT_GELU);
    return tu_finish("test_matmul_backends");
}
