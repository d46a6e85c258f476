/*
 * test_kernels.c - every fast kernel against its plain reference (reference.c),
 * and the references themselves against known values and central finite
 * differences in double, so that the yardstick is trustworthy.
 *
 * Shapes deliberately include 1 and odd sizes that are not multiples of any
 * SIMD width or block size (M=7, K=5, N=257 ...), so tails and edge blocks run.
 * Backward checks pre-fill every gradient with nonzero values: the contract is
 * +=, and an overwriting kernel shows up as an error of the pre-fill's size.
 *
 * Tolerance vocabulary: eps = FLT_EPSILON (2^-23). A float sum of n terms in any
 * order is within about n * eps/2 * sum|term| of the exact sum (Higham's gamma_n),
 * so sums get bounds proportional to their length, with a factor-2 margin.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "andrea.h"
#include "backend/cpu/kernels/fastmath.h"
#include "reference/reference.h"
#include "test_util.h"

#define EPS ((double)FLT_EPSILON)

/* ---- helpers ------------------------------------------------------------------------- */

static float rnd_uniform(float lo, float hi) { return (float)(lo + (hi - lo) * tu_rnd_unit()); }

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "test_kernels: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}
static double *dalloc(size_t n) { return xmalloc(n * sizeof(double)); }
static float *rnd_array(size_t n, float lo, float hi) {
    float *x = tu_falloc(n);
    for (size_t i = 0; i < n; i++) x[i] = rnd_uniform(lo, hi);
    return x;
}
static float *abs_dup(const float *x, size_t n) {
    float *y = tu_falloc(n);
    for (size_t i = 0; i < n; i++) y[i] = fabsf(x[i]);
    return y;
}

/* |got - want| <= (terms + 2) eps * absum + eps |want|, with absum the same sum taken
 * over absolute values: the rounding bound of a float sum of `terms` terms. */
static int check_sum_bound(const char *what, const float *got, const float *want,
                           const float *absum, size_t n, int terms) {
    size_t worst = 0;
    double worst_ratio = -1.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        double lim = (terms + 2) * EPS * absum[i] + EPS * fabs((double)want[i]) + 1e-30;
        double r = isnan(d) ? INFINITY : d / lim;
        if (r > worst_ratio) {
            worst_ratio = r;
            worst = i;
        }
    }
    if (!(worst_ratio <= 1.0)) {
        fprintf(stderr, "%s: mismatch at [%zu]: got %.9g want %.9g (error %.3g x the %d-term bound)\n",
                what, worst, got[worst], want[worst], worst_ratio, terms);
        tu_failures++;
        return 0;
    }
    return 1;
}

/* Central differences in double: grad[i] = (f(x + h e_i) - f(x - h e_i)) / 2h.
 * h = 1e-5 ~ cbrt(double eps) balances truncation (h^2) against rounding (eps/h):
 * about 1e-10 relative, far below the float tolerances used against it. */
typedef double (*loss_fn)(void *ctx);
static void fd_grad(double *x, size_t n, loss_fn f, void *ctx, double *grad) {
    const double h = 1e-5;
    for (size_t i = 0; i < n; i++) {
        double save = x[i];
        x[i] = save + h;
        double lp = f(ctx);
        x[i] = save - h;
        double lm = f(ctx);
        x[i] = save;
        grad[i] = (lp - lm) / (2.0 * h);
    }
}
static double *to_double(const float *x, size_t n) {
    double *y = dalloc(n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}
/* Reference gradient (float, accumulated onto prefill) against prefill + FD (double). */
static void check_fd(const char *what, const float *ref_grad, const float *prefill,
                     const double *fd, size_t n) {
    float *want = tu_falloc(n);
    for (size_t i = 0; i < n; i++) want[i] = (float)((double)prefill[i] + fd[i]);
    /* The reference rounds once to float and reads float saved statistics (rstd,
     * att): ~1e-7 relative; 1e-5 of the tensor's scale leaves room and still
     * catches any wrong term, which is O(1) of it. */
    tu_check_rel(what, ref_grad, want, n, 1e-5);
    free(want);
}

/* ---- matmul -------------------------------------------------------------------------- */

static void test_matmul(int M, int K, int N, int with_bias) {
    char what[128];
    size_t nI = (size_t)M * K, nW = (size_t)N * K, nO = (size_t)M * N;
    float *inp = rnd_array(nI, -1, 1), *w = rnd_array(nW, -1, 1);
    float *bias = with_bias ? rnd_array((size_t)N, -1, 1) : NULL;
    float *out = tu_falloc(nO), *ref = tu_falloc(nO), *bound = tu_falloc(nO);
    float *a_inp = abs_dup(inp, nI), *a_w = abs_dup(w, nW);
    float *a_bias = with_bias ? abs_dup(bias, (size_t)N) : NULL;

    andrea_matmul_forward(out, inp, w, bias, M, K, N);
    andrea_ref_matmul_forward(ref, inp, w, bias, M, K, N);
    andrea_ref_matmul_forward(bound, a_inp, a_w, a_bias, M, K, N);
    snprintf(what, sizeof what, "andrea_matmul_forward M=%d K=%d N=%d bias=%d", M, K, N, with_bias);
    /* out[m][n] is a float sum of K products (+ bias). */
    check_sum_bound(what, out, ref, bound, nO, K + 1);

    float *dout = rnd_array(nO, -1, 1), *a_dout = abs_dup(dout, nO);
    float *dinp0 = rnd_array(nI, -1, 1), *dw0 = rnd_array(nW, -1, 1);
    float *db0 = rnd_array((size_t)N, -1, 1);
    float *dinp = tu_dup(dinp0, nI), *dw = tu_dup(dw0, nW), *db = tu_dup(db0, (size_t)N);
    float *rdinp = tu_dup(dinp0, nI), *rdw = tu_dup(dw0, nW), *rdb = tu_dup(db0, (size_t)N);
    float *bdinp = abs_dup(dinp0, nI), *bdw = abs_dup(dw0, nW), *bdb = abs_dup(db0, (size_t)N);
    andrea_matmul_backward(dinp, dw, db, dout, inp, w, M, K, N);
    andrea_ref_matmul_backward(rdinp, rdw, rdb, dout, inp, w, M, K, N);
    andrea_ref_matmul_backward(bdinp, bdw, bdb, a_dout, a_inp, a_w, M, K, N);
    /* dinp sums N products onto the pre-fill; dw and dbias sum M. */
    snprintf(what, sizeof what, "andrea_matmul_backward dinp M=%d K=%d N=%d", M, K, N);
    check_sum_bound(what, dinp, rdinp, bdinp, nI, N + 1);
    snprintf(what, sizeof what, "andrea_matmul_backward dw M=%d K=%d N=%d", M, K, N);
    check_sum_bound(what, dw, rdw, bdw, nW, M + 1);
    snprintf(what, sizeof what, "andrea_matmul_backward dbias M=%d K=%d N=%d", M, K, N);
    check_sum_bound(what, db, rdb, bdb, (size_t)N, M + 1);

    /* NULL gradients are "not needed": each one alone must give the same numbers. */
    float *dinp2 = tu_dup(dinp0, nI), *dw2 = tu_dup(dw0, nW), *db2 = tu_dup(db0, (size_t)N);
    andrea_matmul_backward(dinp2, NULL, NULL, dout, inp, w, M, K, N);
    andrea_matmul_backward(NULL, dw2, NULL, dout, inp, w, M, K, N);
    andrea_matmul_backward(NULL, NULL, db2, dout, inp, w, M, K, N);
    snprintf(what, sizeof what, "andrea_matmul_backward dinp only M=%d K=%d N=%d", M, K, N);
    check_sum_bound(what, dinp2, rdinp, bdinp, nI, N + 1);
    snprintf(what, sizeof what, "andrea_matmul_backward dw only M=%d K=%d N=%d", M, K, N);
    check_sum_bound(what, dw2, rdw, bdw, nW, M + 1);
    snprintf(what, sizeof what, "andrea_matmul_backward dbias only M=%d K=%d N=%d", M, K, N);
    check_sum_bound(what, db2, rdb, bdb, (size_t)N, M + 1);

    free(inp); free(w); free(bias); free(out); free(ref); free(bound);
    free(a_inp); free(a_w); free(a_bias); free(dout); free(a_dout);
    free(dinp0); free(dw0); free(db0); free(dinp); free(dw); free(db);
    free(rdinp); free(rdw); free(rdb); free(bdinp); free(bdw); free(bdb);
    free(dinp2); free(dw2); free(db2);
}

/* andrea_gemm_nn with a transposed, strided A, padded C rows and B either row-major with padded
 * rows or transposed (B(k, n) = b[n * ldb + k], as the forward pass reads w); accumulate
 * 0 and 1. Sizes cover ragged tiles, several KC x NC blocks and both thread splits. */
static void test_gemm_nn(int isa, int M, int K, int N, int accumulate, int b_trans) {
    char what[128];
    int lda = M + 3, ldb = b_trans ? K + 2 : N + 2, ldc = N + 5;
    long b_rs = b_trans ? 1 : ldb, b_cs = b_trans ? ldb : 1;
    float *a = rnd_array((size_t)K * lda, -1, 1); /* A(m, k) = a[m + k * lda] */
    float *b = rnd_array((size_t)(b_trans ? N : K) * ldb, -1, 1);
    float *c0 = rnd_array((size_t)M * ldc, -1, 1);
    float *c = tu_dup(c0, (size_t)M * ldc), *want = tu_dup(c0, (size_t)M * ldc);
    float *bound = tu_falloc((size_t)M * ldc);
    andrea_gemm_nn_isa(isa, c, ldc, a, 1, lda, b, b_rs, b_cs, M, K, N, accumulate);
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < ldc; n++) {
            size_t o = (size_t)m * ldc + n;
            if (n >= N) { /* padding must stay untouched */
                bound[o] = 0.0f;
                continue;
            }
            double s = accumulate ? c0[o] : 0.0, sa = accumulate ? fabsf(c0[o]) : 0.0;
            for (int k = 0; k < K; k++) {
                double p = (double)a[m + (size_t)k * lda] * b[k * b_rs + n * b_cs];
                s += p;
                sa += fabs(p);
            }
            want[o] = (float)s;
            bound[o] = (float)sa;
        }
    }
    snprintf(what, sizeof what, "andrea_gemm_nn %s (A transposed, B %s) M=%d K=%d N=%d acc=%d",
             andrea_isa_name(isa), b_trans ? "transposed" : "row-major", M, K, N, accumulate);
    check_sum_bound(what, c, want, bound, (size_t)M * ldc, K + 1);
    free(a); free(b); free(c0); free(c); free(want); free(bound);
}

