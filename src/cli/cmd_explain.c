/*
 * cmd_explain.c - `andrea explain`: the attention lesson (shared/spec/seed-attention.md)
 * walked step by step on a tiny real example, with the numbers of an actual model
 * (a checkpoint, or a seeded toy model), and every claim checked on the spot:
 *
 *   Q, K, V  ->  S = Q K^T  ->  S / sqrt(d_k)  ->  causal mask  ->  softmax rows
 *   ->  A V  ->  concatenate heads  ->  W_O
 *
 * Each check prints PASS or FAIL; the command exits 1 if any failed. Our own
 * re-computations use double precision; the tolerances say why they are what
 * they are. docs/attention.md.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_inspect.h"
#include "andrea_tokenizer.h"
#include "args.h"
#include "attn_util.h"
#include "commands.h"

enum { EXPLAIN_MAX_T = 8, SHOW_COLS = 8, W = 8 };
#define EPS32 (1.0 / 8388608.0) /* 2^-23: one ulp of 1.0f */

static int n_pass, n_fail;

#if defined(__GNUC__)
static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
static void check(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("  check: ");
    vprintf(fmt, ap);
    printf(": %s\n", ok ? "PASS" : "FAIL");
    va_end(ap);
    if (ok) n_pass++;
    else n_fail++;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* A (rows x cols) matrix with token labels on the rows; get(i, j) gives element (i, j). */
typedef double (*getter)(const void *ctx, int i, int j);

static void print_mat(const attn_tokens *tk, int rows, int cols, int col_is_token, getter get,
                      const void *ctx, int row_sums) {
    printf("  %6s", "");
    for (int j = 0; j < cols; j++) {
        if (col_is_token) {
            attn_print_cell(stdout, tk->labels[j], W, 1);
        } else {
            char b[16];
            snprintf(b, sizeof b, "d%d", j);
            attn_print_cell(stdout, b, W, 1);
        }
    }
    if (row_sums) printf("  | row sum");
    printf("\n");
    double maxabs = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            double x = get(ctx, i, j);
            if (isfinite(x) && fabs(x) > maxabs) maxabs = fabs(x);
        }
    for (int i = 0; i < rows; i++) {
        printf("  ");
        attn_print_cell(stdout, tk->labels[i], 6, 0);
        double sum = 0;
        for (int j = 0; j < cols; j++) {
            double x = get(ctx, i, j);
            sum += x;
            if (x == 0 && row_sums) printf("%*s", W, "0");
            else attn_print_score(stdout, x, maxabs, W);
        }
        if (row_sums) printf("  | %.6f", sum);
        printf("\n");
    }
}

/* ---- accessors ----------------------------------------------------------------------- */

typedef struct {
    const float *qkv; /* (T, 3C) of the layer */
    int C, HS, h, part; /* part 0 q, 1 k, 2 v */
} qkv_ctx;
static double get_qkv(const void *p, int i, int j) {
    const qkv_ctx *c = p;
    return c->qkv[(size_t)i * 3 * c->C + (size_t)c->part * c->C + (size_t)c->h * c->HS + j];
}
typedef struct {
    const float *m;
    int T;
} mat_ctx;
static double get_mat(const void *p, int i, int j) {
    const mat_ctx *c = p;
    return c->m[(size_t)i * c->T + j];
}
typedef struct {
    const double *m;
    int cols;
} dmat_ctx;
static double get_dmat(const void *p, int i, int j) {
    const dmat_ctx *c = p;
    return c->m[(size_t)i * c->cols + j];
}

/* ---- the claims on random vectors ------------------------------------------------------- */

