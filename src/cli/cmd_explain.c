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
#include "backend_flags.h"
#include "model_open.h"

enum { SHOW_COLS = 8, W = 8 };

static const char *lang; /* --lang: the texts of the walk-through */
#define TR(key) andrea_lang_text(lang, key)

/* The checks of one part of the walk-through, in the order the library made them. */
static void print_checks(const andrea_explain *e, int part) {
    for (int k = 0; k < e->n_checks; k++)
        if (e->checks[k].part == part)
            printf(TR("explain.check"), e->checks[k].what,
                   TR(e->checks[k].ok ? "explain.pass" : "explain.fail"));
}

/* A note on one of the lesson's own slips (the page shows the same notes), wrapped at 96
 * columns under "  note on the lesson: ". */
static void print_note(const char *key) {
    const char *s = TR(key);
    int col = printf("  %s:", TR("page.notes_lead"));
    while (*s) {
        size_t word = strcspn(s, " ");
        if (col + 1 + (int)word > 96) {
            printf("\n   ");
            col = 3;
        }
        col += printf(" %.*s", (int)word, s);
        s += word;
        s += strspn(s, " ");
    }
    printf("\n");
}

/* A (rows x cols) matrix with token labels on the rows; get(i, j) gives element (i, j). */
typedef double (*getter)(const void *ctx, int i, int j);

/* col0: the number of the first column shown (its header "d<col0>"). */
static void print_mat(const andrea_attn_tokens *tk, int rows, int cols, int col_is_token, int col0,
                      getter get, const void *ctx, int row_sums) {
    printf("  %6s", "");
    for (int j = 0; j < cols; j++) {
        if (col_is_token) {
            attn_print_cell(stdout, tk->labels[j], W, 1);
        } else {
            char b[16];
            snprintf(b, sizeof b, "d%d", col0 + j);
            attn_print_cell(stdout, b, W, 1);
        }
    }
    if (row_sums) printf("  | %s", TR("explain.row_sum"));
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
    int cols, col0; /* row length; the first column shown */
} fmat_ctx;
static double get_fmat(const void *p, int i, int j) {
    const fmat_ctx *c = p;
    return c->m[(size_t)i * c->cols + c->col0 + j];
}
typedef struct {
    const double *m;
    int cols, col0;
} dmat_ctx;
static double get_dmat(const void *p, int i, int j) {
    const dmat_ctx *c = p;
    return c->m[(size_t)i * c->cols + c->col0 + j];
}

/* "all n heads" in lang: a word of explain.all_words where the language has one for n
 * (Indonesian "keempat head"), else explain.all_heads with the number. */
static const char *all_heads(char *buf, size_t size, int n) {
    const char *w = TR("explain.all_words");
    for (int k = 2; *w && k < n; k++) {
        w = strchr(w, '|');
        w = w ? w + 1 : "";
    }
    if (n >= 2 && *w) {
        size_t len = strcspn(w, "|");
        snprintf(buf, size, "%.*s", (int)len, w);
    } else {
        snprintf(buf, size, TR("explain.all_heads"), n);
    }
    return buf;
}

/* ---- the walk-through ------------------------------------------------------------------ */