/* ---- residual ------------------------------------------------------------------------ */

static void test_residual(size_t n) {
    float *a = rnd_array(n, -2, 2), *b = rnd_array(n, -2, 2), *out = tu_falloc(n);
    andrea_residual_forward(out, a, b, n);
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= out[i] == a[i] + b[i]; /* one float add: exact */
    if (!ok) {
        fprintf(stderr, "andrea_residual_forward n=%zu: not exactly a + b\n", n);
        tu_failures++;
    }
    free(a); free(b); free(out);
}

/* ---- layernorm / rmsnorm ---------------------------------------------------------------- */

static void test_layernorm(int N, int C, int with_bias) {
    char what[128];
    size_t n = (size_t)N * C;
    const float eps = 1e-5f;
    float *x = rnd_array(n, -2, 2), *w = rnd_array((size_t)C, 0.5f, 1.5f);
    float *b = with_bias ? rnd_array((size_t)C, -1, 1) : NULL;
    for (size_t i = 0; i < n; i++) x[i] += 0.5f; /* a nonzero mean to subtract */
    float *out = tu_falloc(n), *mean = tu_falloc((size_t)N), *rstd = tu_falloc((size_t)N);
    float *rout = tu_falloc(n), *rmean = tu_falloc((size_t)N), *rrstd = tu_falloc((size_t)N);
    andrea_layernorm_forward(out, mean, rstd, x, w, b, N, C, eps);
    andrea_ref_layernorm_forward(rout, rmean, rrstd, x, w, b, N, C, eps);
    /* mean and variance are float sums over C terms: ~C eps relative, and the
     * output is O(1) of them. */
    double rel = (C + 16) * EPS;
    snprintf(what, sizeof what, "andrea_layernorm_forward out N=%d C=%d", N, C);
    tu_check_rel(what, out, rout, n, rel);
    snprintf(what, sizeof what, "andrea_layernorm_forward mean N=%d C=%d", N, C);
    tu_check_rel(what, mean, rmean, (size_t)N, rel);
    snprintf(what, sizeof what, "andrea_layernorm_forward rstd N=%d C=%d", N, C);
    tu_check_array(what, rstd, rrstd, (size_t)N, 0.0, rel);

    float *dout = rnd_array(n, -1, 1);
    float *dx0 = rnd_array(n, -1, 1), *dw0 = rnd_array((size_t)C, -1, 1);
    float *db0 = rnd_array((size_t)C, -1, 1);
    float *dx = tu_dup(dx0, n), *dw = tu_dup(dw0, (size_t)C), *db = tu_dup(db0, (size_t)C);
    float *rdx = tu_dup(dx0, n), *rdw = tu_dup(dw0, (size_t)C), *rdb = tu_dup(db0, (size_t)C);
    /* Both backwards read the reference's saved statistics, so only the backward is compared. */
    andrea_layernorm_backward(dx, dw, db, dout, x, w, rmean, rrstd, N, C);
    andrea_ref_layernorm_backward(rdx, rdw, rdb, dout, x, w, rmean, rrstd, N, C);
    /* dx: two float means over C, then a cancelling difference dn - mean(dn), whose rounding
     * (an ulp of dn; with FMA contraction, as -march=native builds do, it is not even the
     * same rounding on both sides) is multiplied by rstd: up to 1/sqrt(eps) ~ 316 when a row
     * is constant (C = 1). dw, db: sums over N rows. */
    double rmax = 1.0;
    for (int i = 0; i < N; i++) rmax = rrstd[i] > rmax ? rrstd[i] : rmax;
    double dx_tol = (C + 16) * EPS * rmax;
    snprintf(what, sizeof what, "andrea_layernorm_backward dinp N=%d C=%d", N, C);
    tu_check_rel(what, dx, rdx, n, dx_tol);
    snprintf(what, sizeof what, "andrea_layernorm_backward dw N=%d C=%d", N, C);
    tu_check_rel(what, dw, rdw, (size_t)C, (N + C + 16) * EPS);
    snprintf(what, sizeof what, "andrea_layernorm_backward db N=%d C=%d", N, C);
    tu_check_rel(what, db, rdb, (size_t)C, (N + 16) * EPS);
    /* NULL gradients are "not needed": each one alone gives the same numbers. */
    float *dx2 = tu_dup(dx0, n), *dw2 = tu_dup(dw0, (size_t)C), *db2 = tu_dup(db0, (size_t)C);
    andrea_layernorm_backward(dx2, NULL, NULL, dout, x, w, rmean, rrstd, N, C);
    andrea_layernorm_backward(NULL, dw2, NULL, dout, x, w, rmean, rrstd, N, C);
    andrea_layernorm_backward(NULL, NULL, db2, dout, x, w, rmean, rrstd, N, C);
    snprintf(what, sizeof what, "andrea_layernorm_backward dinp only N=%d C=%d", N, C);
    tu_check_rel(what, dx2, rdx, n, dx_tol);
    snprintf(what, sizeof what, "andrea_layernorm_backward dw only N=%d C=%d", N, C);
    tu_check_rel(what, dw2, rdw, (size_t)C, (N + C + 16) * EPS);
    snprintf(what, sizeof what, "andrea_layernorm_backward db only N=%d C=%d", N, C);
    tu_check_rel(what, db2, rdb, (size_t)C, (N + 16) * EPS);
    free(dx2); free(dw2); free(db2);

    free(x); free(w); free(b); free(out); free(mean); free(rstd); free(rout); free(rmean);
    free(rrstd); free(dout); free(dx0); free(dw0); free(db0); free(dx); free(dw); free(db);
    free(rdx); free(rdw); free(rdb);
}

