/*
 * test_backend_ops.c - every operation of every backend this machine can run, against
 * the double-precision references (tests/reference/reference.c), in the manner of ggml's
 * test-backend-ops: random inputs at several shapes (ragged edges included), each
 * result compared element by element with |got - want| <= atol + rtol |want|.
 * One line per (backend, op, shape): the largest error, the worst error / tolerance
 * ratio, OK or FAIL; an operation a backend lacks prints "skipped (not supported)".
 * Inputs travel as a GPU backend's would: ops.alloc + ops.upload, results back with
 * ops.download; every buffer has 256 guard bytes on each side, checked when it is freed
 * (a write past a buffer's end fails its op's line). A NaN or infinity where the
 * reference has a finite value fails. Exits 1 on any failure.
 *
 * Besides the element bound, every output tensor's normalised squared error,
 * NMSE = sum (got - want)^2 / sum want^2, is at most 5e-4 (the bound for bf16
 * products and attention; the line prints the worst). Why 5e-4: rounding an operand to
 * bf16 is off by at most 2^-9 relative, uniformly, so each product term carries a relative
 * error of variance about 2 (2^-9)^2 / 3 = 2.5e-6, and a sum of such independent terms the
 * same NMSE; attention rounds q, k, v, the probabilities (and dout, dS) in sequence, a
 * few times that. 5e-4 leaves 50-200x room, while a real fault (a missed tile, a wrong
 * mask, a skipped product) gives 1e-2 and more. fp32 backends sit near 1e-14.
 *
 * Tolerances: EPS is float's unit roundoff (2^-23 ulp at 1). A float sum of S terms
 * carries about S EPS of the sum's scale in the worst case (recursive summation) and
 * sqrt(S) EPS typically; the tolerances below are written from those bounds, each
 * with its reason.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/backend.h"
#include "backend/cpu/kernels/fastmath.h"
#include "reference/reference.h"
#include "test_util.h"

#define EPS ((double)FLT_EPSILON)

static int g_fail, g_ok, g_skip;

/* ---- comparison: the worst element over every output of one (backend, op, shape) ---- */

typedef struct {
    double max_err, worst; /* largest |got - want|; largest |got - want| / tolerance */
    const char *worst_what;
    double nmse;           /* the largest of the tensors' normalised squared errors */
    const char *nmse_what;
} cmp_t;

#define NMSE_MAX 5e-4

static void cmp(cmp_t *c, const char *what, const float *got, const float *want, size_t n,
                double atol, double rtol) {
    double se = 0.0, sw = 0.0; /* over the finite reference values (masked scores are not) */
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        double d = (g == w) ? 0.0 : fabs(g - w); /* equal infinities (masked scores) agree */
        if (isnan(d)) d = INFINITY;
        double r = d / (atol + rtol * fabs(w) + 1e-300);
        if (d > c->max_err) c->max_err = d;
        if (r > c->worst || (isinf(r) && !isinf(c->worst))) c->worst = r, c->worst_what = what;
        if (isfinite(w)) se += d * d, sw += w * w;
    }
    double nmse = sw > 0.0 ? se / sw : 0.0;
    if (nmse > c->nmse || isnan(nmse)) c->nmse = isnan(nmse) ? INFINITY : nmse, c->nmse_what = what;
}

static void report(be_t be, const char *op, const char *shape, const cmp_t *c) {
    int within = c->worst <= 1.0, nmse_ok = c->nmse <= NMSE_MAX, ok = within && nmse_ok;
    const char *where = !within ? c->worst_what : c->nmse_what;
    printf("%-13s %-26s %-22s max err %-10.3g err/tol %-8.3f nmse %-9.2g %s%s%s\n", be->name,
           op, shape, c->max_err, c->worst, c->nmse, ok ? "OK" : "FAIL", ok ? "" : " in ",
           ok ? "" : where);
    if (ok) g_ok++;
    else g_fail++;
}

static int supported(be_t be, const void *fn, const char *op) {
    if (fn) return 1;
    printf("%-13s %-26s skipped (not supported)\n", be->name, op);
    g_skip++;
    return 0;
}

/* ---- the backend's memory ---------------------------------------------------------------- */

/* Every buffer sits between two GUARD-byte runs of a pattern (256: the pointer keeps the
 * allocation's alignment), checked at freed: an op writing past its output's end, or
 * before its start, fails the line of the op being tested. */
enum { GUARD = 256, MAX_LIVE = 64 };
static struct {
    char *user;
    size_t bytes;
} g_live[MAX_LIVE];

static unsigned char guard_byte(size_t i) { return (unsigned char)(0xA5 ^ (i * 31)); }

static void *up(be_t be, const void *host, size_t bytes) {
    char *base = be->ops.alloc(be, bytes + 2 * GUARD);
    if (!base) {
        fprintf(stderr, "%s: alloc of %zu bytes failed\n", be->name, bytes);
        exit(1);
    }
    unsigned char pattern[GUARD];
    for (size_t i = 0; i < GUARD; i++) pattern[i] = guard_byte(i);
    be->ops.upload(be, base, pattern, GUARD);
    be->ops.upload(be, base + GUARD + bytes, pattern, GUARD);
    if (bytes) be->ops.upload(be, base + GUARD, host, bytes);
    int slot = 0;
    while (slot < MAX_LIVE && g_live[slot].user) slot++;
    if (slot == MAX_LIVE) {
        fprintf(stderr, "test_backend_ops: more than %d live buffers\n", MAX_LIVE);
        exit(1);
    }
    g_live[slot].user = base + GUARD, g_live[slot].bytes = bytes;
    return base + GUARD;
}
static float *upf(be_t be, const float *host, size_t n) { return up(be, host, n * sizeof(float)); }
static void downf(be_t be, float *host, const float *dev, size_t n) {
    be->ops.download(be, host, dev, n * sizeof(float));
}
/* the guards of dev intact? then the buffer goes back */
static void freed(be_t be, void *dev) {
    int slot = 0;
    while (slot < MAX_LIVE && g_live[slot].user != dev) slot++;
    if (slot == MAX_LIVE) {
        fprintf(stderr, "test_backend_ops: freed(%p): not a buffer of up()\n", dev);
        exit(1);
    }
    char *base = (char *)dev - GUARD;
    size_t bytes = g_live[slot].bytes;
    unsigned char before[GUARD], after[GUARD];
    be->ops.download(be, before, base, GUARD);
    be->ops.download(be, after, base + GUARD + bytes, GUARD);
    for (size_t i = 0; i < GUARD; i++)
        if (before[i] != guard_byte(i) || after[i] != guard_byte(i)) {
            printf("%-13s FAIL: the guard bytes %s a buffer of %zu bytes were overwritten (by the "
                   "op on the line above or the one being tested)\n", be->name,
                   before[i] != guard_byte(i) ? "before" : "after", bytes);
            g_fail++;
            break;
        }
    g_live[slot].user = NULL;
    be->ops.free(be, base);
}

