/*
 * test_attention_flash.c - the fused (flash) attention against the double
 * reference (ref_attention_*) and against the explicit-matrix kernels
 * (andrea_attention_forward/backward), on shapes whose T straddles the query tile and
 * key block (1, 2, 5, 63, 64, 65, 130, 257; tiles of 32, blocks of 64) and head
 * sizes 16 and 64 (whole register tiles), 12 and 40 (partial ones) and 200
 * (several channel chunks of 64), for every instruction set the CPU has:
 *   - out and the backward's dqkv (pre-filled: the contract is +=);
 *   - lse against a log-sum-exp recomputed in double from the same float scores;
 *   - large scores (q scaled up) so that the online softmax's rescaling and exp
 *     underflow run, where a missed rescale would be a large error;
 *   - the forward ignores what out and lse held before (NaN pre-fill);
 *   - results bitwise equal for 1, 2 and 3 threads (per instruction set).
 *
 * Tolerance vocabulary (as in test_kernels.c): eps = FLT_EPSILON. A float sum of
 * n terms is within about n eps/2 * sum|term| of the exact sum, so each bound is
 * proportional to the lengths of the sums behind it, with a factor of 2 or more.
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

#include "reference/reference.h"
#include "test_util.h"

#define EPS ((double)FLT_EPSILON)

static int g_isa; /* the instruction set under test (the engine's ISA cap) */
static andrea_cpu_engine g_eng = {ANDREA_MATMUL_BUILTIN, ANDREA_PRECISION_FP32, -1};

/* ---- helpers ------------------------------------------------------------------------- */

static void fill(float *x, size_t n, float v) {
    for (size_t i = 0; i < n; i++) x[i] = v;
}

/* lse in double from the float inputs: s_j = (q . k_j) * scale with the float
 * scale constant (the kernel's), max + log(sum exp(s_j - max)). Also returns the
 * largest |s_ij| seen, which sets the absolute scale of the score errors. */
static double ref_lse(double *lse, const float *qkv, int B, int T, int C, int NH) {
    int HS = C / NH;
    double scale = (double)(1.0f / sqrtf((float)HS)), smax = 0.0;
    double *s = malloc(((size_t)T + 1) * sizeof(double));
    if (!s) {
        fprintf(stderr, "test_attention_flash: out of memory\n");
        exit(1);
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const float *q = qkv + ((size_t)b * T + i) * 3 * C + h * HS;
                double mx = -INFINITY, sum = 0.0;
                for (int j = 0; j <= i; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * HS;
                    double d = 0.0;
                    for (int c = 0; c < HS; c++) d += (double)q[c] * k[c];
                    s[j] = d * scale;
                    if (s[j] > mx) mx = s[j];
                    if (fabs(s[j]) > smax) smax = fabs(s[j]);
                }
                for (int j = 0; j <= i; j++) sum += exp(s[j] - mx);
                lse[((size_t)b * NH + h) * T + i] = mx + log(sum);
            }
    free(s);
    return smax;
}

#ifdef _OPENMP
/* Forward and backward with n threads; out, lse and the gradient land in the given buffers. */
static void run_flash_threads(int n, float *out, float *lse, float *d, const float *d0,
                              const float *dout, const float *qkv, int B, int T, int C, int NH) {
    int saved = omp_get_max_threads();
    omp_set_num_threads(n);
    size_t nqkv = (size_t)B * T * 3 * C;
    andrea_attention_flash_forward(&g_eng, out, lse, qkv, B, T, C, NH);
    memcpy(d, d0, nqkv * sizeof(float));
    andrea_attention_flash_backward(&g_eng, d, dout, qkv, out, lse, B, T, C, NH);
    omp_set_num_threads(saved);
}
#endif

/* ---- the test ---------------------------------------------------------------------- */

/* q_gain multiplies every q: 1 gives O(1) scores (a trained model's regime), larger
 * values give peaked rows whose max moves between key blocks. */