static void test_rmsnorm(int N, int C) {
    char what[128];
    size_t n = (size_t)N * C;
    const float eps = 1e-5f;
    float *x = rnd_array(n, -2, 2), *w = rnd_array((size_t)C, 0.5f, 1.5f);
    float *out = tu_falloc(n), *rstd = tu_falloc((size_t)N), *rout = tu_falloc(n), *rrstd = tu_falloc((size_t)N);
    andrea_rmsnorm_forward(out, rstd, x, w, N, C, eps);
    andrea_ref_rmsnorm_forward(rout, rrstd, x, w, N, C, eps);
    /* mean(x^2) is a float sum of C positive terms: <= C eps/2 relative, O(1) in the output. */
    double rel = (C + 16) * EPS;
    snprintf(what, sizeof what, "andrea_rmsnorm_forward out N=%d C=%d", N, C);
    tu_check_rel(what, out, rout, n, rel);
    snprintf(what, sizeof what, "andrea_rmsnorm_forward rstd N=%d C=%d", N, C);
    tu_check_array(what, rstd, rrstd, (size_t)N, 0.0, rel);

    float *dout = rnd_array(n, -1, 1);
    float *dx0 = rnd_array(n, -1, 1), *dw0 = rnd_array((size_t)C, -1, 1);
    float *dx = tu_dup(dx0, n), *dw = tu_dup(dw0, (size_t)C), *rdx = tu_dup(dx0, n), *rdw = tu_dup(dw0, (size_t)C);
    andrea_rmsnorm_backward(dx, dw, dout, x, w, rrstd, N, C);
    andrea_ref_rmsnorm_backward(rdx, rdw, dout, x, w, rrstd, N, C);
    /* dx: one float mean over C and a cancelling difference; dw: a sum over N rows. */
    snprintf(what, sizeof what, "andrea_rmsnorm_backward dinp N=%d C=%d", N, C);
    tu_check_rel(what, dx, rdx, n, (C + 16) * EPS);
    snprintf(what, sizeof what, "andrea_rmsnorm_backward dw N=%d C=%d", N, C);
    tu_check_rel(what, dw, rdw, (size_t)C, (N + 16) * EPS);
    float *dx2 = tu_dup(dx0, n), *dw2 = tu_dup(dw0, (size_t)C);
    andrea_rmsnorm_backward(dx2, NULL, dout, x, w, rrstd, N, C);
    andrea_rmsnorm_backward(NULL, dw2, dout, x, w, rrstd, N, C);
    snprintf(what, sizeof what, "andrea_rmsnorm_backward dinp only N=%d C=%d", N, C);
    tu_check_rel(what, dx2, rdx, n, (C + 16) * EPS);
    snprintf(what, sizeof what, "andrea_rmsnorm_backward dw only N=%d C=%d", N, C);
    tu_check_rel(what, dw2, rdw, (size_t)C, (N + 16) * EPS);
    free(dx2); free(dw2);

    free(x); free(w); free(out); free(rstd); free(rout); free(rrstd); free(dout);
    free(dx0); free(dw0); free(dx); free(dw); free(rdx); free(rdw);
}

/* ---- activations ------------------------------------------------------------------------ */

static const char *act_name(int act) {
    return act == ANDREA_ACT_GELU ? "gelu" : act == ANDREA_ACT_RELU ? "relu" : "relu2";
}

static void test_activation(int act, size_t n) {
    char what[128];
    float *x = rnd_array(n, -6, 6);
    /* Saturated tails: a tanh written as (e^2u - 1)/(e^2u + 1) turns into inf/inf here. */
    static const float extremes[] = {-100.0f, -30.0f, -10.0f, 10.0f, 30.0f, 100.0f, 1e-4f, -1e-4f};
    for (size_t i = 0; i < sizeof extremes / sizeof *extremes && i < n; i++) x[i] = extremes[i];
    float *out = tu_falloc(n), *ref = tu_falloc(n);
    andrea_activation_forward(out, x, n, act);
    andrea_ref_activation_forward(ref, x, n, act);
    /* A few float ops and one tanhf (a couple of ulps): 1e-5 relative, and 1e-6 absolute
     * where gelu's 1 + tanh cancels in the negative tail. */
    snprintf(what, sizeof what, "andrea_activation_forward %s n=%zu", act_name(act), n);
    tu_check_array(what, out, ref, n, 1e-6, 1e-5);

    float *dout = rnd_array(n, -1, 1), *d0 = rnd_array(n, -1, 1);
    float *d = tu_dup(d0, n), *rd = tu_dup(d0, n);
    andrea_activation_backward(d, x, dout, n, act);
    andrea_ref_activation_backward(rd, x, dout, n, act);
    /* Same ops plus the += onto an O(1) pre-fill: eps-level absolute error from the add. */
    snprintf(what, sizeof what, "andrea_activation_backward %s n=%zu", act_name(act), n);
    tu_check_array(what, d, rd, n, 2e-6, 1e-5);
    free(x); free(out); free(ref); free(dout); free(d0); free(d); free(rd);
}

/* The MLP matmuls with the activation fused in: the same product (bit for bit: same tiles,
 * same k order) and the same activation math as the separate kernels. */
static void test_matmul_act(int act, int M, int K, int N) {
    char what[128];
    size_t nI = (size_t)M * K, nW = (size_t)N * K, nO = (size_t)M * N;
    float *inp = rnd_array(nI, -1, 1), *w = rnd_array(nW, -1, 1), *bias = rnd_array((size_t)N, -1, 1);
    float *pre = tu_falloc(nO), *post = tu_falloc(nO), *want_pre = tu_falloc(nO);
    float *want_post = tu_falloc(nO);
    andrea_matmul_forward_act(pre, post, inp, w, bias, M, K, N, act);
    andrea_matmul_forward(want_pre, inp, w, bias, M, K, N);
    andrea_activation_forward(want_post, want_pre, nO, act);
    snprintf(what, sizeof what, "andrea_matmul_forward_act %s pre M=%d K=%d N=%d", act_name(act), M, K, N);
    tu_check_array(what, pre, want_pre, nO, 0.0, 0.0);
    /* the same activation math on equal inputs; FMA contraction may differ by an ulp */
    snprintf(what, sizeof what, "andrea_matmul_forward_act %s post M=%d K=%d N=%d", act_name(act), M, K, N);
    tu_check_array(what, post, want_post, nO, 1e-6, 1e-5);

    /* backward of y = post @ w2^T with w2 (K2 = N inputs -> N2 outputs) */
    int N2 = K;
    float *w2 = rnd_array((size_t)N2 * N, -1, 1), *dout = rnd_array((size_t)M * N2, -1, 1);
    float *dpre = rnd_array(nO, -1, 1); /* garbage: the fused kernel overwrites */
    float *dw = tu_falloc((size_t)N2 * N), *db = tu_falloc((size_t)N2);
    float *dpost = tu_falloc(nO), *want_dpre = tu_falloc(nO);
    float *want_dw = tu_falloc((size_t)N2 * N), *want_db = tu_falloc((size_t)N2);
    float *zeroed[] = {dw, db, dpost, want_dpre, want_dw, want_db}; /* accumulated into */
    size_t sizes[] = {(size_t)N2 * N, (size_t)N2, nO, nO, (size_t)N2 * N, (size_t)N2};
    for (int i = 0; i < 6; i++) memset(zeroed[i], 0, sizeof(float) * sizes[i]);
    andrea_matmul_backward_act(dpre, dw, db, dout, post, w2, pre, M, N, N2, act);
    andrea_matmul_backward(dpost, want_dw, want_db, dout, post, w2, M, N, N2);
    /* the separate fast pass (itself tested against the reference above). The fused one
     * runs GELU' in the ISA's vector code (with FMAs) and the pass in scalar code: near
     * gelu''s zero crossing its two terms cancel, and one float rounding of each (~3e-8)
     * times |dpost| ~ 10-30 here gives up to ~1e-6 absolute apart */
    andrea_activation_backward(want_dpre, pre, dpost, nO, act);
    snprintf(what, sizeof what, "andrea_matmul_backward_act %s dpre M=%d N=%d", act_name(act), M, N);
    tu_check_array(what, dpre, want_dpre, nO, 4e-6, 1e-5);
    snprintf(what, sizeof what, "andrea_matmul_backward_act %s dw M=%d N=%d", act_name(act), M, N);
    tu_check_array(what, dw, want_dw, (size_t)N2 * N, 0.0, 0.0);
    snprintf(what, sizeof what, "andrea_matmul_backward_act %s dbias M=%d N=%d", act_name(act), M, N);
    tu_check_array(what, db, want_db, (size_t)N2, 0.0, 0.0);
    free(inp); free(w); free(bias); free(pre); free(post); free(want_pre); free(want_post);
    free(w2); free(dout); free(dpre); free(dw); free(db); free(dpost); free(want_dpre);
    free(want_dw); free(want_db);
}