static float *zeros(size_t n) {
    float *x = tu_falloc(n);
    memset(x, 0, (n ? n : 1) * sizeof(float));
    return x;
}

static void test_memory(be_t be, size_t n) {
    if (!supported(be, (const void *)be->ops.alloc, "memory")) return;
    float *h = tu_normal_array(n), *back = zeros(n);
    float *d = upf(be, h, n);
    downf(be, back, d, n);
    freed(be, d);
    cmp_t c = {0};
    cmp(&c, "round trip", back, h, n, 0.0, 0.0); /* bytes in, the same bytes out */
    char shape[32];
    snprintf(shape, sizeof shape, "n=%zu", n);
    report(be, "alloc/upload/download", shape, &c);
    free(h), free(back);
}

/* ---- products ------------------------------------------------------------------------ */

/* A float product of S-term sums of N(0,1) x N(0,1): 4 S EPS absolute is 4x the typical
 * recursive-summation error of sums whose scale is sqrt(S). A bf16 backend rounds both
 * operands (relative 2^-9 each), so each term is off by up to 2^-8 relative with a
 * random sign: about 2^-8 sqrt(S) in all, given 4x room. A sum of few terms does not
 * average: one term |a b| of N(0,1) x N(0,1) reaches 8-10 among a test's thousands (an
 * error of 2^-8 of it), so the scale is at least 4 (M=1 K=16 N=7's dw is S=1, 2^-8 x 9 =
 * 0.035 seen). Only the large products take bf16, but the bound holds for all. */
static double mm_atol(be_t be, int S) {
    double t = 4.0 * S * EPS;
    if (andrea_backend_precision(be) == ANDREA_PRECISION_BF16)
        t += 4.0 * fmax(sqrt((double)S), 4.0) / 256.0;
    return t;
}
#define MM_RTOL 1e-5 /* the per-element rounding of the result and of bias/residual adds */

static void test_matmul(be_t be, int M, int K, int N, int act) {
    char shape[48];
    snprintf(shape, sizeof shape, "M=%d K=%d N=%d", M, K, N);
    size_t mk = (size_t)M * K, nk = (size_t)N * K, mn = (size_t)M * N;
    float *inp = tu_normal_array(mk), *w = tu_normal_array(nk), *bias = tu_normal_array(N);
    float *resid = tu_normal_array(mn), *dout = tu_normal_array(mn);
    float *dinp0 = tu_normal_array(mk), *dw0 = tu_normal_array(nk), *db0 = tu_normal_array(N);
    float *got = zeros(mn), *want = zeros(mn), *got2 = zeros(mn), *want2 = zeros(mn);
    float *gdi = zeros(mk), *gdw = zeros(nk), *gdb = zeros(N);
    float *d_inp = upf(be, inp, mk), *d_w = upf(be, w, nk), *d_b = upf(be, bias, N);
    float *d_out = upf(be, got, mn), *d_out2 = upf(be, got, mn);
    cmp_t c;

    if (supported(be, (const void *)be->ops.matmul_forward, "matmul_forward")) {
        c = (cmp_t){0};
        be->ops.matmul_forward(be, d_out, d_inp, d_w, d_b, M, K, N);
        downf(be, got, d_out, mn);
        andrea_ref_matmul_forward(want, inp, w, bias, M, K, N);
        cmp(&c, "out", got, want, mn, mm_atol(be, K), MM_RTOL);
        report(be, "matmul_forward", shape, &c);
    }
    if (supported(be, (const void *)be->ops.matmul_forward_residual, "matmul_forward_residual")) {
        c = (cmp_t){0};
        float *d_res = upf(be, resid, mn);
        be->ops.matmul_forward_residual(be, d_out, d_inp, d_w, d_b, d_res, M, K, N);
        downf(be, got, d_out, mn);
        andrea_ref_matmul_forward_residual(want, inp, w, bias, resid, M, K, N);
        cmp(&c, "out", got, want, mn, mm_atol(be, K), MM_RTOL);
        report(be, "matmul_forward_residual", shape, &c);
        freed(be, d_res);
    }
    static const char *act_ops[] = {"matmul_forward_act gelu", "matmul_forward_act relu",
                                    "matmul_forward_act relu2"};
    if (supported(be, (const void *)be->ops.matmul_forward_act, act_ops[act])) {
        c = (cmp_t){0};
        be->ops.matmul_forward_act(be, d_out, d_out2, d_inp, d_w, d_b, M, K, N, act);
        downf(be, got, d_out, mn);
        downf(be, got2, d_out2, mn);
        andrea_ref_matmul_forward_act(want, want2, inp, w, bias, M, K, N, act);
        cmp(&c, "pre", got, want, mn, mm_atol(be, K), MM_RTOL);
        /* post against the reference activation of the kernel's own pre: the product's
         * error is judged above; here, that the epilogue applied act (float tanh: a few
         * EPS relative; 1e-6 absolute near gelu's zero crossing) */
        andrea_ref_activation_forward(want2, got, mn, act);
        cmp(&c, "post", got2, want2, mn, 1e-6, 16 * EPS);
        report(be, act_ops[act], shape, &c);
    }
    if (supported(be, (const void *)be->ops.matmul_backward, "matmul_backward")) {
        c = (cmp_t){0};
        float *d_dout = upf(be, dout, mn), *d_di = upf(be, dinp0, mk), *d_dw = upf(be, dw0, nk);
        float *d_db = upf(be, db0, N);
        be->ops.matmul_backward(be, d_di, d_dw, d_db, d_dout, d_inp, d_w, M, K, N, 0);
        downf(be, gdi, d_di, mk), downf(be, gdw, d_dw, nk), downf(be, gdb, d_db, N);
        float *wdi = tu_dup(dinp0, mk), *wdw = tu_dup(dw0, nk), *wdb = tu_dup(db0, N);
        andrea_ref_matmul_backward(wdi, wdw, wdb, dout, inp, w, M, K, N); /* both accumulate */
        cmp(&c, "dinp", gdi, wdi, mk, mm_atol(be, N), MM_RTOL);
        cmp(&c, "dw", gdw, wdw, nk, mm_atol(be, M), MM_RTOL);
        cmp(&c, "dbias", gdb, wdb, N, 4.0 * M * EPS, MM_RTOL); /* a plain fp32 sum of M */
        report(be, "matmul_backward", shape, &c);
        free(wdi), free(wdw), free(wdb);
        freed(be, d_dout), freed(be, d_di), freed(be, d_dw), freed(be, d_db);
    }
    if (supported(be, (const void *)be->ops.matmul_backward, "matmul_backward dw_init")) {
        /* a step's first gradient: dw and dbias overwritten, whatever they held before */
        c = (cmp_t){0};
        float *d_dout = upf(be, dout, mn), *d_dw = upf(be, dw0, nk), *d_db = upf(be, db0, N);
        be->ops.matmul_backward(be, NULL, d_dw, d_db, d_dout, d_inp, d_w, M, K, N, 1);
        downf(be, gdw, d_dw, nk), downf(be, gdb, d_db, N);
        float *wdi = zeros(mk), *wdw = zeros(nk), *wdb = zeros(N);
        andrea_ref_matmul_backward(wdi, wdw, wdb, dout, inp, w, M, K, N);
        cmp(&c, "dw", gdw, wdw, nk, mm_atol(be, M), MM_RTOL);
        cmp(&c, "dbias", gdb, wdb, N, 4.0 * M * EPS, MM_RTOL);
        report(be, "matmul_backward dw_init", shape, &c);
        free(wdi), free(wdw), free(wdb);
        freed(be, d_dout), freed(be, d_dw), freed(be, d_db);
    }
    static const char *bact_ops[] = {"matmul_backward_act gelu", "matmul_backward_act relu",
                                     "matmul_backward_act relu2"};
    if (supported(be, (const void *)be->ops.matmul_backward_act, bact_ops[act])) {
        /* the MLP's second product: y(M, N) = post(M, K) @ w(N, K)^T, post = act(pre) */
        c = (cmp_t){0};
        float *pre = tu_normal_array(mk), *post = zeros(mk);
        andrea_ref_activation_forward(post, pre, mk, act);
        float *d_pre = upf(be, pre, mk), *d_post = upf(be, post, mk), *d_dout = upf(be, dout, mn);
        float *d_dpre = upf(be, dinp0, mk), *d_dw = upf(be, dw0, nk), *d_db = upf(be, db0, N);
        be->ops.matmul_backward_act(be, d_dpre, d_dw, d_db, d_dout, d_post, d_w, d_pre, M, K, N,
                                    act, 0);
        downf(be, gdi, d_dpre, mk), downf(be, gdw, d_dw, nk), downf(be, gdb, d_db, N);
        float *wdi = zeros(mk), *wdw = tu_dup(dw0, nk), *wdb = tu_dup(db0, N);
        andrea_ref_matmul_backward_act(wdi, wdw, wdb, dout, post, w, pre, M, K, N, act);
        /* dpre = act'(pre) (dout @ w): the product's error times act' (<= 2 |pre| <= ~10
         * for relu2 on N(0,1) pre; <= 1.13 for gelu) */
        cmp(&c, "dpre (overwritten)", gdi, wdi, mk, 10.0 * mm_atol(be, N), MM_RTOL);
        /* dw sums M products of post (relu2: up to ~20) and dout */
        cmp(&c, "dw", gdw, wdw, nk, 20.0 * mm_atol(be, M), MM_RTOL);
        cmp(&c, "dbias", gdb, wdb, N, 4.0 * M * EPS, MM_RTOL);
        report(be, bact_ops[act], shape, &c);
        free(pre), free(post), free(wdi), free(wdw), free(wdb);
        freed(be, d_pre), freed(be, d_post), freed(be, d_dout);
        freed(be, d_dpre), freed(be, d_dw), freed(be, d_db);
    }
    freed(be, d_inp), freed(be, d_w), freed(be, d_b), freed(be, d_out), freed(be, d_out2);
    free(inp), free(w), free(bias), free(resid), free(dout), free(dinp0), free(dw0), free(db0);
    free(got), free(want), free(got2), free(want2), free(gdi), free(gdw), free(gdb);
}