static void print_steps(const andrea_explain *e, const andrea_attn_tokens *tk) {
    int T = e->T, C = e->C, HS = e->HS, NH = e->NH, layer = e->layer, head = e->head;
    const andrea_attn_maps *mp = &e->maps;
    const float *qkv = mp->qkv + (size_t)layer * T * 3 * C;
    int cols = HS < SHOW_COLS ? HS : SHOW_COLS;
    char shown[96] = "";
    if (cols < HS) snprintf(shown, sizeof shown, TR("explain.cols_shown"), 0, cols - 1, HS);

    printf(TR("explain.step1"), head, head * HS, head * HS + HS - 1, T, HS, shown);
    const char *names[3] = {"Q", "K", "V"};
    for (int part = 0; part < 3; part++) {
        qkv_ctx qc = {qkv, C, HS, head, part};
        printf("  %s:\n", names[part]);
        print_mat(tk, T, cols, 0, 0, get_qkv, &qc, 0);
    }

    fmat_ctx mc = {andrea_attn_map(mp, ANDREA_VIEW_RAW, layer, head), T, 0};
    printf(TR("explain.step2"), T, T);
    print_mat(tk, T, T, 1, 0, get_fmat, &mc, 0);
    print_checks(e, ANDREA_EXPLAIN_SCORES);

    printf(TR("explain.step3"), HS, sqrt((double)HS), HS, (double)mp->scale);
    mc.m = andrea_attn_map(mp, ANDREA_VIEW_SCALED, layer, head);
    print_mat(tk, T, T, 1, 0, get_fmat, &mc, 0);
    print_checks(e, ANDREA_EXPLAIN_SCALE);

    fputs(TR("explain.step4"), stdout);
    mc.m = andrea_attn_map(mp, ANDREA_VIEW_MASKED, layer, head);
    print_mat(tk, T, T, 1, 0, get_fmat, &mc, 0);
    print_checks(e, ANDREA_EXPLAIN_MASK);

    fputs(TR("explain.step5"), stdout);
    mc.m = andrea_attn_map(mp, ANDREA_VIEW_SOFTMAX, layer, head);
    print_mat(tk, T, T, 1, 0, get_fmat, &mc, 1);
    print_checks(e, ANDREA_EXPLAIN_SOFTMAX);

    printf(TR("explain.step6"), T, HS, shown);
    dmat_ctx av = {e->av, HS, 0};
    print_mat(tk, T, cols, 0, 0, get_dmat, &av, 0);
    print_checks(e, ANDREA_EXPLAIN_AV);

    /* the walked head's own columns of the concatenation: they equal step 6 */
    char all[64];
    printf(TR("explain.step7"), all_heads(all, sizeof all, NH), NH, HS, C);
    int c0 = head * HS;
    printf(TR("explain.concat"), c0, c0 + cols - 1, head, TR("explain.concat_same"));
    fmat_ctx cat = {mp->atty + (size_t)layer * T * C, C, c0};
    print_mat(tk, T, cols, 0, c0, get_fmat, &cat, 0);
    printf(TR("explain.after_wo"), c0, c0 + cols - 1);
    dmat_ctx wo = {e->wo, C, c0};
    print_mat(tk, T, cols, 0, c0, get_dmat, &wo, 0);
    print_checks(e, ANDREA_EXPLAIN_WO);
}