/* The residual add fused into the output projection: resid + (inp @ w^T + bias) up to the
 * order of the additions (resid and bias first, then the products in k order). */
static void test_matmul_residual(int M, int K, int N, int with_bias) {
    char what[128];
    size_t nI = (size_t)M * K, nW = (size_t)N * K, nO = (size_t)M * N;
    float *inp = rnd_array(nI, -1, 1), *w = rnd_array(nW, -1, 1), *resid = rnd_array(nO, -1, 1);
    float *bias = with_bias ? rnd_array((size_t)N, -1, 1) : NULL;
    float *out = tu_falloc(nO), *want = tu_falloc(nO), *bound = tu_falloc(nO);
    float *a_inp = abs_dup(inp, nI), *a_w = abs_dup(w, nW), *a_r = abs_dup(resid, nO);
    float *a_bias = with_bias ? abs_dup(bias, (size_t)N) : NULL;
    andrea_matmul_forward_residual(out, inp, w, bias, resid, M, K, N);
    andrea_ref_matmul_forward(want, inp, w, bias, M, K, N);
    andrea_ref_matmul_forward(bound, a_inp, a_w, a_bias, M, K, N);
    for (size_t i = 0; i < nO; i++) {
        want[i] = (float)((double)want[i] + resid[i]); /* two roundings: within the bound */
        bound[i] += a_r[i];
    }
    snprintf(what, sizeof what, "andrea_matmul_forward_residual M=%d K=%d N=%d bias=%d", M, K, N, with_bias);
    check_sum_bound(what, out, want, bound, nO, K + 3);
    free(inp); free(w); free(resid); free(bias); free(out); free(want); free(bound);
    free(a_inp); free(a_w); free(a_r); free(a_bias);
}

/* The decoding dot products (dot.c) against double sums over the same decoded weights,
 * at lengths that hit the 64-wide blocks, the 16-wide steps and the scalar tail. */
/* Each dot product at ISA isa, as the decoding product computes it (one row, one input). */
static void test_dots(int isa) {
    static const int Ks[] = {1, 15, 16, 17, 63, 64, 65, 200, 768};
    for (size_t t = 0; t < sizeof Ks / sizeof *Ks; t++) {
        int K = Ks[t];
        char what[96];
        float *w = rnd_array((size_t)K, -1, 1), *x = rnd_array((size_t)K, -1, 1);
        uint16_t *wb = malloc(sizeof(uint16_t) * (size_t)K);
        int8_t *wq = malloc((size_t)K);
        double sf = 0, sb = 0, sq = 0, af = 0, ab = 0, aq = 0;
        for (int k = 0; k < K; k++) {
            wb[k] = andrea_bf16_from_f32(w[k]);
            wq[k] = (int8_t)lrintf(w[k] * 127.0f);
            double fb = andrea_bf16_to_f32(wb[k]);
            sf += (double)w[k] * x[k], af += fabs((double)w[k] * x[k]);
            sb += fb * x[k], ab += fabs(fb * x[k]);
            sq += (double)wq[k] * x[k], aq += fabs((double)wq[k] * x[k]);
        }
        float got[3], one = 1.0f;
        andrea_matvec_rows_isa(isa, &got[0], x, w, ANDREA_QUANT_NONE, NULL, NULL, K, 1, 1);
        andrea_matvec_rows_isa(isa, &got[1], x, wb, ANDREA_QUANT_BF16, NULL, NULL, K, 1, 1);
        andrea_matvec_rows_isa(isa, &got[2], x, wq, ANDREA_QUANT_INT8, &one, NULL, K, 1, 1);
        if (isa == andrea_cpu_isa(-1) && (got[0] != andrea_dot_f32(w, x, K) ||
                                          got[1] != andrea_dot_bf16(wb, x, K) ||
                                          got[2] != andrea_dot_i8(wq, x, K))) {
            fprintf(stderr, "FAIL: andrea_dot_* differ from the decoding product at %s, K=%d\n",
                    andrea_isa_name(isa), K);
            exit(1);
        }
        float want[3] = {(float)sf, (float)sb, (float)sq}, bound[3] = {(float)af, (float)ab, (float)aq};
        static const char *names[3] = {"andrea_dot_f32", "andrea_dot_bf16", "andrea_dot_i8"};
        for (int i = 0; i < 3; i++) {
            snprintf(what, sizeof what, "%s %s K=%d", names[i], andrea_isa_name(isa), K);
            check_sum_bound(what, &got[i], &want[i], &bound[i], 1, K + 1); /* a K-term sum */
        }
        free(w), free(x), free(wb), free(wq);
    }
}

/* Batched decoding's product at ISA isa: n = 1..9 inputs in one call give each input the
 * bits of its own single-input call, in every weight format (the multi-input dots feed
 * several inputs from one decode of each weight vector; groups of 2 or 4, the rest one at a
 * time). The lengths leave a part block of vectors and a scalar tail (f32, bf16, int8) or a
 * 32 tail after AVX-512's 64-wide blocks (q8_0, q4_0, K % 32 == 0); a bias and per-row or
 * per-block scales as in decoding. */
static void test_matvec_batch(int isa) {
    enum { N = 5, NMAX = 9 };
    static const int fmts[] = {ANDREA_QUANT_NONE, ANDREA_QUANT_BF16, ANDREA_QUANT_INT8,
                               ANDREA_QUANT_Q8_0, ANDREA_QUANT_Q4_0, ANDREA_QUANT_F16};
    static const int Ks[] = {7, 165, 187, 96, 160, 768};
    for (size_t f = 0; f < sizeof fmts / sizeof *fmts; f++)
        for (size_t t = 0; t < sizeof Ks / sizeof *Ks; t++) {
            int fmt = fmts[f], K = Ks[t];
            if ((fmt == ANDREA_QUANT_Q8_0 || fmt == ANDREA_QUANT_Q4_0) && K % 32) continue;
            float *w = rnd_array((size_t)N * K, -1, 1), *x = rnd_array((size_t)NMAX * K, -1, 1);
            float *bias = rnd_array(N, -1, 1), *scale = xmalloc(sizeof(float) * N * (size_t)K);
            float *got = xmalloc(sizeof(float) * NMAX * N), *want = xmalloc(sizeof(float) * NMAX * N);
            void *q = fmt == ANDREA_QUANT_NONE ? (void *)w : xmalloc(sizeof(float) * N * (size_t)K);
            if (fmt != ANDREA_QUANT_NONE) andrea_quantize_rows(q, scale, w, fmt, N, (size_t)K);
            for (int n = 1; n <= NMAX; n++) {
                andrea_matvec_rows_isa(isa, got, x, q, fmt, scale, bias, K, N, n);
                for (int i = 0; i < n; i++)
                    andrea_matvec_rows_isa(isa, want + (size_t)i * N, x + (size_t)i * K, q, fmt,
                                           scale, bias, K, N, 1);
                if (memcmp(got, want, sizeof(float) * (size_t)n * N) != 0) {
                    fprintf(stderr, "FAIL: matvec_rows %s %s K=%d n=%d differs from n single calls\n",
                            andrea_quant_name(fmt), andrea_isa_name(isa), K, n);
                    exit(1);
                }
            }
            if (q != w) free(q);
            free(w), free(x), free(bias), free(scale), free(got), free(want);
        }
}

/* ---- attention -------------------------------------------------------------------------- */

