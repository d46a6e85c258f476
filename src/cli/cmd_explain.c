/*
 * cmd_explain.c - `andrea explain`: the attention lesson (shared/spec/seed-attention.md)
 * walked step by step on a tiny real example, with the numbers of an actual model
 * (a checkpoint, or a seeded toy model):
 *
 *   Q, K, V  ->  S = Q K^T  ->  S / sqrt(d_k)  ->  causal mask  ->  softmax rows
 *   ->  A V  ->  concatenate heads  ->  W_O
 *
 * The library (andrea_explain_run, src/inspect/explain.c) computes and checks every
 * step and claim; this file prints the walk-through and each check's PASS or FAIL,
 * and exits 1 if any failed. docs/attention.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_inspect.h"
#include "andrea_tokenizer.h"
#include "args.h"
#include "attn_text.h"
#include "commands.h"

enum { SHOW_COLS = 8, W = 8 };

/* The checks of one part of the walk-through, in the order the library made them. */
static void print_checks(const andrea_explain *e, int part) {
    for (int k = 0; k < e->n_checks; k++)
        if (e->checks[k].part == part)
            printf("  check: %s: %s\n", e->checks[k].what, e->checks[k].ok ? "PASS" : "FAIL");
}

/* A (rows x cols) matrix with token labels on the rows; get(i, j) gives element (i, j). */
typedef double (*getter)(const void *ctx, int i, int j);

static void print_mat(const andrea_attn_tokens *tk, int rows, int cols, int col_is_token,
                      getter get, const void *ctx, int row_sums) {
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
    int cols;
} fmat_ctx;
static double get_fmat(const void *p, int i, int j) {
    const fmat_ctx *c = p;
    return c->m[(size_t)i * c->cols + j];
}
typedef struct {
    const double *m;
    int cols;
} dmat_ctx;
static double get_dmat(const void *p, int i, int j) {
    const dmat_ctx *c = p;
    return c->m[(size_t)i * c->cols + j];
}

/* ---- the walk-through ------------------------------------------------------------------ */

static void print_steps(const andrea_explain *e, const andrea_attn_tokens *tk) {
    int T = e->T, C = e->C, HS = e->HS, NH = e->NH, layer = e->layer, head = e->head;
    const andrea_attn_maps *mp = &e->maps;
    const float *qkv = mp->qkv + (size_t)layer * T * 3 * C;
    int cols = HS < SHOW_COLS ? HS : SHOW_COLS;
    char shown[64] = "";
    if (cols < HS) snprintf(shown, sizeof shown, " (columns 0..%d of %d shown)", cols - 1, HS);

    printf("\n1. Q = x W_Q, K = x W_K, V = x W_V: the normalised input x (T, C) times learned "
           "matrices;\n   head %d owns columns %d..%d of each, so Q, K, V are (T, d_k) = (%d, %d)%s\n",
           head, head * HS, head * HS + HS - 1, T, HS, shown);
    const char *names[3] = {"Q", "K", "V"};
    for (int part = 0; part < 3; part++) {
        qkv_ctx qc = {qkv, C, HS, head, part};
        printf("  %s:\n", names[part]);
        print_mat(tk, T, cols, 0, get_qkv, &qc, 0);
    }

    fmat_ctx mc = {andrea_attn_map(mp, ANDREA_VIEW_RAW, layer, head), T};
    printf("\n2. scores S = Q K^T, (T, T) = (%d, %d): S[i][j] = q_i . k_j, how well query i matches "
           "key j\n", T, T);
    print_mat(tk, T, T, 1, get_fmat, &mc, 0);
    print_checks(e, ANDREA_EXPLAIN_SCORES);

    printf("\n3. divide by sqrt(d_k) = sqrt(%d) = %.4f; the engine multiplies by the constant "
           "1/sqrtf(%d) = %.9g\n   (one multiply per score)\n", HS, sqrt((double)HS), HS,
           (double)mp->scale);
    mc.m = andrea_attn_map(mp, ANDREA_VIEW_SCALED, layer, head);
    print_mat(tk, T, T, 1, get_fmat, &mc, 0);
    print_checks(e, ANDREA_EXPLAIN_SCALE);

    printf("\n4. causal mask: position i may not look at a later position j > i, so those scores "
           "become -inf\n   (the model generates left to right; at inference the future does not "
           "exist yet)\n");
    mc.m = andrea_attn_map(mp, ANDREA_VIEW_MASKED, layer, head);
    print_mat(tk, T, T, 1, get_fmat, &mc, 0);
    print_checks(e, ANDREA_EXPLAIN_MASK);

    printf("\n5. softmax over each row: A[i][j] = exp(s_ij - max_i) / sum_k exp(s_ik - max_i); "
           "exp(-inf) = 0\n");
    mc.m = andrea_attn_map(mp, ANDREA_VIEW_SOFTMAX, layer, head);
    print_mat(tk, T, T, 1, get_fmat, &mc, 1);
    print_checks(e, ANDREA_EXPLAIN_SOFTMAX);

    printf("\n6. output_i = sum_j A[i][j] v_j: each position's new vector is a weighted average of "
           "the values,\n   (T, d_k) = (%d, %d)%s\n", T, HS, shown);
    dmat_ctx av = {e->av, HS};
    print_mat(tk, T, cols, 0, get_dmat, &av, 0);
    print_checks(e, ANDREA_EXPLAIN_AV);

    printf("\n7. all %d heads run in parallel; their outputs are concatenated side by side, "
           "(T, %d x %d) = (T, %d),\n   and W_O (C, C) mixes them: out = concat W_O^T. This block "
           "output is added to the residual stream.\n", NH, NH, HS, C);
    printf("  concatenated heads%s:\n", C > SHOW_COLS ? " (first columns)" : "");
    fmat_ctx cat = {mp->atty + (size_t)layer * T * C, C};
    print_mat(tk, T, C < SHOW_COLS ? C : SHOW_COLS, 0, get_fmat, &cat, 0);
    printf("  after W_O%s:\n", C > SHOW_COLS ? " (first columns)" : "");
    dmat_ctx wo = {e->wo, C};
    print_mat(tk, T, C < SHOW_COLS ? C : SHOW_COLS, 0, get_dmat, &wo, 0);
    print_checks(e, ANDREA_EXPLAIN_WO);
}