/* Decoding's product in each weight format. The reference decodes the same stored
 * weights exactly, so only the K-term fp32 dot is left: 4 K EPS of its scale, times 5
 * for int8's decoded weights (|q| scale up to ~5 here). */
static void test_matvec(be_t be, int fmt, int K, int N, int n) {
    static const char *ops[] = {"matvec f32", "matvec bf16", "matvec int8"};
    if (!supported(be, (const void *)be->ops.matvec, ops[fmt])) return;
    char shape[48];
    snprintf(shape, sizeof shape, "K=%d N=%d n=%d", K, N, n);
    size_t nk = (size_t)N * K, no = (size_t)n * N;
    float *x = tu_normal_array((size_t)n * K), *wf = tu_normal_array(nk), *bias = tu_normal_array(N);
    float *scale = tu_falloc(N), *got = zeros(no), *want = zeros(no);
    uint16_t *w16 = malloc(sizeof(uint16_t) * nk);
    int8_t *w8 = malloc(nk);
    CHECK(w16 && w8);
    for (size_t i = 0; i < nk; i++) {
        w16[i] = andrea_bf16_from_f32(wf[i]);
        w8[i] = (int8_t)((int)(tu_rng_u64() % 255) - 127);
    }
    for (int r = 0; r < N; r++) scale[r] = (float)(0.01 + 0.03 * tu_rnd_unit());
    const void *wh = fmt == ANDREA_QUANT_BF16 ? (const void *)w16
                     : fmt == ANDREA_QUANT_INT8 ? (const void *)w8 : (const void *)wf;
    size_t wbytes = fmt == ANDREA_QUANT_BF16 ? 2 * nk : fmt == ANDREA_QUANT_INT8 ? nk : 4 * nk;
    void *d_w = up(be, wh, wbytes);
    float *d_x = upf(be, x, (size_t)n * K), *d_s = upf(be, scale, N), *d_b = upf(be, bias, N);
    float *d_o = upf(be, got, no);
    be->ops.matvec(be, d_o, d_x, d_w, fmt, fmt == ANDREA_QUANT_INT8 ? d_s : NULL, d_b, K, N, n);
    downf(be, got, d_o, no);
    andrea_ref_matvec_rows(want, x, wh, fmt, scale, bias, K, N, n);
    cmp_t c = {0};
    cmp(&c, "out", got, want, no, 4.0 * K * EPS * 5.0, MM_RTOL);
    report(be, ops[fmt], shape, &c);
    freed(be, d_w), freed(be, d_x), freed(be, d_s), freed(be, d_b), freed(be, d_o);
    free(x), free(wf), free(bias), free(scale), free(got), free(want), free(w16), free(w8);
}

/* ---- norms and activations --------------------------------------------------------------- */

/* A row's mean and variance are C-term float sums, (C + 16) EPS relative to the row's
 * scale; judged against the tensor's largest value (outputs near zero cancel). dw and
 * db add N rows more. */