static void test_attention(int B, int T, int C, int NH) {
    char what[160];
    int HS = C / NH;
    size_t nqkv = (size_t)B * T * 3 * C, nout = (size_t)B * T * C, natt = (size_t)B * NH * T * T;
    float *qkv = tu_normal_array(nqkv);
    float *out = tu_falloc(nout), *att = tu_falloc(natt), *pre = tu_falloc(natt);
    float *rout = tu_falloc(nout), *ratt = tu_falloc(natt), *rpre = tu_falloc(natt);
    andrea_attention_forward(out, att, pre, qkv, B, T, C, NH);
    andrea_ref_attention_forward(rout, ratt, rpre, qkv, B, T, C, NH);
    /* Scores: float dots of HS terms; softmax: a sum of T exps; out: a sum of T terms.
     * Each adds ~length * eps relative to the row's scale. */
    double rel = 4 * (HS + T + 16) * EPS;
    snprintf(what, sizeof what, "andrea_attention_forward out B=%d T=%d C=%d NH=%d", B, T, C, NH);
    tu_check_rel(what, out, rout, nout, rel);
    snprintf(what, sizeof what, "andrea_attention_forward att B=%d T=%d C=%d NH=%d", B, T, C, NH);
    tu_check_rel(what, att, ratt, natt, rel);
    /* preatt: finite below the diagonal (same bound), -inf above, compared as such. */
    int mask_ok = 1;
    for (size_t bh = 0; bh < (size_t)B * NH; bh++)
        for (int i = 0; i < T; i++)
            for (int j = i + 1; j < T; j++) {
                size_t o = bh * T * T + (size_t)i * T + j;
                mask_ok &= att[o] == 0.0f && isinf(pre[o]) && pre[o] < 0;
                pre[o] = rpre[o] = 0.0f;
            }
    if (!mask_ok) {
        fprintf(stderr, "andrea_attention_forward B=%d T=%d C=%d NH=%d: above the diagonal att must be 0, "
                        "preatt -inf\n", B, T, C, NH);
        tu_failures++;
    }
    snprintf(what, sizeof what, "andrea_attention_forward preatt B=%d T=%d C=%d NH=%d", B, T, C, NH);
    tu_check_rel(what, pre, rpre, natt, rel);
    /* preatt = NULL must not change the results. */
    float *out2 = tu_falloc(nout), *att2 = tu_falloc(natt);
    andrea_attention_forward(out2, att2, NULL, qkv, B, T, C, NH);
    if (memcmp(out2, out, nout * sizeof(float)) || memcmp(att2, att, natt * sizeof(float))) {
        fprintf(stderr, "andrea_attention_forward B=%d T=%d C=%d NH=%d: results differ with preatt NULL\n",
                B, T, C, NH);
        tu_failures++;
    }

    float *dout = tu_normal_array(nout), *d0 = rnd_array(nqkv, -1, 1);
    float *d = tu_dup(d0, nqkv), *rd = tu_dup(d0, nqkv);
    /* Both read the reference att, so the backward alone is compared. */
    andrea_attention_backward(d, dout, qkv, ratt, B, T, C, NH);
    andrea_ref_attention_backward(rd, dout, qkv, ratt, B, T, C, NH);
    /* dA: dots of HS; the softmax backward sums T and cancels; dq, dk: sums of T. */
    snprintf(what, sizeof what, "andrea_attention_backward dqkv B=%d T=%d C=%d NH=%d", B, T, C, NH);
    tu_check_rel(what, d, rd, nqkv, 2 * rel);

    free(qkv); free(out); free(att); free(pre); free(rout); free(ratt); free(rpre);
    free(out2); free(att2); free(dout); free(d0); free(d); free(rd);
}

/* ---- softmax, cross-entropy -------------------------------------------------------------- */

static void test_softmax(int n, float spread, float offset) {
    char what[128];
    float *x = rnd_array((size_t)n, -spread, spread);
    for (int i = 0; i < n; i++) x[i] += offset; /* large offsets overflow exp without the max */
    float *r = tu_dup(x, (size_t)n);
    andrea_softmax_row(x, n);
    andrea_ref_softmax_row(r, n);
    /* expf is a few ulps; the normalising sum of n positive terms is <= n eps/2 relative. */
    snprintf(what, sizeof what, "andrea_softmax_row n=%d spread=%g offset=%g", n, spread, offset);
    tu_check_array(what, x, r, (size_t)n, 1e-30, (n + 8) * EPS);
    free(x); free(r);
}

static void test_crossentropy(int N, int V) {
    char what[128];
    size_t n = (size_t)N * V;
    float *logits = rnd_array(n, -4, 4);
    int32_t *targets = xmalloc((size_t)N * sizeof(int32_t));
    for (int i = 0; i < N; i++) targets[i] = (i % 4 == 1) ? -1 : (int32_t)(tu_rng_u64() % (uint64_t)V);
    float *p = tu_dup(logits, n), *rp = tu_dup(logits, n);
    float *losses = tu_falloc((size_t)N), *rlosses = tu_falloc((size_t)N);
    int nv = -1, rnv = -2;
    float mean = andrea_crossentropy_forward(p, losses, targets, N, V, V, &nv);
    float rmean = andrea_ref_crossentropy_forward(rp, rlosses, targets, N, V, &rnv);
    CHECK(nv == rnv);
    /* probabilities: expf plus a float sum of V terms: (V + 8) eps relative. */
    snprintf(what, sizeof what, "andrea_crossentropy_forward probs N=%d V=%d", N, V);
    tu_check_array(what, p, rp, n, 1e-30, (V + 8) * EPS);
    /* -log p: a relative error r in p is an absolute error r in the loss. */
    snprintf(what, sizeof what, "andrea_crossentropy_forward losses N=%d V=%d", N, V);
    tu_check_array(what, losses, rlosses, (size_t)N, (V + 8) * EPS, 4 * EPS);
    int ignored_zero = 1;
    for (int i = 0; i < N; i++)
        if (targets[i] < 0) ignored_zero &= losses[i] == 0.0f;
    CHECK(ignored_zero);
    /* the mean adds a sum of N losses */
    CHECK_CLOSE(mean, rmean, (V + 8) * EPS, (N + 8) * EPS);

    float dloss = rnv ? 1.0f / (float)rnv : 0.0f;
    float *dl = tu_dup(rp, n), *rdl = tu_dup(rp, n);
    andrea_crossentropy_backward(dl, targets, N, V, V, dloss);
    andrea_ref_crossentropy_backward(rdl, targets, N, V, dloss);
    /* (p - onehot) * dloss: a couple of roundings, of the size of p dloss and dloss, so
     * the target entry (p ~ 1 minus 1 cancels) is good to ~eps dloss absolute. */
    snprintf(what, sizeof what, "andrea_crossentropy_backward N=%d V=%d", N, V);
    tu_check_array(what, dl, rdl, n, 2 * EPS * dloss, 2 * EPS);
    int ignored_rows_zero = 1;
    for (int i = 0; i < N; i++)
        if (targets[i] < 0)
            for (int v = 0; v < V; v++) ignored_rows_zero &= dl[(size_t)i * V + v] == 0.0f;
    CHECK(ignored_rows_zero);

    /* no valid target at all: mean 0, count 0 */
    for (int i = 0; i < N; i++) targets[i] = -1;
    memcpy(p, logits, n * sizeof(float));
    nv = -1;
    float m0 = andrea_crossentropy_forward(p, losses, targets, N, V, V, &nv);
    CHECK(m0 == 0.0f);
    CHECK(nv == 0);

    free(logits); free(targets); free(p); free(rp); free(losses); free(rlosses); free(dl); free(rdl);
}

/* ---- AdamW ----------------------------------------------------------------------------- */

static void test_adamw(size_t n, float wd, float b2, int steps, float gscale) {
    char what[128];
    const float lr = 1e-3f, b1 = 0.9f, eps = 1e-8f;
    float *p = rnd_array(n, -1, 1), *rp = tu_dup(p, n);
    float *m = tu_falloc(n), *v = tu_falloc(n), *rm = tu_falloc(n), *rv = tu_falloc(n);
    memset(m, 0, n * sizeof(float)); memset(v, 0, n * sizeof(float));
    memset(rm, 0, n * sizeof(float)); memset(rv, 0, n * sizeof(float));
    float *g = tu_falloc(n), *mag = tu_falloc(n);
    memset(mag, 0, n * sizeof(float));
    for (int t = 1; t <= steps; t++) {
        for (size_t i = 0; i < n; i++) {
            g[i] = i % 17 == 3 ? 0.0f : tu_rnd_normal() * (i % 5 ? 1.0f : 1e-4f);
            mag[i] = b1 * mag[i] + (1.0f - b1) * fabsf(g[i] * gscale); /* m over |g|: its scale */
        }
        andrea_adamw_update(p, g, m, v, n, lr, b1, b2, eps, wd, t, gscale);
        andrea_ref_adamw_update(rp, g, rm, rv, n, lr, b1, b2, eps, wd, t, gscale);
    }
    /* The moments: a few roundings per step, ~steps eps relative to the size of their
     * terms (m can cancel to ~0 when g changes sign, so m is judged against m over |g|;
     * v has positive terms only). The parameters
     * move by ~lr per step; each step may round p to a neighbouring float (1 ulp of
     * |p| <= 1), and a float 1 - b2^t (~0.01 at t = 10) keeps only ~1e-5 relative
     * accuracy, so the step itself is good to ~1e-4 relative. */
    snprintf(what, sizeof what, "adamw m n=%zu wd=%g b2=%g steps=%d gscale=%g", n, wd, b2, steps,
             gscale);
    check_sum_bound(what, m, rm, mag, n, 2 * steps);
    snprintf(what, sizeof what, "adamw v n=%zu wd=%g b2=%g steps=%d", n, wd, b2, steps);
    tu_check_array(what, v, rv, n, 1e-30, 4 * steps * EPS);
    snprintf(what, sizeof what, "adamw p n=%zu wd=%g b2=%g steps=%d", n, wd, b2, steps);
    tu_check_array(what, p, rp, n, steps * (EPS + lr * 1e-4), 0.0);
    free(p); free(rp); free(m); free(v); free(rm); free(rv); free(g); free(mag);
}