static void print_claims(const andrea_explain *e, const andrea_attn_tokens *tk,
                         const andrea_tokenizer *tok) {
    printf(TR("explain.claim_magnitude"), e->magnitude_pairs);
    printf(TR("explain.magnitude_head"), "d_k", TR("explain.col_std"), "sqrt(d_k)",
           TR("explain.col_ratio"), TR("explain.col_after"));
    for (int t = 0; t < 3; t++) {
        double sd = e->magnitude_std[t], want = sqrt((double)e->magnitude_dk[t]);
        printf("  %6d %14.3f %10.3f %8.3f %16.3f\n", e->magnitude_dk[t], sd, want, sd / want,
               sd / want);
    }
    print_checks(e, ANDREA_EXPLAIN_MAGNITUDE);
    print_note("page.note_unit");

    printf(TR("explain.claim_sharp"), e->sharp_rows, e->sharp_keys, e->sharp_dk,
           1.0 / e->sharp_keys, log((double)e->sharp_keys));
    printf("  %-22s %18s %18s\n", "", TR("explain.col_maxp"), TR("explain.col_entropy"));
    printf("  %-22s %18.4f %18.4f\n", "softmax(QK^T)", e->unscaled_max, e->unscaled_entropy);
    printf("  %-22s %18.4f %18.4f\n", "softmax(QK^T/sqrt(dk))", e->scaled_max, e->scaled_entropy);
    print_checks(e, ANDREA_EXPLAIN_SHARPNESS);
    if (e->model_rows)
        printf(TR("explain.sharp_model"), e->model_entropy_scaled, e->model_entropy_unscaled);
    print_checks(e, ANDREA_EXPLAIN_SHARP_MODEL);

    fputs(TR("explain.claim_grad"), stdout);
    printf(TR("explain.grad_random"), 500, e->grad_scaled, e->grad_unscaled,
           e->grad_unscaled > 0 ? e->grad_scaled / e->grad_unscaled : 0.0);
    if (e->T >= 2)
        printf(TR("explain.grad_model"), e->layer, e->head, e->grad_model_scaled,
               e->grad_model_unscaled, e->HS, sqrt((double)e->HS));
    print_checks(e, ANDREA_EXPLAIN_GRADIENT);

    fputs(TR("explain.claim_dist"), stdout);
    print_checks(e, ANDREA_EXPLAIN_DISTRIBUTION);
    print_note("page.note_strict");

    int T = e->T;
    if (T >= 2) {
        fputs(TR("explain.claim_causal"), stdout);
        char lab[ANDREA_LABEL_MAX];
        andrea_token_label(tok, e->changed_id, lab);
        printf(TR("explain.causal_result"), tk->labels[T - 1], lab, e->changed_last,
               e->changed_past, T - 2);
        print_checks(e, ANDREA_EXPLAIN_CAUSAL);
    }

    fputs(TR("explain.claim_mask_value"), stdout);
    print_checks(e, ANDREA_EXPLAIN_MASK_VALUE);
    print_note("page.note_mask");

    char n1[32], n2[32], n3[32];
    printf(TR("explain.claim_count"), T, T, andrea_lang_group(lang, e->scores_prompt, n1, sizeof n1),
           e->ctx, e->ctx, andrea_lang_group(lang, e->scores_ctx, n2, sizeof n2),
           andrea_lang_group(lang, 1024LL * 1024, n3, sizeof n3));
    print_checks(e, ANDREA_EXPLAIN_COUNT);

    if (e->shortcut_run) {
        printf(TR("explain.claim_shortcut"), e->shortcut_T, e->shortcut_vocab, e->shortcut_vocab,
               log((double)e->shortcut_vocab), e->shortcut_steps);
        printf(TR("explain.shortcut_head"), "", TR("explain.col_train"), TR("explain.col_gen"));
        printf("  %-18s %16.4f %18.4f\n", TR("explain.no_mask"), e->shortcut_train,
               e->shortcut_gen);
        printf("  %-18s %16.4f %18.4f\n", TR("explain.with_mask"), e->causal_train, e->causal_gen);
        print_checks(e, ANDREA_EXPLAIN_SHORTCUT);
    }

    fputs(TR("explain.claim_kinds"), stdout);
    for (int l = 0; l < e->maps.n_layer; l++)
        for (int h = 0; h < e->NH; h++) {
            andrea_attn_stats st;
            andrea_attention_stats(andrea_attn_map(&e->maps, ANDREA_VIEW_SOFTMAX, l, h), T, &st);
            char key[48];
            int kind = e->head_kind[l * e->NH + h];
            snprintf(key, sizeof key, "kind.%s", andrea_head_kind_name(kind));
            printf(TR("explain.kind_row"), l, h, TR(key), st.prev_weight, st.first_weight,
                   st.self_weight, st.entropy, st.entropy_uniform);
        }
    print_checks(e, ANDREA_EXPLAIN_HEAD_KINDS);

    char all[64], nsc[32];
    int CT = e->ctx_T;
    printf(TR("explain.claim_context"), CT, CT, e->HS, CT, CT,
           andrea_lang_group(lang, e->ctx_scores, nsc, sizeof nsc), CT, e->HS,
           all_heads(all, sizeof all, e->NH), CT, e->C);
    print_checks(e, ANDREA_EXPLAIN_CONTEXT);
    print_note("page.note_dmodel");
}

/* ---- the command ---------------------------------------------------------------------- */