static void test_norm(be_t be, int kind, int N, int C) {
    const char *fwd = kind == ANDREA_NORM_LAYER ? "norm_forward layernorm" : "norm_forward rmsnorm";
    const char *bwd = kind == ANDREA_NORM_LAYER ? "norm_backward layernorm" : "norm_backward rmsnorm";
    char shape[48];
    snprintf(shape, sizeof shape, "N=%d C=%d", N, C);
    size_t nc = (size_t)N * C;
    float *x = tu_normal_array(nc), *w = tu_normal_array(C), *b = tu_normal_array(C);
    for (size_t i = 0; i < nc; i++) x[i] = 3.0f * x[i] + 1.5f; /* an offset mean: layernorm subtracts it */
    float *got = zeros(nc), *want = zeros(nc), *mean = zeros(N), *rstd = zeros(N);
    float *gmean = zeros(N), *grstd = zeros(N);
    float *d_x = upf(be, x, nc), *d_w = upf(be, w, C), *d_b = upf(be, b, C);
    float *d_o = upf(be, got, nc), *d_mean = upf(be, mean, N), *d_rstd = upf(be, rstd, N);
    float eps = 1e-5f;
    if (kind == ANDREA_NORM_LAYER) andrea_ref_layernorm_forward(want, mean, rstd, x, w, b, N, C, eps);
    else andrea_ref_rmsnorm_forward(want, rstd, x, w, N, C, eps);
    double tol = (C + 16) * EPS;
    if (supported(be, (const void *)be->ops.norm_forward, fwd)) {
        cmp_t c = {0};
        be->ops.norm_forward(be, kind, d_o, d_mean, d_rstd, d_x, d_w, d_b, N, C, eps);
        downf(be, got, d_o, nc), downf(be, gmean, d_mean, N), downf(be, grstd, d_rstd, N);
        cmp(&c, "out", got, want, nc, tol * tu_max_abs(want, nc), tol);
        if (kind == ANDREA_NORM_LAYER) cmp(&c, "mean", gmean, mean, N, tol * 3.0, tol);
        cmp(&c, "rstd", grstd, rstd, N, 0.0, tol);
        report(be, fwd, shape, &c);
    }
    if (supported(be, (const void *)be->ops.norm_backward, bwd)) {
        cmp_t c = {0};
        float *dout = tu_normal_array(nc), *dx0 = tu_normal_array(nc), *dw0 = tu_normal_array(C);
        float *db0 = tu_normal_array(C);
        float *d_dout = upf(be, dout, nc), *d_dx = upf(be, dx0, nc), *d_dw = upf(be, dw0, C);
        float *d_db = upf(be, db0, C);
        be->ops.upload(be, d_mean, mean, sizeof(float) * N); /* the reference's saved stats */
        be->ops.upload(be, d_rstd, rstd, sizeof(float) * N);
        be->ops.norm_backward(be, kind, d_dx, d_dw, d_db, d_dout, d_x, d_w, d_mean, d_rstd, N, C);
        float *gdx = zeros(nc), *gdw = zeros(C), *gdb = zeros(C);
        downf(be, gdx, d_dx, nc), downf(be, gdw, d_dw, C), downf(be, gdb, d_db, C);
        float *wdx = tu_dup(dx0, nc), *wdw = tu_dup(dw0, C), *wdb = tu_dup(db0, C);
        if (kind == ANDREA_NORM_LAYER)
            andrea_ref_layernorm_backward(wdx, wdw, wdb, dout, x, w, mean, rstd, N, C);
        else
            andrea_ref_rmsnorm_backward(wdx, wdw, dout, x, w, rstd, N, C);
        cmp(&c, "dinp", gdx, wdx, nc, tol * tu_max_abs(wdx, nc), tol);
        double tw = (N + C + 16) * EPS;
        cmp(&c, "dw", gdw, wdw, C, tw * tu_max_abs(wdw, C), tw);
        if (kind == ANDREA_NORM_LAYER) cmp(&c, "db", gdb, wdb, C, tw * tu_max_abs(wdb, C), tw);
        report(be, bwd, shape, &c);
        free(dout), free(dx0), free(dw0), free(db0), free(gdx), free(gdw), free(gdb);
        free(wdx), free(wdw), free(wdb);
        freed(be, d_dout), freed(be, d_dx), freed(be, d_dw), freed(be, d_db);
    }
    freed(be, d_x), freed(be, d_w), freed(be, d_b), freed(be, d_o), freed(be, d_mean),
        freed(be, d_rstd);
    free(x), free(w), free(b), free(got), free(want), free(mean), free(rstd), free(gmean),
        free(grstd);
}

static void test_activation(be_t be, int act, size_t n) {
    static const char *ops[] = {"activation_forward gelu", "activation_forward relu",
                                "activation_forward relu2"};
    if (!supported(be, (const void *)be->ops.activation_forward, ops[act])) return;
    char shape[32];
    snprintf(shape, sizeof shape, "n=%zu", n);
    float *x = tu_normal_array(n), *got = zeros(n), *want = zeros(n);
    float *d_x = upf(be, x, n), *d_o = upf(be, got, n);
    be->ops.activation_forward(be, d_o, d_x, n, act);
    downf(be, got, d_o, n);
    andrea_ref_activation_forward(want, x, n, act);
    cmp_t c = {0};
    cmp(&c, "out", got, want, n, 1e-6, 16 * EPS); /* float tanh: a few EPS; 1e-6 near gelu's zero */
    report(be, ops[act], shape, &c);
    freed(be, d_x), freed(be, d_o);
    free(x), free(got), free(want);
}

/* ---- attention ------------------------------------------------------------------------- */

/* Scores are HS-term dots, rows softmax over up to T of them and the output sums T
 * products: (HS + T + 16) EPS of the tensor's scale, 4x for the exponentials (libm's
 * expf or andrea_expf, < 2e-7 relative) and flash's blockwise rescaling. */
static double att_tol(int T, int HS) { return 4.0 * (HS + T + 16) * EPS; }
/* A bf16 flash pass (cuda-bf16's tensor cores) rounds q, k, v and the probabilities (and in
 * the backward dout and dS) to bf16 (2^-9 relative each): the scores are off by ~2^-8
 * sqrt(HS)-term noise of unit size (q.k / sqrt(HS) is N(0, 1) here), the results by ~2^-8
 * of their scale, given 4x room (the backward 8x: two more roundings in its chain). */
static double att_tol_bf16(be_t be, int T, int HS) {
    double t = att_tol(T, HS);
    return andrea_backend_precision(be) == ANDREA_PRECISION_BF16 && t < 4.0 / 256.0 ? 4.0 / 256.0
                                                                                   : t;
}