/* ---- thread-count independence ----------------------------------------------------------- */

#ifdef _OPENMP
static int same_bits(const float *a, const float *b, size_t n) {
    return memcmp(a, b, n * sizeof(float)) == 0;
}
/* The header promises results independent of the thread count. */
static void test_threads(void) {
    int M = 33, K = 130, N = 257, B = 2, T = 17, C = 64, NH = 4;
    float *inp = rnd_array((size_t)M * K, -1, 1), *w = rnd_array((size_t)N * K, -1, 1);
    float *bias = rnd_array((size_t)N, -1, 1), *dout = rnd_array((size_t)M * N, -1, 1);
    float *o[2], *dI[2], *dW[2], *dB[2], *ao[2], *aa[2], *ad[2];
    size_t nqkv = (size_t)B * T * 3 * C;
    float *qkv = tu_normal_array(nqkv), *adout = tu_normal_array((size_t)B * T * C);
    size_t nbig = (1u << 19) + 77; /* above andrea_grad_sum_squares' threading threshold */
    float *gbig = rnd_array(nbig, -1, 1);
    double sumsq[2];
    int saved = omp_get_max_threads();
    for (int r = 0; r < 2; r++) {
        omp_set_num_threads(r ? 3 : 1); /* 3 on any core count: an uneven split */
        o[r] = tu_falloc((size_t)M * N);
        dI[r] = tu_falloc((size_t)M * K); dW[r] = tu_falloc((size_t)N * K); dB[r] = tu_falloc((size_t)N);
        memset(dI[r], 0, (size_t)M * K * sizeof(float));
        memset(dW[r], 0, (size_t)N * K * sizeof(float));
        memset(dB[r], 0, (size_t)N * sizeof(float));
        andrea_matmul_forward(o[r], inp, w, bias, M, K, N);
        andrea_matmul_backward(dI[r], dW[r], dB[r], dout, inp, w, M, K, N);
        ao[r] = tu_falloc((size_t)B * T * C); aa[r] = tu_falloc((size_t)B * NH * T * T);
        ad[r] = tu_falloc(nqkv);
        memset(ad[r], 0, nqkv * sizeof(float));
        andrea_attention_forward(ao[r], aa[r], NULL, qkv, B, T, C, NH);
        andrea_attention_backward(ad[r], adout, qkv, aa[0], B, T, C, NH);
        sumsq[r] = andrea_grad_sum_squares(gbig, nbig);
    }
    omp_set_num_threads(saved);
    /* the clipping norm: bit-identical across thread counts, and right */
    CHECK(memcmp(&sumsq[0], &sumsq[1], sizeof(double)) == 0);
    long double want = 0.0L;
    for (size_t i = 0; i < nbig; i++) want += (long double)gbig[i] * gbig[i];
    CHECK(fabs(sumsq[0] - (double)want) <= 1e-12 * (double)want);
    free(gbig);
    CHECK(same_bits(o[0], o[1], (size_t)M * N));
    CHECK(same_bits(dI[0], dI[1], (size_t)M * K));
    CHECK(same_bits(dW[0], dW[1], (size_t)N * K));
    CHECK(same_bits(dB[0], dB[1], (size_t)N));
    CHECK(same_bits(ao[0], ao[1], (size_t)B * T * C));
    CHECK(same_bits(aa[0], aa[1], (size_t)B * NH * T * T));
    CHECK(same_bits(ad[0], ad[1], nqkv));
    for (int r = 0; r < 2; r++) {
        free(o[r]); free(dI[r]); free(dW[r]); free(dB[r]); free(ao[r]); free(aa[r]); free(ad[r]);
    }
    free(inp); free(w); free(bias); free(dout); free(qkv); free(adout);
}
#endif

/* ---- the references: known values ------------------------------------------------------- */

static void test_reference_known_values(void) {
    /* gelu-tanh at a few points (PyTorch gelu(approximate='tanh'), worked in double). */
    static const float gx[] = {1.0f, -1.0f, 2.0f, -3.0f, 0.5f};
    static const double gy[] = {0.8411919906082768, -0.15880800939172324, 1.954597694087775,
                                -0.0036373920817729943, 0.34571400982514394};
    float gout[5];
    andrea_ref_activation_forward(gout, gx, 5, ANDREA_ACT_GELU);
    for (int i = 0; i < 5; i++) CHECK_CLOSE(gout[i], gy[i], 0.0, EPS); /* one float rounding */
    static const float rx[] = {-2.0f, 0.0f, 3.0f};
    float rout[3];
    andrea_ref_activation_forward(rout, rx, 3, ANDREA_ACT_RELU);
    CHECK(rout[0] == 0.0f && rout[1] == 0.0f && rout[2] == 3.0f);
    andrea_ref_activation_forward(rout, rx, 3, ANDREA_ACT_RELU2);
    CHECK(rout[0] == 0.0f && rout[1] == 0.0f && rout[2] == 9.0f);

    /* layernorm of (1, 2, 3, 4): mean 2.5, biased variance 1.25. */
    float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1}, b[4] = {0, 0, 0, 1}, y[4], mu, rs;
    andrea_ref_layernorm_forward(y, &mu, &rs, x, w, b, 1, 4, 0.0f);
    CHECK(mu == 2.5f);
    CHECK_CLOSE(rs, 1.0 / sqrt(1.25), 0.0, EPS);
    CHECK_CLOSE(y[0], -1.5 / sqrt(1.25), 0.0, EPS);
    CHECK_CLOSE(y[3], 1.5 / sqrt(1.25) + 1.0, 0.0, EPS);
    /* rmsnorm of (3, 4): mean square 12.5 */
    andrea_ref_rmsnorm_forward(y, &rs, x + 2, w, 1, 2, 0.0f);
    CHECK_CLOSE(rs, 1.0 / sqrt(12.5), 0.0, EPS);
    CHECK_CLOSE(y[1], 4.0 / sqrt(12.5), 0.0, EPS);

    /* softmax survives logits that overflow expf without the max subtracted */
    float s[3] = {1000.0f, 1000.0f, 0.0f};
    andrea_ref_softmax_row(s, 3);
    CHECK(s[0] == 0.5f && s[1] == 0.5f && s[2] == 0.0f);

    /* uniform logits: every loss is log V; targets < 0 count for nothing */
    float lg[2 * 8] = {0};
    float ls[2];
    int32_t tg[2] = {5, -1};
    int nv = 0;
    float mean = andrea_ref_crossentropy_forward(lg, ls, tg, 2, 8, &nv);
    CHECK(nv == 1);
    CHECK_CLOSE(mean, log(8.0), 0.0, EPS);
    CHECK(ls[1] == 0.0f);
    CHECK(lg[3] == 0.125f);

    /* AdamW step 1: m^ = g, v^ = g^2, so the step is lr * (g / (|g| + eps) + wd p). */
    float p[2] = {0.5f, -2.0f}, g[2] = {0.25f, -3.0f}, m[2] = {0, 0}, v[2] = {0, 0};
    andrea_ref_adamw_update(p, g, m, v, 2, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 1.0f);
    CHECK_CLOSE(p[0], 0.5 - 0.1 * (0.25 / (0.25 + 1e-8) + 0.01 * 0.5), 0.0, 2 * EPS);
    CHECK_CLOSE(p[1], -2.0 - 0.1 * (-3.0 / (3.0 + 1e-8) + 0.01 * -2.0), 0.0, 2 * EPS);
    CHECK_CLOSE(m[0], 0.1 * 0.25, 0.0, 2 * EPS);
    CHECK_CLOSE(v[1], (1.0 - 0.999f) * 9.0, 0.0, 2 * EPS);
}