/* std of q.k for q, k with N(0, 1) entries: the lesson says ~sqrt(d_k). */
static void claim_magnitude(andrea_rng *rng) {
    static const int dks[3] = {64, 256, 4096};
    enum { PAIRS = 2000 };
    printf("\nclaim: the dot product of two random unit-variance vectors of dimension d_k has a\n"
           "typical size (std) of sqrt(d_k); dividing by sqrt(d_k) brings it back to 1.\n"
           "  measured over %d random pairs each:\n", PAIRS);
    printf("  %6s %14s %10s %8s %16s\n", "d_k", "std(q.k)", "sqrt(d_k)", "ratio", "std after scale");
    float *q = malloc(sizeof(float) * 4096), *k = malloc(sizeof(float) * 4096);
    if (!q || !k) {
        free(q);
        free(k);
        check(0, "out of memory for the random vectors");
        return;
    }
    double sds[3];
    for (int t = 0; t < 3; t++) {
        int d = dks[t];
        double s2 = 0;
        for (int p = 0; p < PAIRS; p++) {
            for (int i = 0; i < d; i++) {
                q[i] = andrea_rng_normal(rng);
                k[i] = andrea_rng_normal(rng);
            }
            double dot = 0;
            for (int i = 0; i < d; i++) dot += (double)q[i] * k[i];
            s2 += dot * dot; /* the mean is 0, so E[dot^2] is the variance */
        }
        sds[t] = sqrt(s2 / PAIRS);
        double want = sqrt((double)d);
        printf("  %6d %14.3f %10.3f %8.3f %16.3f\n", d, sds[t], want, sds[t] / want,
               sds[t] / want);
    }
    for (int t = 0; t < 3; t++) {
        double want = sqrt((double)dks[t]);
        /* the estimate's relative standard error is 1/sqrt(2 PAIRS) = 1.6%; 10% is 6 of them */
        check(fabs(sds[t] / want - 1) < 0.10,
              "d_k = %d: std(q.k) = %.2f is within 10%% of sqrt(d_k) = %.2f", dks[t], sds[t], want);
    }
    free(q);
    free(k);
}

/* Softmax of n scores (double), returns max probability and entropy. */
static void softmax_stats(const double *s, int n, double *pmax, double *ent) {
    double m = -INFINITY, z = 0;
    for (int i = 0; i < n; i++)
        if (s[i] > m) m = s[i];
    for (int i = 0; i < n; i++) z += exp(s[i] - m);
    *pmax = 0;
    *ent = 0;
    for (int i = 0; i < n; i++) {
        double p = exp(s[i] - m) / z;
        if (p > *pmax) *pmax = p;
        if (p > 0) *ent -= p * log(p);
    }
}

static void claim_sharpness(andrea_rng *rng) {
    enum { DK = 64, KEYS = 16, ROWS = 1000 };
    double sc_max = 0, sc_ent = 0, un_max = 0, un_ent = 0;
    float q[DK], k[KEYS][DK];
    double raw[KEYS], scaled[KEYS];
    for (int r = 0; r < ROWS; r++) {
        for (int d = 0; d < DK; d++) q[d] = andrea_rng_normal(rng);
        for (int j = 0; j < KEYS; j++) {
            double dot = 0;
            for (int d = 0; d < DK; d++) {
                k[j][d] = andrea_rng_normal(rng);
                dot += (double)q[d] * k[j][d];
            }
            raw[j] = dot;
            scaled[j] = dot / sqrt((double)DK);
        }
        double pm, e;
        softmax_stats(raw, KEYS, &pm, &e);
        un_max += pm;
        un_ent += e;
        softmax_stats(scaled, KEYS, &pm, &e);
        sc_max += pm;
        sc_ent += e;
    }
    printf("\nclaim: without the scale, softmax is much sharper (one key takes almost everything,\n"
           "so the gradients of the others vanish).\n"
           "  %d rows of %d random keys, d_k = %d (uniform would be max p %.4f, entropy %.4f):\n",
           ROWS, KEYS, DK, 1.0 / KEYS, log((double)KEYS));
    printf("  %-22s %12s %14s\n", "", "mean max p", "mean entropy");
    printf("  %-22s %12.4f %14.4f\n", "softmax(QK^T)", un_max / ROWS, un_ent / ROWS);
    printf("  %-22s %12.4f %14.4f\n", "softmax(QK^T/sqrt(dk))", sc_max / ROWS, sc_ent / ROWS);
    check(un_max > sc_max && un_ent < sc_ent,
          "unscaled rows are sharper: mean max p %.3f > %.3f and entropy %.3f < %.3f",
          un_max / ROWS, sc_max / ROWS, un_ent / ROWS, sc_ent / ROWS);
}