static void test_attention(be_t be, int B, int T, int C, int NH) {
    char shape[48];
    snprintf(shape, sizeof shape, "B=%d T=%d C=%d NH=%d", B, T, C, NH);
    int HS = C / NH;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
    size_t nl = (size_t)B * NH * T;
    float *qkv = tu_normal_array(nq), *dout = tu_normal_array(no), *dq0 = tu_normal_array(nq);
    float *rout = zeros(no), *ratt = zeros(na), *rpre = zeros(na), *rlse = zeros(nl);
    andrea_ref_attention_forward(rout, ratt, rpre, qkv, B, T, C, NH);
    andrea_ref_attention_lse(rlse, qkv, B, T, C, NH);
    float *rdq = tu_dup(dq0, nq);
    andrea_ref_attention_backward(rdq, dout, qkv, ratt, B, T, C, NH); /* accumulates */
    double tol = att_tol(T, HS);
    float *d_qkv = upf(be, qkv, nq), *d_dout = upf(be, dout, no);
    float *out = zeros(no), *att = zeros(na), *pre = zeros(na), *lse = zeros(nl), *dq = zeros(nq);

    if (supported(be, (const void *)be->ops.attention_forward, "attention_forward")) {
        cmp_t c = {0};
        float *d_o = upf(be, out, no), *d_a = upf(be, att, na), *d_p = upf(be, pre, na);
        be->ops.attention_forward(be, d_o, d_a, d_p, d_qkv, B, T, C, NH);
        downf(be, out, d_o, no), downf(be, att, d_a, na), downf(be, pre, d_p, na);
        cmp(&c, "out", out, rout, no, tol * tu_max_abs(rout, no), tol);
        cmp(&c, "att", att, ratt, na, tol, tol); /* probabilities: scale 1 */
        cmp(&c, "preatt", pre, rpre, na, 4.0 * (HS + 16) * EPS * 4.0, 4.0 * (HS + 16) * EPS);
        report(be, "attention_forward", shape, &c);
        freed(be, d_o), freed(be, d_a), freed(be, d_p);
    }
    if (supported(be, (const void *)be->ops.attention_backward, "attention_backward")) {
        cmp_t c = {0};
        float *d_a = upf(be, ratt, na), *d_dq = upf(be, dq0, nq);
        be->ops.attention_backward(be, d_dq, d_dout, d_qkv, d_a, B, T, C, NH);
        downf(be, dq, d_dq, nq);
        cmp(&c, "dqkv", dq, rdq, nq, 2.0 * tol * tu_max_abs(rdq, nq), 2.0 * tol);
        report(be, "attention_backward", shape, &c);
        freed(be, d_a), freed(be, d_dq);
    }
    if (supported(be, (const void *)be->ops.attention_flash_forward, "attention_flash_forward")) {
        cmp_t c = {0};
        float *d_o = upf(be, out, no), *d_l = upf(be, lse, nl);
        be->ops.attention_flash_forward(be, d_o, d_l, d_qkv, B, T, C, NH);
        downf(be, out, d_o, no), downf(be, lse, d_l, nl);
        double ft = att_tol_bf16(be, T, HS);
        cmp(&c, "out", out, rout, no, ft * tu_max_abs(rout, no), ft);
        cmp(&c, "lse", lse, rlse, nl, ft * (1.0 + tu_max_abs(rlse, nl)), ft);
        report(be, "attention_flash_forward", shape, &c);
        freed(be, d_o), freed(be, d_l);
    }
    if (supported(be, (const void *)be->ops.attention_flash_backward, "attention_flash_backward")) {
        cmp_t c = {0};
        /* from the reference's out and lse, so only the backward is judged */
        float *d_o = upf(be, rout, no), *d_l = upf(be, rlse, nl), *d_dq = upf(be, dq0, nq);
        be->ops.attention_flash_backward(be, d_dq, d_dout, d_qkv, d_o, d_l, B, T, C, NH);
        downf(be, dq, d_dq, nq);
        double bt = 2.0 * att_tol_bf16(be, T, HS); /* bf16: dS and the operands rounded too */
        cmp(&c, "dqkv", dq, rdq, nq, bt * tu_max_abs(rdq, nq), bt);
        report(be, "attention_flash_backward", shape, &c);
        freed(be, d_o), freed(be, d_l), freed(be, d_dq);
    }
    freed(be, d_qkv), freed(be, d_dout);
    free(qkv), free(dout), free(dq0), free(rout), free(ratt), free(rpre), free(rlse), free(rdq);
    free(out), free(att), free(pre), free(lse), free(dq);
}

/* One new position over a KV cache of pos + 1 rows, as kv.c calls it. */
static void test_attention_decode(be_t be, int pos, int C, int NH) {
    if (!supported(be, (const void *)be->ops.attention_decode, "attention_decode")) return;
    char shape[48];
    snprintf(shape, sizeof shape, "pos=%d C=%d NH=%d", pos, C, NH);
    int ld = pos + 3; /* a scratch row longer than needed, as the cache's context is */
    size_t nc = (size_t)(pos + 1) * C;
    float *q = tu_normal_array(C), *kc = tu_normal_array(nc), *vc = tu_normal_array(nc);
    float *got = zeros(C), *want = zeros(C), *scratch = zeros((size_t)NH * ld);
    float *d_q = upf(be, q, C), *d_k = upf(be, kc, nc), *d_v = upf(be, vc, nc);
    float *d_o = upf(be, got, C), *d_s = upf(be, scratch, (size_t)NH * ld);
    be->ops.attention_decode(be, d_o, d_s, ld, d_q, d_k, d_v, pos, C, NH);
    downf(be, got, d_o, C);
    andrea_ref_attention_decode(want, q, kc, vc, pos, C, NH);
    double tol = att_tol(pos + 1, C / NH);
    cmp_t c = {0};
    cmp(&c, "out", got, want, C, tol * tu_max_abs(want, C), tol);
    report(be, "attention_decode", shape, &c);
    freed(be, d_q), freed(be, d_k), freed(be, d_v), freed(be, d_o), freed(be, d_s);
    free(q), free(kc), free(vc), free(got), free(want), free(scratch);
}

/* The optional cache write + attention at a position read from backend memory (cuda's,
 * for decode graphs): kc and vc get row pos from qkv's k and v (bit for bit, every other row
 * untouched), and out is the bits of attention_decode over the written cache. */
static void test_attention_decode_kv(be_t be, int pos, int C, int NH) {
    if (!be->ops.attention_decode_kv) return; /* optional: the caller copies, then attends */
    char shape[48];
    snprintf(shape, sizeof shape, "pos=%d C=%d NH=%d", pos, C, NH);
    int ld = pos + 3;
    size_t nc = (size_t)(pos + 2) * C; /* a row past pos, which must stay as it is */
    float *qkv = tu_normal_array(3 * (size_t)C), *kc = tu_normal_array(nc), *vc = tu_normal_array(nc);
    float *want_k = tu_dup(kc, nc), *want_v = tu_dup(vc, nc), *got = zeros(C), *want = zeros(C);
    float *scratch = zeros((size_t)NH * ld);
    memcpy(want_k + (size_t)pos * C, qkv + C, sizeof(float) * C);
    memcpy(want_v + (size_t)pos * C, qkv + 2 * (size_t)C, sizeof(float) * C);
    float *d_qkv = upf(be, qkv, 3 * (size_t)C), *d_k = upf(be, kc, nc), *d_v = upf(be, vc, nc);
    float *d_o = upf(be, got, C), *d_s = upf(be, scratch, (size_t)NH * ld);
    int32_t *d_pos = up(be, &pos, sizeof pos);
    be->ops.attention_decode_kv(be, d_o, d_s, ld, d_qkv, d_k, d_v, d_pos, C, NH);
    downf(be, got, d_o, C), downf(be, kc, d_k, nc), downf(be, vc, d_v, nc);
    cmp_t c = {0};
    cmp(&c, "k rows", kc, want_k, nc, 0.0, 0.0);
    cmp(&c, "v rows", vc, want_v, nc, 0.0, 0.0);
    be->ops.attention_decode(be, d_o, d_s, ld, d_qkv, d_k, d_v, pos, C, NH);
    downf(be, want, d_o, C);
    cmp(&c, "out", got, want, C, 0.0, 0.0);
    int bad = ld; /* a position past the scratch: NaN out, no row written */
    be->ops.upload(be, d_pos, &bad, sizeof bad);
    be->ops.attention_decode_kv(be, d_o, d_s, ld, d_qkv, d_k, d_v, d_pos, C, NH);
    downf(be, got, d_o, C);
    for (int i = 0; i < C; i++) got[i] = isnan(got[i]) ? 1.0f : 0.0f, want[i] = 1.0f;
    cmp(&c, "NaN past ld", got, want, C, 0.0, 0.0);
    report(be, "attention_decode_kv", shape, &c);
    freed(be, d_pos), freed(be, d_qkv), freed(be, d_k), freed(be, d_v), freed(be, d_o), freed(be, d_s);
    free(qkv), free(kc), free(vc), free(want_k), free(want_v), free(got), free(want);
    free(scratch);
}