/* ---- the references: finite differences --------------------------------------------------- */

/* Every check uses loss = sum(G * y) for a random G, so dL/dy = G = dout. */

typedef struct {
    int M, K, N;
    double *inp, *w, *bias, *G;
} mm_ctx;
static double mm_loss(void *p) {
    mm_ctx *c = p;
    double L = 0.0;
    for (int m = 0; m < c->M; m++)
        for (int n = 0; n < c->N; n++) {
            double s = c->bias[n];
            for (int k = 0; k < c->K; k++) s += c->inp[m * c->K + k] * c->w[n * c->K + k];
            L += c->G[m * c->N + n] * s;
        }
    return L;
}
static void fd_matmul(void) {
    int M = 3, K = 5, N = 4;
    float *inp = rnd_array(M * K, -1, 1), *w = rnd_array(N * K, -1, 1), *bias = rnd_array(N, -1, 1);
    float *G = rnd_array(M * N, -1, 1);
    float *P1 = rnd_array(M * K, -1, 1), *P2 = rnd_array(N * K, -1, 1), *P3 = rnd_array(N, -1, 1);
    float *dinp = tu_dup(P1, M * K), *dw = tu_dup(P2, N * K), *db = tu_dup(P3, N);
    andrea_ref_matmul_backward(dinp, dw, db, G, inp, w, M, K, N);
    mm_ctx c = {M, K, N, to_double(inp, M * K), to_double(w, N * K), to_double(bias, N),
                to_double(G, M * N)};
    double *fd = dalloc(N * K);
    fd_grad(c.inp, M * K, mm_loss, &c, fd);
    check_fd("andrea_ref_matmul_backward dinp vs finite differences", dinp, P1, fd, M * K);
    fd_grad(c.w, N * K, mm_loss, &c, fd);
    check_fd("andrea_ref_matmul_backward dw vs finite differences", dw, P2, fd, N * K);
    fd_grad(c.bias, N, mm_loss, &c, fd);
    check_fd("andrea_ref_matmul_backward dbias vs finite differences", db, P3, fd, N);
    /* and the reference forward against the double forward */
    float *out = tu_falloc(M * N);
    andrea_ref_matmul_forward(out, inp, w, bias, M, K, N);
    double L = 0.0;
    for (int i = 0; i < M * N; i++) L += (double)G[i] * out[i];
    CHECK_CLOSE(L, mm_loss(&c), 1e-6, 1e-6);
    free(inp); free(w); free(bias); free(G); free(P1); free(P2); free(P3); free(dinp); free(dw);
    free(db); free(c.inp); free(c.w); free(c.bias); free(c.G); free(fd); free(out);
}

typedef struct {
    int N, C, rms;
    double eps;
    double *x, *w, *b, *G;
} norm_ctx;
static double norm_loss(void *p) {
    norm_ctx *c = p;
    double L = 0.0;
    for (int i = 0; i < c->N; i++) {
        const double *x = c->x + i * c->C;
        double mu = 0.0, var = 0.0;
        if (!c->rms) {
            for (int j = 0; j < c->C; j++) mu += x[j];
            mu /= c->C;
        }
        for (int j = 0; j < c->C; j++) var += (x[j] - mu) * (x[j] - mu);
        var /= c->C;
        double rs = 1.0 / sqrt(var + c->eps);
        for (int j = 0; j < c->C; j++) {
            double y = (x[j] - mu) * rs * c->w[j] + (c->rms ? 0.0 : c->b[j]);
            L += c->G[i * c->C + j] * y;
        }
    }
    return L;
}
static void fd_norm(int rms) {
    int N = 3, C = 7;
    float eps = 1e-5f;
    float *x = rnd_array(N * C, -2, 2), *w = rnd_array(C, 0.5f, 1.5f), *b = rnd_array(C, -1, 1);
    float *G = rnd_array(N * C, -1, 1);
    float *P1 = rnd_array(N * C, -1, 1), *P2 = rnd_array(C, -1, 1), *P3 = rnd_array(C, -1, 1);
    float *y = tu_falloc(N * C), *mean = tu_falloc(N), *rstd = tu_falloc(N);
    float *dx = tu_dup(P1, N * C), *dw = tu_dup(P2, C), *db = tu_dup(P3, C);
    if (rms) {
        andrea_ref_rmsnorm_forward(y, rstd, x, w, N, C, eps);
        andrea_ref_rmsnorm_backward(dx, dw, G, x, w, rstd, N, C);
    } else {
        andrea_ref_layernorm_forward(y, mean, rstd, x, w, b, N, C, eps);
        andrea_ref_layernorm_backward(dx, dw, db, G, x, w, mean, rstd, N, C);
    }
    norm_ctx c = {N, C, rms, eps, to_double(x, N * C), to_double(w, C), to_double(b, C),
                  to_double(G, N * C)};
    double L = 0.0;
    for (int i = 0; i < N * C; i++) L += (double)G[i] * y[i];
    CHECK_CLOSE(L, norm_loss(&c), 1e-5, 1e-5); /* forward: float output, ~1e-7 relative each */
    double *fd = dalloc(N * C);
    fd_grad(c.x, N * C, norm_loss, &c, fd);
    check_fd(rms ? "andrea_ref_rmsnorm_backward dinp vs finite differences"
                 : "andrea_ref_layernorm_backward dinp vs finite differences", dx, P1, fd, N * C);
    fd_grad(c.w, C, norm_loss, &c, fd);
    check_fd(rms ? "andrea_ref_rmsnorm_backward dw vs finite differences"
                 : "andrea_ref_layernorm_backward dw vs finite differences", dw, P2, fd, C);
    if (!rms) {
        fd_grad(c.b, C, norm_loss, &c, fd);
        check_fd("andrea_ref_layernorm_backward db vs finite differences", db, P3, fd, C);
    }
    free(x); free(w); free(b); free(G); free(P1); free(P2); free(P3); free(y); free(mean);
    free(rstd); free(dx); free(dw); free(db); free(c.x); free(c.w); free(c.b); free(c.G); free(fd);
}

typedef struct {
    int act;
    size_t n;
    double *x, *G;
} act_ctx;
static double act_loss(void *p) {
    act_ctx *c = p;
    double L = 0.0;
    for (size_t i = 0; i < c->n; i++) {
        double x = c->x[i], y;
        if (c->act == ANDREA_ACT_GELU)
            y = 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.141592653589793) * (x + 0.044715 * x * x * x)));
        else if (c->act == ANDREA_ACT_RELU)
            y = x > 0 ? x : 0.0;
        else
            y = x > 0 ? x * x : 0.0;
        L += c->G[i] * y;
    }
    return L;
}
static void fd_activation(int act) {
    char what[96];
    size_t n = 64;
    float *x = rnd_array(n, -5, 5), *G = rnd_array(n, -1, 1), *P = rnd_array(n, -1, 1);
    for (size_t i = 0; i < n; i++) /* keep clear of relu's kink at 0 */
        if (fabsf(x[i]) < 0.01f) x[i] = 0.5f;
    float *d = tu_dup(P, n);
    andrea_ref_activation_backward(d, x, G, n, act);
    act_ctx c = {act, n, to_double(x, n), to_double(G, n)};
    double *fd = dalloc(n);
    fd_grad(c.x, n, act_loss, &c, fd);
    snprintf(what, sizeof what, "andrea_ref_activation_backward %s vs finite differences", act_name(act));
    check_fd(what, d, P, fd, n);
    float *y = tu_falloc(n);
    andrea_ref_activation_forward(y, x, n, act);
    double L = 0.0;
    for (size_t i = 0; i < n; i++) L += (double)G[i] * y[i];
    CHECK_CLOSE(L, act_loss(&c), 1e-5, 1e-5);
    free(x); free(G); free(P); free(d); free(c.x); free(c.G); free(fd); free(y);
}