static void test_flash(int B, int T, int C, int NH, float q_gain) {
    char what[200];
    int HS = C / NH;
    size_t nqkv = (size_t)B * T * 3 * C, nout = (size_t)B * T * C;
    size_t natt = (size_t)B * NH * T * T, nlse = (size_t)B * NH * T;
    float *qkv = tu_normal_array(nqkv);
    for (size_t r = 0; r < (size_t)B * T; r++)
        for (int c = 0; c < C; c++) qkv[r * 3 * C + c] *= q_gain;

    /* forward: flash, explicit, reference */
    float *out = tu_falloc(nout), *lse = tu_falloc(nlse);
    fill(out, nout, NAN); /* the forward must overwrite, not accumulate */
    fill(lse, nlse, NAN);
    andrea_attention_flash_forward(&g_eng, out, lse, qkv, B, T, C, NH);
    float *eout = tu_falloc(nout), *eatt = tu_falloc(natt);
    andrea_attention_forward(eout, eatt, NULL, qkv, B, T, C, NH);
    float *rout = tu_falloc(nout), *ratt = tu_falloc(natt);
    andrea_ref_attention_forward(rout, ratt, NULL, qkv, B, T, C, NH);
    double *rlse = malloc((nlse ? nlse : 1) * sizeof(double));
    if (!rlse) exit(1);
    double smax = ref_lse(rlse, qkv, B, T, C, NH);

    /* A score is a float dot of HS terms: absolute error <= HS eps/2 * scale sum|q k|,
     * at most ~HS eps * max|s| with a factor 2 to spare; a probability inherits it as a
     * relative error, and so do out and lse. The softmax sum (T terms), the output sum
     * (T terms), andrea_expf (2e-7 < 2 eps, once per term) and one rescale per key
     * block (<= T/64 + 1 multiplies by a rounded exp) add ~(T + 16) eps relative.
     * Factor 4 as in test_kernels.c's explicit-attention test (rel = 4 (HS+T+16) eps
     * when max|s| <= 1). */
    double sc = smax > 1.0 ? smax : 1.0;
    double rel = 4 * (HS * sc + T + 16) * EPS;
    char kind[40];
    snprintf(kind, sizeof kind, " isa=%d%s", g_isa, q_gain == 1.0f ? "" : " large-scores");
    snprintf(what, sizeof what, "flash forward out vs ref B=%d T=%d C=%d NH=%d%s", B, T, C,
             NH, kind);
    tu_check_rel(what, out, rout, nout, rel);
    /* Two float kernels, each within rel of the reference. */
    snprintf(what, sizeof what, "flash forward out vs explicit B=%d T=%d C=%d NH=%d%s", B, T,
             C, NH, kind);
    tu_check_rel(what, out, eout, nout, 2 * rel);

    /* lse = m + log(l): the max inherits the score error (HS eps * max|s|), log(l)
     * has absolute error ~ the relative error of l ((T + 16) eps with the exps and
     * rescales), and the final add rounds by eps |lse|. Same factor 4. */
    {
        size_t worst = 0;
        double worst_ratio = -1.0;
        for (size_t r = 0; r < nlse; r++) {
            double lim = 4 * ((HS * sc + T + 16) * EPS + EPS * fabs(rlse[r]));
            double err = fabs((double)lse[r] - rlse[r]);
            double ratio = isnan(err) ? INFINITY : err / lim;
            if (ratio > worst_ratio) {
                worst_ratio = ratio;
                worst = r;
            }
        }
        if (nlse && !(worst_ratio <= 1.0)) {
            fprintf(stderr, "flash lse B=%d T=%d C=%d NH=%d%s: [%zu] got %.9g want %.9g (%.3g x bound)\n",
                    B, T, C, NH, kind, worst, lse[worst], rlse[worst], worst_ratio);
            tu_failures++;
        }
    }

    /* backward: gradients pre-filled with nonzero values (+= contract) */
    float *dout = tu_normal_array(nout), *d0 = tu_normal_array(nqkv);
    float *d = tu_dup(d0, nqkv), *ed = tu_dup(d0, nqkv), *rd = tu_dup(d0, nqkv);
    andrea_attention_flash_backward(&g_eng, d, dout, qkv, out, lse, B, T, C, NH);
    andrea_attention_backward(ed, dout, qkv, eatt, B, T, C, NH);
    andrea_ref_attention_backward(rd, dout, qkv, ratt, B, T, C, NH);
    /* Each of p (recomputed from lse: the forward's rel), dP (a dot of HS), D (a dot of
     * HS, from out, itself within rel), dS (a difference that can cancel, judged on the
     * tensor's scale) and the dq/dk/dv sums of T terms adds ~rel; 4 rel covers them
     * (the explicit kernel's test uses 2 rel with exact att; here p and D are recomputed). */
    snprintf(what, sizeof what, "flash backward dqkv vs ref B=%d T=%d C=%d NH=%d%s", B, T, C,
             NH, kind);
    tu_check_rel(what, d, rd, nqkv, 4 * rel);
    /* The explicit backward runs from its own forward's att: both within ~4 rel of the reference. */
    snprintf(what, sizeof what, "flash backward dqkv vs explicit B=%d T=%d C=%d NH=%d%s", B,
             T, C, NH, kind);
    tu_check_rel(what, d, ed, nqkv, 8 * rel);

#ifdef _OPENMP
    /* Each (b, h) pair is one thread's, summed in a fixed order: bitwise identical. */
    float *o1 = tu_falloc(nout), *l1 = tu_falloc(nlse), *g1 = tu_falloc(nqkv);
    float *o2 = tu_falloc(nout), *l2 = tu_falloc(nlse), *g2 = tu_falloc(nqkv);
    run_flash_threads(1, o1, l1, g1, d0, dout, qkv, B, T, C, NH);
    for (int n = 2; n <= 3; n++) {
        run_flash_threads(n, o2, l2, g2, d0, dout, qkv, B, T, C, NH);
        if (memcmp(o1, o2, nout * sizeof(float)) || memcmp(l1, l2, nlse * sizeof(float)) ||
            memcmp(g1, g2, nqkv * sizeof(float))) {
            fprintf(stderr, "flash B=%d T=%d C=%d NH=%d%s: results differ between 1 and %d threads\n",
                    B, T, C, NH, kind, n);
            tu_failures++;
        }
    }
    /* ... and equal to the default thread count's run above. */
    if (memcmp(o1, out, nout * sizeof(float)) || memcmp(g1, d, nqkv * sizeof(float))) {
        fprintf(stderr, "flash B=%d T=%d C=%d NH=%d%s: results differ from the default thread count\n",
                B, T, C, NH, kind);
        tu_failures++;
    }
    free(o1); free(l1); free(g1); free(o2); free(l2); free(g2);
#endif

    free(qkv); free(out); free(lse); free(eout); free(eatt); free(rout); free(ratt); free(rlse);
    free(dout); free(d0); free(d); free(ed); free(rd);
}