/* ---- loss, optimiser, norm of the gradients ------------------------------------------------ */

/* n rows of V floats from a (n, ld) buffer into a dense (n, V) one */
static float *unpad_rows(const float *x, int n, int V, int ld) {
    float *d = zeros((size_t)n * V);
    for (int i = 0; i < n; i++) memcpy(d + (size_t)i * V, x + (size_t)i * ld, sizeof(float) * V);
    return d;
}
/* the dense (n, V) rows x in a (n, ld) buffer whose columns past V hold `pad` */
static float *pad_rows(const float *x, int n, int V, int ld, float pad) {
    float *d = zeros((size_t)n * ld);
    for (int i = 0; i < n; i++) {
        memcpy(d + (size_t)i * ld, x + (size_t)i * V, sizeof(float) * V);
        for (int j = V; j < ld; j++) d[(size_t)i * ld + j] = pad;
    }
    return d;
}
/* how many of the columns past V of the (n, ld) rows x are not `pad` */
static size_t pad_changed(const float *x, int n, int V, int ld, float pad) {
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (int j = V; j < ld; j++) k += x[(size_t)i * ld + j] != pad;
    return k;
}

/* ld > V: the rows of a padded LM head (backend.h's vocab_multiple), whose columns past V
 * the forward must neither read (a huge value there would change the softmax) nor write,
 * and the backward must set to 0 */
static void test_crossentropy(be_t be, int N, int V, int ld) {
    char shape[48];
    snprintf(shape, sizeof shape, "N=%d V=%d ld=%d", N, V, ld);
    size_t nv = (size_t)N * V, nl = (size_t)N * ld;
    const float PAD = 1e30f;
    float *logits = tu_normal_array(nv), *probs = tu_dup(logits, nv), *losses = zeros(N);
    for (size_t i = 0; i < nv; i++) logits[i] *= 3.0f, probs[i] *= 3.0f;
    int32_t *tg = malloc(sizeof(int32_t) * (size_t)N);
    CHECK(tg != NULL);
    for (int i = 0; i < N; i++) tg[i] = i % 4 == 3 ? -1 : (int32_t)(tu_rng_u64() % (uint64_t)V);
    int want_valid = 0;
    float want_mean = andrea_ref_crossentropy_forward(probs, losses, tg, N, V, &want_valid);
    /* probabilities: a V-term sum of exponentials normalises them, (V + 16) EPS relative;
     * losses = -log p: that relative error becomes absolute */
    double tol = 4.0 * (V + 16) * EPS;
    if (supported(be, (const void *)be->ops.crossentropy_forward, "crossentropy_forward")) {
        cmp_t c = {0};
        float *hl = pad_rows(logits, N, V, ld, PAD);
        float *d_l = upf(be, hl, nl), *d_loss = upf(be, losses, N);
        int n_valid = -1;
        /* the targets are host memory (backend.h), on every backend */
        float mean = be->ops.crossentropy_forward(be, d_l, d_loss, tg, N, V, ld, &n_valid);
        float *gl = zeros(N);
        downf(be, hl, d_l, nl), downf(be, gl, d_loss, N);
        float *gp = unpad_rows(hl, N, V, ld);
        cmp(&c, "probs", gp, probs, nv, 0.0, tol);
        cmp(&c, "losses", gl, losses, N, tol, tol);
        cmp(&c, "mean", &mean, &want_mean, 1, tol, tol + N * EPS);
        float nv_got = (float)n_valid, nv_want = (float)want_valid;
        cmp(&c, "n_valid", &nv_got, &nv_want, 1, 0.0, 0.0);
        float pad_got = (float)pad_changed(hl, N, V, ld, PAD), pad_want = 0.0f;
        cmp(&c, "padding columns written", &pad_got, &pad_want, 1, 0.0, 0.0);
        report(be, "crossentropy_forward", shape, &c);
        free(gp), free(gl), free(hl);
        freed(be, d_l), freed(be, d_loss);
    }
    if (supported(be, (const void *)be->ops.crossentropy_backward, "crossentropy_backward")) {
        cmp_t c = {0};
        float dloss = 1.0f / (float)(want_valid ? want_valid : 1);
        float *hp = pad_rows(probs, N, V, ld, PAD), *want = tu_dup(probs, nv);
        float *d_p = upf(be, hp, nl);
        be->ops.crossentropy_backward(be, d_p, tg, N, V, ld, dloss);
        downf(be, hp, d_p, nl);
        float *got = unpad_rows(hp, N, V, ld);
        andrea_ref_crossentropy_backward(want, tg, N, V, dloss);
        cmp(&c, "dlogits", got, want, nv, 4.0 * EPS * dloss, 4.0 * EPS); /* one subtract, one multiply */
        float pad_got = (float)pad_changed(hp, N, V, ld, 0.0f), pad_want = 0.0f;
        cmp(&c, "padding columns not zeroed", &pad_got, &pad_want, 1, 0.0, 0.0);
        report(be, "crossentropy_backward", shape, &c);
        free(got), free(want), free(hp);
        freed(be, d_p);
    }
    free(logits), free(probs), free(losses), free(tg);
}