static void print_claims(const andrea_explain *e, const andrea_attn_tokens *tk,
                         const andrea_tokenizer *tok) {
    printf("\nclaim: the dot product of two random unit-variance vectors of dimension d_k has a\n"
           "typical size (std) of sqrt(d_k); dividing by sqrt(d_k) brings it back to 1.\n"
           "  measured over %d random pairs each:\n", e->magnitude_pairs);
    printf("  %6s %14s %10s %8s %16s\n", "d_k", "std(q.k)", "sqrt(d_k)", "ratio", "std after scale");
    for (int t = 0; t < 3; t++) {
        double sd = e->magnitude_std[t], want = sqrt((double)e->magnitude_dk[t]);
        printf("  %6d %14.3f %10.3f %8.3f %16.3f\n", e->magnitude_dk[t], sd, want, sd / want,
               sd / want);
    }
    print_checks(e, ANDREA_EXPLAIN_MAGNITUDE);

    printf("\nclaim: without the scale, softmax is much sharper (one key takes almost everything,\n"
           "so the gradients of the others vanish).\n"
           "  %d rows of %d random keys, d_k = %d (uniform would be max p %.4f, entropy %.4f):\n",
           e->sharp_rows, e->sharp_keys, e->sharp_dk, 1.0 / e->sharp_keys,
           log((double)e->sharp_keys));
    printf("  %-22s %12s %14s\n", "", "mean max p", "mean entropy");
    printf("  %-22s %12.4f %14.4f\n", "softmax(QK^T)", e->unscaled_max, e->unscaled_entropy);
    printf("  %-22s %12.4f %14.4f\n", "softmax(QK^T/sqrt(dk))", e->scaled_max, e->scaled_entropy);
    print_checks(e, ANDREA_EXPLAIN_SHARPNESS);
    if (e->model_rows)
        printf("  on this model (every layer and head, rows 1..T-1): mean entropy %.4f with "
               "the scale, %.4f without\n", e->model_entropy_scaled, e->model_entropy_unscaled);
    print_checks(e, ANDREA_EXPLAIN_SHARP_MODEL);

    printf("\nclaim: every row of A, in every layer and head, is a probability distribution with "
           "nothing above the diagonal.\n");
    print_checks(e, ANDREA_EXPLAIN_DISTRIBUTION);

    int T = e->T;
    if (T >= 2) {
        printf("\nclaim: the mask means the future cannot change the past: change the last "
               "token and every\nearlier row of every layer's attention stays the same, bit for "
               "bit.\n");
        char lab[ANDREA_LABEL_MAX];
        andrea_token_label(tok, e->changed_id, lab);
        printf("  last token %s -> %s: %ld weights changed in the last row, %ld in rows 0..%d\n",
               tk->labels[T - 1], lab, e->changed_last, e->changed_past, T - 2);
        print_checks(e, ANDREA_EXPLAIN_CAUSAL);
    }
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
    andrea_attn_tokens tk = {0};
    andrea_explain e = {0};
    int rc = 1;
    if (layer < 0 || layer >= c->n_layer || head < 0 || head >= NH) {
        fprintf(stderr, "andrea explain: --layer %d --head %d is outside the model (layers 0..%d, "
                        "heads 0..%d)\n", layer, head, c->n_layer - 1, NH - 1);
        rc = 2;
        goto done;
    }
    int max_T = c->ctx < ANDREA_EXPLAIN_MAX_T ? c->ctx : ANDREA_EXPLAIN_MAX_T;
    if (!*prompt) {
        fprintf(stderr, "andrea explain: the prompt is empty; give some text with -p\n");
        goto done;
    }
    if (andrea_attn_tokens_encode(tok, prompt, 0, max_T, &tk) ||
        andrea_explain_run(m, tk.ids, tk.T, layer, head, seed, &e)) {
        fprintf(stderr, "andrea explain: %s\n", andrea_error());
        goto done;
    }

    if (model_path)
        printf("model: '%s' (L=%d NH=%d C=%d d_k=%d)\n", model_path, c->n_layer, NH, C, HS);
    else
        printf("model: a toy model with random weights (seed %llu; L=%d NH=%d C=%d d_k=%d); "
               "use -m CKPT for a trained one\n", (unsigned long long)seed, c->n_layer, NH, C, HS);
    printf("prompt: \"%s\" -> T = %d tokens:", prompt, tk.T);
    for (int i = 0; i < tk.T; i++) printf(" %s", tk.labels[i]);
    printf("\nwalking layer %d, head %d; numbers are the model's own (float32), our checks "
           "recompute them in double\n", layer, head);
    print_steps(&e, &tk);
    print_claims(&e, &tk, tok);
    printf("\nexplain: %d checks, %d passed, %d failed\n", e.n_checks, e.n_checks - e.n_failed,
           e.n_failed);
    rc = e.n_failed ? 1 : 0;
done:
    andrea_explain_free(&e);
    andrea_attn_tokens_free(&tk);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    return rc;
}