/* ---- the command ---------------------------------------------------------------------- */

int cmd_explain(int argc, char **argv) {
    const char *model_path = NULL, *prompt = "To be or";
    int layer = 0, head = 0;
    uint64_t seed = 1337;
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &model_path, "checkpoint (default: a seeded toy model)", 0},
        {"prompt", 'p', ARG_STR, &prompt, "text of at most 8 tokens (\"To be or\")", 0},
        {"layer", 0, ARG_INT, &layer, "layer to walk through (0)", 0},
        {"head", 0, ARG_INT, &head, "head to walk through (0)", 0},
        {"seed", 0, ARG_U64, &seed, "seed of the toy model and of the random claims (1337)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("explain", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("explain", "[-m CKPT] [-p TEXT] [--layer L] [--head H]", specs, n_specs);
        return 0;
    }
    if (r) return 2;

    andrea_model *m = NULL;
    andrea_tokenizer *tok = NULL;
    if (model_path) {
        m = andrea_checkpoint_load_with_tokenizer(model_path, &tok);
    } else {
        /* toy: 2 layers, 2 heads of d_k = 8, weights large enough for visible attention */
        andrea_config cfg;
        andrea_config_preset("tiny", &cfg);
        cfg.n_head = 2;
        cfg.d_model = 16;
        cfg.ctx = 16;
        cfg.init_std = 0.35f;
        m = andrea_model_create(&cfg, seed);
        tok = m ? andrea_tokenizer_byte() : NULL;
    }
    if (!m || !tok) {
        fprintf(stderr, "andrea explain: %s\n", andrea_error());
        andrea_tokenizer_free(tok);
        andrea_model_free(m);
        return 1;
    }
    const andrea_config *c = andrea_model_config(m);
    int C = c->d_model, NH = c->n_head, HS = C / NH;
    attn_tokens tk = {0}, tk2 = {0};
    andrea_attn_maps mp = {0}, mp2 = {0};
    double *tmp = NULL;
    int rc = 1;
    if (layer < 0 || layer >= c->n_layer || head < 0 || head >= NH) {
        fprintf(stderr, "andrea explain: --layer %d --head %d is outside the model (layers 0..%d, "
                        "heads 0..%d)\n", layer, head, c->n_layer - 1, NH - 1);
        rc = 2;
        goto done;
    }
    int max_T = c->ctx < EXPLAIN_MAX_T ? c->ctx : EXPLAIN_MAX_T;
    if (attn_tokens_make("explain", tok, prompt, 0, max_T, &tk)) goto done;
    int T = tk.T;
    if (andrea_attention_inspect(m, tk.ids, T, ANDREA_VIEWS_ALL, &mp)) {
        fprintf(stderr, "andrea explain: %s\n", andrea_error());
        goto done;
    }
    tmp = malloc(sizeof(double) * (size_t)T * (C > T ? C : T));
    if (!tmp) {
        fprintf(stderr, "andrea explain: out of memory\n");
        goto done;
    }
    andrea_rng rng;
    andrea_rng_seed(&rng, seed);

    if (model_path)
        printf("model: '%s' (L=%d NH=%d C=%d d_k=%d)\n", model_path, c->n_layer, NH, C, HS);
    else
        printf("model: a toy model with random weights (seed %llu; L=%d NH=%d C=%d d_k=%d); "
               "use -m CKPT for a trained one\n", (unsigned long long)seed, c->n_layer, NH, C, HS);
    printf("prompt: \"%s\" -> T = %d tokens:", prompt, T);
    for (int i = 0; i < T; i++) printf(" %s", tk.labels[i]);
    printf("\nwalking layer %d, head %d; numbers are the model's own (float32), our checks "
           "recompute them in double\n", layer, head);

    const float *qkv = mp.qkv + (size_t)layer * T * 3 * C;
    int cols = HS < SHOW_COLS ? HS : SHOW_COLS;
    char shown[64] = "";
    if (cols < HS) snprintf(shown, sizeof shown, " (columns 0..%d of %d shown)", cols - 1, HS);

    /* 1. Q, K, V */
    printf("\n1. Q = x W_Q, K = x W_K, V = x W_V: the normalised input x (T, C) times learned "
           "matrices;\n   head %d owns columns %d..%d of each, so Q, K, V are (T, d_k) = (%d, %d)%s\n",
           head, head * HS, head * HS + HS - 1, T, HS, shown);
    const char *names[3] = {"Q", "K", "V"};
    for (int part = 0; part < 3; part++) {
        qkv_ctx qc = {qkv, C, HS, head, part};
        printf("  %s:\n", names[part]);
        print_mat(&tk, T, cols, 0, get_qkv, &qc, 0);
    }

    /* 2. S = Q K^T */
    const float *raw = andrea_attn_map(&mp, ANDREA_VIEW_RAW, layer, head);
    const float *scaled = andrea_attn_map(&mp, ANDREA_VIEW_SCALED, layer, head);
    const float *masked = andrea_attn_map(&mp, ANDREA_VIEW_MASKED, layer, head);
    const float *A = andrea_attn_map(&mp, ANDREA_VIEW_SOFTMAX, layer, head);
    mat_ctx mc = {raw, T};
    printf("\n2. scores S = Q K^T, (T, T) = (%d, %d): S[i][j] = q_i . k_j, how well query i matches "
           "key j\n", T, T);
    print_mat(&tk, T, T, 1, get_mat, &mc, 0);
    {
        int ok = 1;
        double worst = 0;
        qkv_ctx qc = {qkv, C, HS, head, 0}, kc = {qkv, C, HS, head, 1};
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                double dot = 0, mag = 0;
                for (int d = 0; d < HS; d++) {
                    double a = get_qkv(&qc, i, d), b = get_qkv(&kc, j, d);
                    dot += a * b;
                    mag += fabs(a * b);
                }
                /* a float sum of HS products drifts by at most ~HS ulps of the magnitudes */
                double err = fabs(raw[(size_t)i * T + j] - dot);
                if (!(err <= HS * EPS32 * mag + 1e-30)) ok = 0;
                if (err > worst) worst = err;
            }
        check(ok, "every S[i][j] equals sum_d q_i[d] k_j[d] recomputed in double (max |diff| "
                  "%.2g, within d_k float roundings)", worst);
    }

    /* 3. scale */
    printf("\n3. divide by sqrt(d_k) = sqrt(%d) = %.4f; the engine multiplies by the constant "
           "1/sqrtf(%d) = %.9g\n   (one multiply per score)\n", HS, sqrt((double)HS), HS,
           (double)mp.scale);
    mc.m = scaled;
    print_mat(&tk, T, T, 1, get_mat, &mc, 0);
    {
        int bad = 0;
        for (int i = 0; i < T; i++)
            for (int j = 0; j <= i; j++)
                if (!same_bits(raw[(size_t)i * T + j] * mp.scale, scaled[(size_t)i * T + j])) bad++;
        check(bad == 0 && mp.raw_mismatches == 0,
              "the engine's scaled scores are exactly fl(S * 1/sqrtf(d_k)) (%d of %d differ; all "
              "layers and heads: %lld)", bad, T * (T + 1) / 2, (long long)mp.raw_mismatches);
    }

    /* 4. mask */
    printf("\n4. causal mask: position i may not look at a later position j > i, so those scores "
           "become -inf\n   (the model generates left to right; at inference the future does not "
           "exist yet)\n");
    mc.m = masked;
    print_mat(&tk, T, T, 1, get_mat, &mc, 0);
    {
        int bad = 0;
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                float x = masked[(size_t)i * T + j];
                if (j > i ? !(isinf(x) && x < 0) : !same_bits(x, scaled[(size_t)i * T + j])) bad++;
            }
        check(bad == 0, "masked[i][j] is -inf for every j > i and the scaled score for j <= i "
                        "(%d wrong)", bad);
    }

    /* 5. softmax */
    printf("\n5. softmax over each row: A[i][j] = exp(s_ij - max_i) / sum_k exp(s_ik - max_i); "
           "exp(-inf) = 0\n");
    mc.m = A;
    print_mat(&tk, T, T, 1, get_mat, &mc, 1);
    {
        andrea_attn_check ck;
        andrea_attention_check(A, T, &ck);
        check(ck.max_row_error <= ck.tolerance && !ck.negative,
              "every row sums to 1 (max |sum - 1| = %.3g <= %.3g) and no entry is negative",
              ck.max_row_error, ck.tolerance);
        check(ck.upper_nonzero == 0, "every weight above the diagonal is exactly 0 (%d entries)",
              T * (T - 1) / 2);
        check(A[0] == 1.0f, "row 0 can only attend to itself: A[0][0] = %.9g", (double)A[0]);
        int ok = 1, mono = 1;
        double worst = 0;
        for (int i = 0; i < T; i++) {
            const float *s = masked + (size_t)i * T;
            double mx = -INFINITY, z = 0;
            for (int j = 0; j <= i; j++) mx = s[j] > mx ? s[j] : mx;
            for (int j = 0; j <= i; j++) z += exp(s[j] - mx);
            for (int j = 0; j <= i; j++) {
                double p = exp(s[j] - mx) / z, got = A[(size_t)i * T + j];
                /* float: exp of a rounded difference (|d| ulps), a sum of i+1 terms, a multiply */
                double tol = (T + 4 + fabs(s[j] - mx)) * EPS32 * p + 1e-30;
                if (!(fabs(got - p) <= tol)) ok = 0;
                if (fabs(got - p) > worst) worst = fabs(got - p);
                for (int k = 0; k <= i; k++)
                    if (s[k] > s[j] && A[(size_t)i * T + k] < got) mono = 0;
            }
        }
        check(ok, "A matches a double-precision softmax of the masked scores (max |diff| %.2g)",
              worst);
        check(mono, "a larger score never gets a smaller weight (softmax is monotone)");
    }

    /* 6. A V */
    printf("\n6. output_i = sum_j A[i][j] v_j: each position's new vector is a weighted average of "
           "the values,\n   (T, d_k) = (%d, %d)%s\n", T, HS, shown);
    {
        qkv_ctx vc = {qkv, C, HS, head, 2};
        int ok = 1;
        double worst = 0;
        for (int i = 0; i < T; i++)
            for (int d = 0; d < HS; d++) {
                double o = 0, mag = 0;
                for (int j = 0; j < T; j++) {
                    o += A[(size_t)i * T + j] * get_qkv(&vc, j, d);
                    mag += fabs(A[(size_t)i * T + j] * get_qkv(&vc, j, d));
                }
                tmp[(size_t)i * HS + d] = o;
                double got = mp.atty[((size_t)layer * T + i) * C + head * HS + d];
                double err = fabs(got - o);
                if (!(err <= (T + 1) * EPS32 * mag + 1e-30)) ok = 0;
                if (err > worst) worst = err;
            }
        dmat_ctx dc = {tmp, HS};
        print_mat(&tk, T, cols, 0, get_dmat, &dc, 0);
        check(ok, "the engine's head output equals A V recomputed in double (max |diff| %.2g)",
              worst);
    }

    /* 7. concatenate and W_O */
    printf("\n7. all %d heads run in parallel; their outputs are concatenated side by side, "
           "(T, %d x %d) = (T, %d),\n   and W_O (C, C) mixes them: out = concat W_O^T. This block "
           "output is added to the residual stream.\n", NH, NH, HS, C);
    {
        char name[64];
        snprintf(name, sizeof name, "h.%d.attn.wo", layer);
        const float *wo = NULL, *bo = NULL;
        const float *params = andrea_model_params(m);
        for (int t = 0; t < andrea_model_num_tensors(m); t++) {
            const andrea_tensor_info *ti = andrea_model_tensor(m, t);
            if (strcmp(ti->name, name) == 0) wo = params + ti->offset;
            snprintf(name, sizeof name, "h.%d.attn.bo", layer);
            if (strcmp(ti->name, name) == 0) bo = params + ti->offset;
            snprintf(name, sizeof name, "h.%d.attn.wo", layer);
        }
        const float *cat = mp.atty + (size_t)layer * T * C;
        const float *proj = mp.proj + (size_t)layer * T * C;
        int ok = wo != NULL;
        double worst = 0;
        for (int i = 0; ok && i < T; i++)
            for (int o = 0; o < C; o++) {
                double s = bo ? bo[o] : 0, mag = bo ? fabs(bo[o]) : 0;
                for (int k = 0; k < C; k++) {
                    s += (double)cat[(size_t)i * C + k] * wo[(size_t)o * C + k];
                    mag += fabs((double)cat[(size_t)i * C + k] * wo[(size_t)o * C + k]);
                }
                tmp[(size_t)i * C + o] = s;
                double err = fabs(proj[(size_t)i * C + o] - s);
                if (!(err <= (C + 1) * EPS32 * mag + 1e-30)) ok = 0;
                if (err > worst) worst = err;
            }
        printf("  concatenated heads%s:\n", C > SHOW_COLS ? " (first columns)" : "");
        dmat_ctx catd = {NULL, C};
        double *catbuf = malloc(sizeof(double) * (size_t)T * C);
        if (catbuf) {
            for (size_t k = 0; k < (size_t)T * C; k++) catbuf[k] = cat[k];
            catd.m = catbuf;
            print_mat(&tk, T, C < SHOW_COLS ? C : SHOW_COLS, 0, get_dmat, &catd, 0);
            free(catbuf);
        }
        printf("  after W_O%s:\n", C > SHOW_COLS ? " (first columns)" : "");
        dmat_ctx pd = {tmp, C};
        print_mat(&tk, T, C < SHOW_COLS ? C : SHOW_COLS, 0, get_dmat, &pd, 0);
        check(ok, "the engine's W_O projection equals concat W_O^T recomputed in double (max "
                  "|diff| %.2g)", worst);
    }

    /* the lesson's claims */
    claim_magnitude(&rng);
    claim_sharpness(&rng);
    {
        /* the same on this model: softmax of the unscaled scores vs the real one */
        double ent_raw = 0, ent_sc = 0;
        int rows = 0, ok = 1;
        double s1[EXPLAIN_MAX_T], s2[EXPLAIN_MAX_T];
        for (int l = 0; l < c->n_layer; l++)
            for (int h = 0; h < NH; h++) {
                const float *rw = andrea_attn_map(&mp, ANDREA_VIEW_RAW, l, h);
                const float *sc = andrea_attn_map(&mp, ANDREA_VIEW_MASKED, l, h);
                for (int i = 1; i < T; i++) {
                    for (int j = 0; j <= i; j++) {
                        s1[j] = rw[(size_t)i * T + j];
                        s2[j] = sc[(size_t)i * T + j];
                    }
                    double pm, e1, e2;
                    softmax_stats(s1, i + 1, &pm, &e1);
                    softmax_stats(s2, i + 1, &pm, &e2);
                    /* multiplying scores by sqrt(d_k) > 1 can only lower the entropy */
                    if (e1 > e2 + 1e-9) ok = 0;
                    ent_raw += e1;
                    ent_sc += e2;
                    rows++;
                }
            }
        if (rows) {
            printf("  on this model (every layer and head, rows 1..T-1): mean entropy %.4f with "
                   "the scale, %.4f without\n", ent_sc / rows, ent_raw / rows);
            check(ok, "on this model every row is at least as sharp without the scale");
        }
    }

    printf("\nclaim: every row of A, in every layer and head, is a probability distribution with "
           "nothing above the diagonal.\n");
    {
        int bad_rows = 0, bad_upper = 0;
        for (int l = 0; l < c->n_layer; l++)
            for (int h = 0; h < NH; h++) {
                andrea_attn_check ck;
                andrea_attention_check(andrea_attn_map(&mp, ANDREA_VIEW_SOFTMAX, l, h), T, &ck);
                if (!(ck.max_row_error <= ck.tolerance) || ck.negative) bad_rows++;
                if (ck.upper_nonzero) bad_upper++;
            }
        check(bad_rows == 0, "rows sum to 1 in all %d heads (%d heads fail)", c->n_layer * NH,
              bad_rows);
        check(bad_upper == 0, "zero weight above the diagonal in all %d heads (%d heads fail)",
              c->n_layer * NH, bad_upper);
        check(mp.prob_mismatches == 0 && mp.out_mismatches == 0,
              "these are the engine's numbers: re-running its kernel gives the same bits (%lld "
              "differ)", (long long)(mp.prob_mismatches + mp.out_mismatches));
    }

    if (T >= 2) {
        printf("\nclaim: the mask means the future cannot change the past: change the last "
               "token and every\nearlier row of every layer's attention stays the same, bit for "
               "bit.\n");
        tk2.T = T;
        tk2.ids = malloc(sizeof(int32_t) * (size_t)T);
        if (!tk2.ids) {
            fprintf(stderr, "andrea explain: out of memory\n");
            goto done;
        }
        memcpy(tk2.ids, tk.ids, sizeof(int32_t) * (size_t)T);
        int32_t last = tk.ids[T - 1];
        tk2.ids[T - 1] = last == 'X' ? 'Y' : 'X';
        if (tk2.ids[T - 1] >= c->vocab) tk2.ids[T - 1] = last == 0 ? 1 : 0;
        if (andrea_attention_inspect(m, tk2.ids, T, ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX), &mp2)) {
            fprintf(stderr, "andrea explain: %s\n", andrea_error());
            goto done;
        }
        long diff_past = 0, diff_last = 0;
        for (int l = 0; l < c->n_layer; l++)
            for (int h = 0; h < NH; h++) {
                const float *a1 = andrea_attn_map(&mp, ANDREA_VIEW_SOFTMAX, l, h);
                const float *a2 = andrea_attn_map(&mp2, ANDREA_VIEW_SOFTMAX, l, h);
                for (int i = 0; i < T; i++)
                    for (int j = 0; j < T; j++)
                        if (!same_bits(a1[(size_t)i * T + j], a2[(size_t)i * T + j]))
                            *(i < T - 1 ? &diff_past : &diff_last) += 1;
            }
        char lab[ATTN_LABEL_MAX];
        attn_label(tok, tk2.ids[T - 1], lab);
        printf("  last token %s -> %s: %ld weights changed in the last row, %ld in rows 0..%d\n",
               tk.labels[T - 1], lab, diff_last, diff_past, T - 2);
        check(diff_past == 0, "rows 0..T-2 are bit-identical after changing token T-1");
    }

    printf("\nexplain: %d checks, %d passed, %d failed\n", n_pass + n_fail, n_pass, n_fail);
    rc = n_fail ? 1 : 0;
done:
    free(tmp);
    free(tk2.ids);
    andrea_attn_maps_free(&mp);
    andrea_attn_maps_free(&mp2);
    attn_tokens_free(&tk);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    return rc;
}