static void test_adamw(be_t be, size_t n, int t) {
    if (!supported(be, (const void *)be->ops.adamw_update, "adamw_update")) return;
    char shape[48];
    snprintf(shape, sizeof shape, "n=%zu t=%d", n, t);
    float *p = tu_normal_array(n), *g = tu_normal_array(n), *m = tu_normal_array(n);
    float *v = tu_normal_array(n);
    for (size_t i = 0; i < n; i++) v[i] = v[i] * v[i] * 0.01f, m[i] *= 0.1f;
    float *p0 = tu_dup(p, n), *wp = tu_dup(p, n), *wm = tu_dup(m, n), *wv = tu_dup(v, n);
    float *d_p = upf(be, p, n), *d_g = upf(be, g, n), *d_m = upf(be, m, n), *d_v = upf(be, v, n);
    float lr = 1e-3f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f, gscale = 0.5f;
    be->ops.adamw_update(be, d_p, d_g, d_m, d_v, n, lr, b1, b2, eps, wd, t, gscale);
    andrea_ref_adamw_update(wp, g, wm, wv, n, lr, b1, b2, eps, wd, t, gscale);
    downf(be, p, d_p, n), downf(be, m, d_m, n), downf(be, v, d_v, n);
    cmp_t c = {0};
    /* a dozen float operations per element: 16 EPS relative to the terms, not to the
     * result: m = b1 m + (1 - b1) g' can cancel to ~0, and float's 1 - b1 is off from
     * double's by 2.5 EPS, so m and v get 16 EPS of their terms' scale (|m|, |g'| <= ~2.5
     * here; v's terms <= ~0.2) absolute. The parameter moves by lr times a step m / sqrt(v),
     * O(1) but 10-20 where v is near 0 (the random data has such elements): 16 EPS of |p| and
     * of lr (1 + |step|), the step from the reference's move. */
    cmp(&c, "m", m, wm, n, 16 * EPS * 2.5, 16 * EPS);
    cmp(&c, "v", v, wv, n, 16 * EPS * 0.2, 16 * EPS);
    for (size_t i = 0; i < n; i++) {
        double step = fabs(((double)p0[i] - wp[i]) / lr);
        cmp(&c, "p", &p[i], &wp[i], 1, 16 * EPS * lr * (1.0 + step), 16 * EPS);
    }
    report(be, "adamw_update", shape, &c);
    freed(be, d_p), freed(be, d_g), freed(be, d_m), freed(be, d_v);
    free(p), free(g), free(m), free(v), free(p0), free(wp), free(wm), free(wv);
}

/* The optional all-tensors AdamW: the bits of adamw_update on each tensor (ragged sizes,
 * one of a single element, decay on every other one) in one call. */
static void test_adamw_many(be_t be, int t) {
    if (!be->ops.adamw_update_many) return; /* optional: the caller goes tensor by tensor */
    static const int64_t sizes[] = {3, 1, 4097, 256, 70, 1000};
    enum { NT = sizeof sizes / sizeof sizes[0] };
    int64_t off[NT + 1] = {0};
    uint8_t decay[NT];
    for (int i = 0; i < NT; i++) off[i + 1] = off[i] + sizes[i], decay[i] = (uint8_t)(i % 2 == 0);
    size_t n = (size_t)off[NT];
    char shape[48];
    snprintf(shape, sizeof shape, "%d tensors n=%zu t=%d", (int)NT, n, t);
    float *p = tu_normal_array(n), *g = tu_normal_array(n), *m = tu_normal_array(n);
    float *v = tu_normal_array(n);
    for (size_t i = 0; i < n; i++) v[i] = v[i] * v[i] * 0.01f, m[i] *= 0.1f;
    float *h[2][3];
    float lr = 1e-3f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f, gscale = 0.5f;
    for (int k = 0; k < 2; k++) { /* k 0: tensor by tensor, 1: all at once */
        float *d_p = upf(be, p, n), *d_g = upf(be, g, n), *d_m = upf(be, m, n), *d_v = upf(be, v, n);
        if (k == 0)
            for (int i = 0; i < NT; i++)
                be->ops.adamw_update(be, d_p + off[i], d_g + off[i], d_m + off[i], d_v + off[i],
                                     (size_t)sizes[i], lr, b1, b2, eps, decay[i] ? wd : 0.0f, t,
                                     gscale);
        else
            be->ops.adamw_update_many(be, d_p, d_g, d_m, d_v, off, decay, NT, lr, b1, b2, eps,
                                      wd, t, gscale);
        for (int j = 0; j < 3; j++) h[k][j] = zeros(n);
        downf(be, h[k][0], d_p, n), downf(be, h[k][1], d_m, n), downf(be, h[k][2], d_v, n);
        freed(be, d_p), freed(be, d_g), freed(be, d_m), freed(be, d_v);
    }
    cmp_t c = {0};
    cmp(&c, "p", h[1][0], h[0][0], n, 0.0, 0.0);
    cmp(&c, "m", h[1][1], h[0][1], n, 0.0, 0.0);
    cmp(&c, "v", h[1][2], h[0][2], n, 0.0, 0.0);
    report(be, "adamw_update_many", shape, &c);
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 3; j++) free(h[k][j]);
    free(p), free(g), free(m), free(v);
}

static void test_sum_squares(be_t be, size_t n) {
    if (!supported(be, (const void *)be->ops.sum_squares, "sum_squares")) return;
    char shape[32];
    snprintf(shape, sizeof shape, "n=%zu", n);
    float *g = tu_normal_array(n), *d_g = upf(be, g, n);
    float got = (float)be->ops.sum_squares(be, d_g, n), want = (float)andrea_ref_sum_squares(g, n);
    cmp_t c = {0};
    /* squares of floats are exact in double and the sum runs in double: only the final
     * rounding to float here is left (1 ulp) */
    cmp(&c, "sum", &got, &want, 1, 0.0, 2 * EPS);
    report(be, "sum_squares", shape, &c);
    freed(be, d_g);
    free(g);
}

/* ---- embeddings, the residual stream, zeroing ------------------------------------------- */

/* Forward: one float add per element, exact in double, so the reference's rounding is the
 * kernel's: bit for bit. Backward: each row sums up to B T terms of N(0, 1); 4 n EPS of
 * their scale bounds the order-dependent rounding. Token ids repeat (V small) so the
 * scatter-add meets the same row many times, across tiles of positions. */
static void test_embedding(be_t be, int B, int T, int C, int V) {
    if (!supported(be, (const void *)be->ops.embedding_forward, "embedding")) return;
    char shape[48];
    snprintf(shape, sizeof shape, "B=%d T=%d C=%d V=%d", B, T, C, V);
    size_t BT = (size_t)B * T, nte = (size_t)V * C, npe = (size_t)T * C;
    int32_t *tok = malloc(sizeof(int32_t) * BT);
    for (size_t i = 0; i < BT; i++) tok[i] = (int32_t)(tu_rng_u64() % (uint64_t)V);
    float *wte = tu_normal_array(nte), *wpe = tu_normal_array(npe), *dout = tu_normal_array(BT * C);
    float *out = zeros(BT * C), *ref = zeros(BT * C);
    float *dwte = tu_normal_array(nte), *dwpe = tu_normal_array(npe); /* accumulated into */
    float *rte = tu_dup(dwte, nte), *rpe = tu_dup(dwpe, npe);
    float *d_te = upf(be, wte, nte), *d_pe = upf(be, wpe, npe), *d_out = upf(be, out, BT * C);
    be->ops.embedding_forward(be, d_out, tok, d_te, d_pe, B, T, C);
    downf(be, out, d_out, BT * C);
    andrea_ref_embedding_forward(ref, tok, wte, wpe, B, T, C);
    cmp_t c = {0};
    cmp(&c, "out", out, ref, BT * C, 0.0, 0.0);
    report(be, "embedding_forward", shape, &c);
    float *d_dte = upf(be, dwte, nte), *d_dpe = upf(be, dwpe, npe), *d_dout = upf(be, dout, BT * C);
    be->ops.embedding_backward(be, d_dte, d_dpe, d_dout, tok, B, T, C);
    downf(be, dwte, d_dte, nte), downf(be, dwpe, d_dpe, npe);
    andrea_ref_embedding_backward(rte, rpe, dout, tok, B, T, C);
    cmp_t cb = {0};
    double tol = 4.0 * (double)BT * EPS * sqrt((double)BT);
    cmp(&cb, "dwte", dwte, rte, nte, tol, 4 * EPS);
    cmp(&cb, "dwpe", dwpe, rpe, npe, tol, 4 * EPS);
    report(be, "embedding_backward", shape, &cb);
    freed(be, d_te), freed(be, d_pe), freed(be, d_out), freed(be, d_dte), freed(be, d_dpe);
    freed(be, d_dout);
    free(tok), free(wte), free(wpe), free(dout), free(out), free(ref), free(dwte), free(dwpe);
    free(rte), free(rpe);
}