int cmd_explain(int argc, char **argv) {
    /* --experiment NAME: a run of its own (attn_scale_exp.c), with its own flags */
    for (int k = 1; k < argc; k++)
        if (strcmp(argv[k], "--experiment") == 0 || strncmp(argv[k], "--experiment=", 13) == 0) {
            int eq = argv[k][12] == '=';
            const char *name = eq ? argv[k] + 13 : k + 1 < argc ? argv[k + 1] : "";
            int drop = eq ? 1 : k + 1 < argc ? 2 : 1;
            for (int j = k; j + drop < argc; j++) argv[j] = argv[j + drop];
            return cmd_explain_experiment(argc - drop, argv, name);
        }
    const char *model_path = NULL, *preset = NULL, *prompt = "To be or", *backend = NULL;
    int layer = 0, head = 0;
    uint64_t seed = 1337;
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &model_path, "checkpoint (default: a seeded toy model)", 0},
        {"preset", 0, ARG_STR, &preset, "a preset's shapes with random weights (andrea-120m: the "
                                        "lesson's model; not trained)", 0},
        {"prompt", 'p', ARG_STR, &prompt, "text of at most 8 tokens (\"To be or\")", 0},
        {"layer", 0, ARG_INT, &layer, "layer to walk through (0)", 0},
        {"head", 0, ARG_INT, &head, "head to walk through (0)", 0},
        {"seed", 0, ARG_U64, &seed, "seed of the toy model and of the random claims (1337)", 0},
        {"lang", 0, ARG_STR, &lang, "language of the walk-through: en (default) | id", 0},
        {"backend", 0, ARG_STR, &backend, "where the model runs: cpu, cuda, ... (cpu)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("explain", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("explain", "[-m CKPT | --preset NAME] [-p TEXT] [--layer L] [--head H]   |   "
                   "andrea explain --experiment scale --data FILE (its flags: --experiment scale "
                   "--help)", specs, n_specs);
        return 0;
    }
    if (r || backend_check("explain", backend)) return 2;
    if (andrea_lang_check(lang)) {
        fprintf(stderr, "andrea explain: --lang: %s\n", andrea_error());
        return 2;
    }

    andrea_model *m = NULL;
    andrea_tokenizer *tok = NULL;
    if (model_path && preset) {
        fprintf(stderr, "andrea explain: %s\n", TR("err.model_preset"));
        return 2;
    }
    andrea_config cfg;
    if (model_path) {
        m = cli_model_open(model_path, NULL, &tok); /* any format, probed */
    } else if (preset) {
        /* the preset's shapes and init; byte ids fit every preset's vocabulary */
        m = andrea_config_preset(preset, &cfg) ? NULL : andrea_model_create(&cfg, seed);
        tok = m ? andrea_tokenizer_byte() : NULL;
    } else {
        /* toy: 2 layers, 2 heads of d_k = 8, weights large enough for visible attention */
        andrea_config_preset("tiny", &cfg);
        cfg.n_head = 2;
        cfg.d_model = 16;
        cfg.ctx = 16;
        cfg.init_std = 0.35f;
        m = andrea_model_create(&cfg, seed);
        tok = m ? andrea_tokenizer_byte() : NULL;
    }
    if (!m && model_path) {
        cli_model_error("explain", lang, model_path);
        return 1;
    }
    if (!m || !tok || andrea_model_set_backend(m, backend)) {
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
        fprintf(stderr, "andrea explain: ");
        fprintf(stderr, TR("err.layer_head"), layer, head, c->n_layer - 1, NH - 1);
        fputc('\n', stderr);
        rc = 2;
        goto done;
    }
    andrea_explain_options opts = {layer, head, seed, lang, 0};
    int max_T = c->ctx < ANDREA_EXPLAIN_MAX_T ? c->ctx : ANDREA_EXPLAIN_MAX_T;
    if (attn_prompt_tokens("explain", lang, tok, prompt, 0, max_T, &tk)) goto done;
    if (andrea_explain_run_opts(m, tk.ids, tk.T, &opts, &e)) {
        fprintf(stderr, "andrea explain: %s\n", andrea_error());
        goto done;
    }

    if (model_path)
        printf(TR("explain.model_ckpt"), model_path, c->n_layer, NH, C, HS);
    else if (preset)
        printf(TR("explain.model_preset"), preset, (unsigned long long)seed, c->n_layer, NH, C, HS,
               c->ctx);
    else
        printf(TR("explain.model_toy"), (unsigned long long)seed, c->n_layer, NH, C, HS);
    printf(TR("explain.prompt"), prompt, tk.T);
    for (int i = 0; i < tk.T; i++) printf(" %s", tk.labels[i]);
    printf("\n");
    printf(TR("explain.walking"), layer, head);
    print_steps(&e, &tk);
    print_claims(&e, &tk, tok);
    printf(TR("explain.summary"), e.n_checks, e.n_checks - e.n_failed, e.n_failed);
    rc = e.n_failed ? 1 : 0;
done:
    andrea_explain_free(&e);
    andrea_attn_tokens_free(&tk);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    return rc;
}