int main(void) {
    tu_rng_seed(0xD1B54A32D192ED03ull); /* the data every tolerance here was checked on */
    static const int Ts[] = {1, 2, 5, 63, 64, 65, 130, 257};
    static const int CNH[][2] = {{32, 2}, {64, 4}, {128, 2}};
    /* Head sizes off the 16-wide register tiles (12 = 3 x 4, 40 = 32 + 8) and above the
     * 64-channel chunk (200 = 3 x 64 + 8). */
    static const int CNH_odd[][2] = {{36, 3}, {120, 3}, {200, 1}};
    static const int Ts_odd[] = {1, 33, 130};
    int best = andrea_cpu_isa(-1);
    for (g_isa = 0; g_isa <= best; g_isa++) {
        g_eng.isa = g_isa;
        if (andrea_cpu_isa(g_isa) != g_isa) {
            fprintf(stderr, "andrea_cpu_isa(%d) did not take\n", g_isa);
            tu_failures++;
        }
        for (int b = 1; b <= 2; b++)
            for (int t = 0; t < 8; t++)
                for (int c = 0; c < 3; c++) test_flash(b, Ts[t], CNH[c][0], CNH[c][1], 1.0f);
        for (int t = 0; t < 3; t++)
            for (int c = 0; c < 3; c++) test_flash(2, Ts_odd[t], CNH_odd[c][0], CNH_odd[c][1], 1.0f);
        /* Peaked rows: scores of tens, most exps underflow, the max moves between blocks. */
        for (int t = 3; t < 8; t++) test_flash(2, Ts[t], 64, 4, 6.0f);
    }
    printf("test_attention_flash: instruction sets 0..%d checked\n", best);
    return tu_finish("test_attention_flash");
}