/* residual: out = a + b, one rounding, bit for bit (also in place, as decoding uses it);
 * zero: every byte 0. */
static void test_residual_zero(be_t be, size_t n) {
    if (!supported(be, (const void *)be->ops.residual_forward, "residual/zero")) return;
    char shape[32];
    snprintf(shape, sizeof shape, "n=%zu", n);
    float *a = tu_normal_array(n), *b = tu_normal_array(n), *got = zeros(n), *want = zeros(n);
    for (size_t i = 0; i < n; i++) want[i] = (float)((double)a[i] + b[i]);
    float *d_a = upf(be, a, n), *d_b = upf(be, b, n);
    be->ops.residual_forward(be, d_a, d_a, d_b, n);
    downf(be, got, d_a, n);
    cmp_t c = {0};
    cmp(&c, "a + b", got, want, n, 0.0, 0.0);
    be->ops.zero(be, d_a, n * sizeof(float));
    downf(be, got, d_a, n);
    memset(want, 0, n * sizeof(float));
    cmp(&c, "zeroed", got, want, n, 0.0, 0.0);
    report(be, "residual_forward/zero", shape, &c);
    freed(be, d_a), freed(be, d_b);
    free(a), free(b), free(got), free(want);
}

/* ---- every op of one backend ----------------------------------------------------------- */

static void test_backend(be_t be) {
    test_memory(be, 1), test_memory(be, 1000);
    test_embedding(be, 1, 1, 8, 3), test_embedding(be, 3, 17, 40, 5), test_embedding(be, 4, 64, 130, 257);
    /* more positions than a block has threads, more columns too (cuda's tiles) */
    test_embedding(be, 5, 97, 300, 11);
    test_residual_zero(be, 7), test_residual_zero(be, 40000);
    /* products: a row, tiny ragged, edge tiles in both directions, several k blocks, and
     * big enough for BLAS and bf16 (M > 4, M K N >= 2^18) */
    static const int mm[][3] = {{1, 16, 7}, {3, 5, 2}, {33, 47, 65}, {130, 96, 257}, {64, 300, 128}};
    for (size_t s = 0; s < sizeof mm / sizeof mm[0]; s++)
        for (int act = 0; act < 3; act++) {
            if (act != 2 && s != 3) continue; /* every activation on one shape */
            test_matmul(be, mm[s][0], mm[s][1], mm[s][2], act);
        }
    /* n: one sequence decoding, or several batched */
    static const int mv[][3] = {{16, 7, 1}, {130, 257, 1}, {768, 100, 1}, {130, 257, 3},
                                {64, 33, 37}}; /* 37: cuda's groups of 16, one ragged */
    for (int fmt = 0; fmt < 3; fmt++)
        for (size_t s = 0; s < sizeof mv / sizeof mv[0]; s++)
            test_matvec(be, fmt, mv[s][0], mv[s][1], mv[s][2]);
    static const int nm[][2] = {{1, 7}, {5, 64}, {33, 130}, {200, 96}}; /* 200: CUDA's row chunks */
    for (int kind = 0; kind < 2; kind++)
        for (size_t s = 0; s < sizeof nm / sizeof nm[0]; s++) test_norm(be, kind, nm[s][0], nm[s][1]);
    for (int act = 0; act < 3; act++) test_activation(be, act, 1001);
    /* attention: one position, ragged T around the flash tiles (CPU: 32 rows, 64 keys; CUDA:
     * 16 rows, 16-32 keys), odd HS, and HS 64, 96 and 128 (CUDA's largest tile; cuda-bf16's
     * tensor-core backward past 48 KiB of shared memory, also with T below its 32-row tile)
     * and 136 (past it) */
    static const int at[][4] = {{1, 1, 16, 2},   {2, 5, 32, 2},    {2, 65, 64, 4},
                                {1, 130, 36, 3}, {1, 40, 128, 2},  {1, 45, 192, 2},
                                {2, 33, 256, 2}, {1, 20, 128, 1},  {1, 9, 272, 2}};
    for (size_t s = 0; s < sizeof at / sizeof at[0]; s++)
        test_attention(be, at[s][0], at[s][1], at[s][2], at[s][3]);
    static const int dc[][3] = {{0, 16, 2}, {6, 32, 4}, {129, 64, 4}};
    for (size_t s = 0; s < sizeof dc / sizeof dc[0]; s++) test_attention_decode(be, dc[s][0], dc[s][1], dc[s][2]);
    for (size_t s = 0; s < sizeof dc / sizeof dc[0]; s++) test_attention_decode_kv(be, dc[s][0], dc[s][1], dc[s][2]);
    /* ld > V: a padded head's rows (257 -> 320, 1000 -> 1024) */
    static const int ce[][3] = {{1, 5, 5}, {7, 257, 257}, {33, 1000, 1000}, {7, 257, 320},
                                {5, 1000, 1024}};
    for (size_t s = 0; s < sizeof ce / sizeof ce[0]; s++)
        test_crossentropy(be, ce[s][0], ce[s][1], ce[s][2]);
    test_adamw(be, 1, 1), test_adamw(be, 1000, 1), test_adamw(be, 70001, 10);
    test_adamw_many(be, 3);
    /* across the kernel's 256 parts and its parallel threshold (2^18) */
    test_sum_squares(be, 1), test_sum_squares(be, 1000), test_sum_squares(be, 300001);
}

int main(void) {
    tu_rng_seed(0x5DEECE66Dull);
    int n = andrea_backend_count();
    for (int i = 0; i < n; i++) test_backend(andrea_backend_get(i));
    printf("test_backend_ops: %d backend(s): ", n);
    for (int i = 0; i < n; i++) printf("%s%s", i ? ", " : "", andrea_backend_name(andrea_backend_get(i)));
    printf(" | %d OK, %d FAIL, %d skipped (not supported)\n", g_ok, g_fail, g_skip);
    if (g_fail) tu_failures += g_fail;
    return tu_finish("test_backend_ops");
}