typedef struct {
    int B, T, C, NH;
    double *qkv, *G;
} att_ctx;
static double att_loss(void *p) {
    att_ctx *c = p;
    int B = c->B, T = c->T, C = c->C, NH = c->NH, HS = C / NH;
    double scale = 1.0 / sqrt((double)HS), L = 0.0, s[64];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const double *q = c->qkv + ((size_t)b * T + i) * 3 * C + h * HS;
                double mx = -INFINITY, sum = 0.0;
                for (int j = 0; j <= i; j++) {
                    const double *k = c->qkv + ((size_t)b * T + j) * 3 * C + C + h * HS;
                    double d = 0.0;
                    for (int e = 0; e < HS; e++) d += q[e] * k[e];
                    s[j] = d * scale;
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j <= i; j++) sum += exp(s[j] - mx);
                for (int e = 0; e < HS; e++) {
                    double o = 0.0;
                    for (int j = 0; j <= i; j++)
                        o += exp(s[j] - mx) / sum * c->qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * HS + e];
                    L += c->G[((size_t)b * T + i) * C + h * HS + e] * o;
                }
            }
    return L;
}
static void fd_attention(void) {
    int B = 2, T = 5, C = 8, NH = 2;
    size_t nqkv = (size_t)B * T * 3 * C, nout = (size_t)B * T * C;
    float *qkv = tu_normal_array(nqkv), *G = rnd_array(nout, -1, 1), *P = rnd_array(nqkv, -1, 1);
    float *out = tu_falloc(nout), *att = tu_falloc((size_t)B * NH * T * T);
    andrea_ref_attention_forward(out, att, NULL, qkv, B, T, C, NH);
    float *d = tu_dup(P, nqkv);
    andrea_ref_attention_backward(d, G, qkv, att, B, T, C, NH);
    att_ctx c = {B, T, C, NH, to_double(qkv, nqkv), to_double(G, nout)};
    double L = 0.0;
    for (size_t i = 0; i < nout; i++) L += (double)G[i] * out[i];
    CHECK_CLOSE(L, att_loss(&c), 1e-5, 1e-5);
    double *fd = dalloc(nqkv);
    fd_grad(c.qkv, nqkv, att_loss, &c, fd);
    check_fd("andrea_ref_attention_backward dqkv vs finite differences", d, P, fd, nqkv);
    free(qkv); free(G); free(P); free(out); free(att); free(d); free(c.qkv); free(c.G); free(fd);
}

typedef struct {
    int N, V;
    const int32_t *targets;
    double *logits;
} ce_ctx;
static double ce_loss(void *p) {
    ce_ctx *c = p;
    double total = 0.0;
    int valid = 0;
    for (int i = 0; i < c->N; i++) {
        if (c->targets[i] < 0) continue;
        const double *x = c->logits + (size_t)i * c->V;
        double mx = -INFINITY, sum = 0.0;
        for (int v = 0; v < c->V; v++) mx = x[v] > mx ? x[v] : mx;
        for (int v = 0; v < c->V; v++) sum += exp(x[v] - mx);
        total += log(sum) + mx - x[c->targets[i]];
        valid++;
    }
    return total / valid;
}
static void fd_crossentropy(void) {
    int N = 5, V = 7;
    int32_t targets[5] = {3, -1, 0, 6, -7};
    float *logits = rnd_array((size_t)N * V, -3, 3), *p = tu_dup(logits, (size_t)N * V);
    float losses[5];
    int nv = 0;
    float mean = andrea_ref_crossentropy_forward(p, losses, targets, N, V, &nv);
    CHECK(nv == 3);
    ce_ctx c = {N, V, targets, to_double(logits, (size_t)N * V)};
    CHECK_CLOSE(mean, ce_loss(&c), 0.0, 2 * EPS);
    andrea_ref_crossentropy_backward(p, targets, N, V, 1.0f / nv);
    double *fd = dalloc((size_t)N * V);
    fd_grad(c.logits, (size_t)N * V, ce_loss, &c, fd);
    float *zero = tu_falloc((size_t)N * V);
    memset(zero, 0, (size_t)N * V * sizeof(float));
    check_fd("andrea_ref_crossentropy_backward vs finite differences", p, zero, fd, (size_t)N * V);
    free(logits); free(p); free(c.logits); free(fd); free(zero);
}

/* ---- main ------------------------------------------------------------------------------ */

int main(void) {
    tu_rng_seed(0x9E3779B97F4A7C15ull); /* the data every tolerance here was checked on */
    test_reference_known_values();
    fd_matmul();
    fd_norm(0);
    fd_norm(1);
    fd_activation(ANDREA_ACT_GELU);
    fd_activation(ANDREA_ACT_RELU);
    fd_activation(ANDREA_ACT_RELU2);
    fd_attention();
    fd_crossentropy();

    /* M = 4 and 5 straddle a "few rows" path; K and N straddle SIMD widths and tiles. */
    static const int Ms[] = {1, 4, 5, 7, 33, 70}, Ks[] = {1, 5, 64, 130}, Ns[] = {1, 3, 48, 257};
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++) test_matmul(Ms[a], Ks[b], Ns[c], (a + b + c) % 3 != 0);
    /* Model-sized layers: several cache blocks along K (> 256) and along N and M (> 512). */
    test_matmul(64, 768, 96, 1);
    test_matmul(20, 300, 600, 0);
    /* every tile this machine has (8 x 32 AVX-512, 6 x 16 AVX2/NEON, the baseline), its
     * packing (16 x 16 and 8 x 8 register transposes) and ragged edges */
    for (int isa = 0; isa <= andrea_cpu_isa(-1); isa++)
        for (int bt = 0; bt < 2; bt++) {
            test_gemm_nn(isa, 7, 5, 3, 0, bt);
            test_gemm_nn(isa, 33, 64, 48, 1, bt);
            test_gemm_nn(isa, 70, 130, 257, 0, bt);
            test_gemm_nn(isa, 12, 300, 600, 1, bt); /* few rows: columns split across threads */
            test_gemm_nn(isa, 100, 513, 1100, 1, bt); /* 3 k blocks, 3 column blocks */
            test_gemm_nn(isa, 13, 37, 45, 0, bt);     /* 6-row and 16-column tiles ragged */
        }
    test_residual(1);
    test_residual(1027);

    static const int Nn[] = {1, 7, 33}, Cn[] = {1, 5, 64, 130, 768};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 5; b++) {
            test_layernorm(Nn[a], Cn[b], b % 2 == 0);
            test_rmsnorm(Nn[a], Cn[b]);
        }

    for (int act = ANDREA_ACT_GELU; act <= ANDREA_ACT_RELU2; act++) {
        test_activation(act, 1);
        test_activation(act, 37);
        test_activation(act, 4099);
        test_matmul_act(act, 3, 20, 45);    /* few rows: the dot-product path, then the pass */
        test_matmul_act(act, 70, 130, 257); /* ragged tiles, the epilogue inside the tiles */
        test_matmul_act(act, 64, 300, 96);  /* two k blocks: the epilogue after the last only */
    }
    test_matmul_residual(3, 20, 45, 1);    /* fewer rows than a tile */
    test_matmul_residual(70, 130, 257, 1); /* packed tiles starting from resid + bias */
    test_matmul_residual(64, 300, 96, 0);
    for (int isa = 0; isa <= andrea_cpu_isa(-1); isa++) test_dots(isa), test_matvec_batch(isa);

    static const int Ts[] = {1, 5, 17, 64};
    for (int t = 0; t < 4; t++) {
        test_attention(2, Ts[t], 32, 2);
        test_attention(2, Ts[t], 64, 4);
        test_attention(2, Ts[t], 64, 2);
    }

    static const int Sn[] = {1, 5, 64, 257, 1000};
    for (int i = 0; i < 5; i++) {
        test_softmax(Sn[i], 5.0f, 0.0f);
        test_softmax(Sn[i], 30.0f, 1000.0f);
        test_softmax(Sn[i], 3.0f, -1000.0f);
    }

    static const int CEn[] = {1, 7, 33}, CEv[] = {1, 3, 257, 1000};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++) test_crossentropy(CEn[a], CEv[b]);

    test_adamw(1, 0.0f, 0.999f, 1, 1.0f);
    test_adamw(1031, 0.0f, 0.999f, 10, 1.0f);
    test_adamw(1031, 0.1f, 0.999f, 10, 1.0f);
    test_adamw(1031, 0.1f, 0.999f, 10, 0.37f); /* clipped: g scaled inside the step */
    test_adamw(4099, 0.1f, 0.95f, 25, 1.0f);

#ifdef _OPENMP
    test_threads();
#endif
    return tu_finish("test_kernels");
}
