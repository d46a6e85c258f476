/*
 * cmd_attention.c - `andrea attention`: run a prompt through a checkpoint and
 * show, per layer and head, what attention did: the probabilities A (T x T)
 * and on request the raw, scaled and masked scores, as text, JSON, PNG
 * heatmaps and an offline HTML explorer, with per-head statistics and the
 * lesson's checks (rows sum to 1, exactly 0 above the diagonal, and the
 * exported numbers are bit-identical to the engine's). docs/attention.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_inspect.h"
#include "andrea_tokenizer.h"
#include "args.h"
#include "attn_files.h"
#include "attn_text.h"
#include "commands.h"
#include "backend_flags.h"
#include "model_open.h"
#include "threads.h"

enum { TEXT_MAX_T = 24, CELL_W = 8 };

static const char *lang; /* --lang: the report, the notices and the errors */
#define TR(key) andrea_lang_text(lang, key)

/* One view of one head as a labelled matrix; softmax rows end with their sum. */
static void print_matrix(const andrea_attn_tokens *tk, const float *M, int T, int view, int lw) {
    printf("%*s", lw, "");
    for (int j = 0; j < T; j++) attn_print_cell(stdout, tk->labels[j], CELL_W, 1);
    if (view == ANDREA_VIEW_SOFTMAX) printf("  | %s", TR("attn.row_sum"));
    printf("\n");
    double maxabs = 0;
    for (size_t k = 0; k < (size_t)T * T; k++)
        if (isfinite(M[k]) && fabs(M[k]) > maxabs) maxabs = fabs(M[k]);
    for (int i = 0; i < T; i++) {
        attn_print_cell(stdout, tk->labels[i], lw - 1, 0);
        printf(" ");
        double sum = 0;
        for (int j = 0; j < T; j++) {
            float x = M[(size_t)i * T + j];
            sum += x;
            if (view == ANDREA_VIEW_SOFTMAX && x == 0.0f) printf("%*s", CELL_W, "0");
            else if (view == ANDREA_VIEW_SOFTMAX) printf("%*.4f", CELL_W, (double)x);
            else attn_print_score(stdout, x, maxabs, CELL_W);
        }
        if (view == ANDREA_VIEW_SOFTMAX) printf("  | %.6f", sum);
        printf("\n");
    }
}

static const char *pass(int ok) { return TR(ok ? "explain.pass" : "explain.fail"); }

/* Parses --layer/--head: -1 = all, else one index in [0, n). Fills idx, returns the count. */
static int select_range(const char *what, int v, int n, int *idx) {
    if (v < -1 || v >= n) {
        fprintf(stderr, "andrea attention: ");
        fprintf(stderr, TR("err.range"), what, v, n, n - 1);
        fputc('\n', stderr);
        return -1;
    }
    if (v >= 0) {
        idx[0] = v;
        return 1;
    }
    for (int i = 0; i < n; i++) idx[i] = i;
    return n;
}

/* What the command line asked for, once parsed and checked. */
typedef struct {
    const char *model_path, *prompt, *png_dir, *html_path, *json_path;
    const char *backend; /* where the model runs (NULL: the default, cpu) */
    int layer, head, bos, matrices;
    int json_stdout; /* --json -: stdout carries the JSON, so the report goes elsewhere */
    float max_mb;
    unsigned views;
} attn_request;

/* One run: the model, the prompt's tokens, the maps it made, and the heads shown. */
typedef struct {
    andrea_model *m;
    const andrea_config *c;
    andrea_tokenizer *tok;
    andrea_attn_tokens tk;
    andrea_attn_maps maps;
    int *layers, *heads; /* the selected indices, n_layers and n_heads of them */
    int n_layers, n_heads;
} attn_run;

static void attn_run_free(attn_run *r) {
    free(r->layers);
    free(r->heads);
    andrea_attn_maps_free(&r->maps);
    andrea_attn_tokens_free(&r->tk);
    andrea_tokenizer_free(r->tok);
    andrea_model_free(r->m);
}

/* The checks that need no model, so that a wrong flag fails before a checkpoint is read. */
static int check_request(attn_request *q, const char *views_s) {
    if (andrea_lang_check(lang)) {
        fprintf(stderr, "andrea attention: --lang: %s\n", andrea_error());
        return 2;
    }
    if (!q->model_path || !q->prompt) {
        fprintf(stderr, "andrea attention: %s\n", TR("err.need"));
        return 2;
    }
    if (!(q->max_mb > 0)) {
        fprintf(stderr, "andrea attention: ");
        fprintf(stderr, TR("err.max_mb"), (double)q->max_mb);
        fputc('\n', stderr);
        return 2;
    }
    if (andrea_attn_views_parse(views_s, &q->views)) {
        fprintf(stderr, "andrea attention: --views: %s\n", andrea_error());
        return 2;
    }
#ifndef ANDREA_HAVE_PNG
    if (q->png_dir) {
        fprintf(stderr, "andrea attention: %s\n", TR("err.no_png"));
        return 2;
    }
#endif
    return 0;
}

/* Parses the flags into q. Returns -1 to go on, else the exit status (0 after --help). */
static int parse_request(int argc, char **argv, attn_request *q) {
    const char *views_s = "softmax";
    int threads = 0;
    *q = (attn_request){.layer = -1, .head = -1, .matrices = 1, .max_mb = 64};
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &q->model_path, "checkpoint to inspect", 0},
        {"prompt", 'p', ARG_STR, &q->prompt, "text to run through the model", 0},
        {"layer", 0, ARG_INT, &q->layer, "only this layer (default: all)", 0},
        {"head", 0, ARG_INT, &q->head, "only this head (default: all)", 0},
        {"views", 0, ARG_STR, &views_s,
         "comma list of raw, scaled, masked, softmax for text/JSON/PNG (softmax)", 0},
        {"png", 0, ARG_STR, &q->png_dir, "write PNG heatmaps into this folder", 0},
        {"html", 0, ARG_STR, &q->html_path, "write a self-contained HTML explorer (all views, head "
                                            "and cell views)", 0},
        {"json", 0, ARG_STR, &q->json_path, "write the numbers as JSON ('-' = stdout)", 0},
        {"bos", 0, ARG_FLAG, &q->bos, "put the BOS token before the prompt", 0},
        {"matrices", 0, ARG_INT, &q->matrices, "1 = print matrices as text (when T <= 24), 0 = only "
                                               "statistics and checks (1)", 0},
        {"max-mb", 0, ARG_FLOAT, &q->max_mb, "largest JSON/HTML file to write, MB; more heads are "
                                             "narrowed to one layer, then one head (64)", 0},
        {"lang", 0, ARG_STR, &lang, "language of the report, the page and the PNG labels: en (default) | id", 0},
        {"threads", 't', ARG_INT, &threads, "OpenMP threads, 0 = all cores (0)", 0},
        {"backend", 0, ARG_STR, &q->backend, "where the model runs: cpu, cuda, ... (cpu)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("attention", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("attention", "-m CKPT -p TEXT [--layer L] [--head H] [--views LIST] "
                                "[--png DIR] [--html FILE] [--json FILE]", specs, n_specs);
        return 0;
    }
    if (r || check_request(q, views_s) || backend_check("attention", q->backend)) return 2;
    cli_set_threads(threads);
    q->json_stdout = q->json_path && strcmp(q->json_path, "-") == 0;
    return -1;
}

/* Opens the checkpoint (any format, probed), checks --layer/--head against it and
 * tokenizes the prompt. Returns 0, or the exit status. */
static int open_run(const attn_request *q, attn_run *r) {
    r->m = cli_model_open(q->model_path, NULL, &r->tok);
    if (!r->m) {
        cli_model_error("attention", lang, q->model_path);
        return 1;
    }
    if (andrea_model_set_backend(r->m, q->backend)) {
        fprintf(stderr, "andrea attention: %s\n", andrea_error());
        return 1;
    }
    const andrea_config *c = r->c = andrea_model_config(r->m);
    r->layers = malloc(sizeof(int) * (size_t)c->n_layer);
    r->heads = malloc(sizeof(int) * (size_t)c->n_head);
    if (!r->layers || !r->heads) {
        fprintf(stderr, "andrea attention: %s\n", TR("err.memory"));
        return 1;
    }
    if (select_range("layer", q->layer, c->n_layer, r->layers) < 0 ||
        select_range("head", q->head, c->n_head, r->heads) < 0)
        return 2;
    return attn_prompt_tokens("attention", lang, r->tok, q->prompt, q->bos, c->ctx, &r->tk) ? 1 : 0;
}

/* The size guard, before any inspection (andrea-120m at T = 1024 would be gigabytes):
 * an export over --max-mb is narrowed to one layer, then one head, with a note, and
 * fails when even one head is over. Sets the heads shown; returns 0, or 2. */
static int apply_size_guard(const attn_request *q, attn_run *r) {
    andrea_attn_guard g = {0};
    g.layer = q->layer;
    g.head = q->head;
    g.views = q->json_path ? q->views : 0;
    g.html = q->html_path != NULL;
    g.limit = (int64_t)((double)q->max_mb * 1e6);
    g.lang = lang;
    if ((q->json_path || q->html_path) && andrea_attention_guard(r->c, r->tk.T, &g)) {
        fprintf(stderr, "andrea attention: %s (--max-mb)\n", andrea_error());
        return 2;
    }
    if (g.limited) {
        fprintf(stderr, "andrea attention: ");
        fprintf(stderr, TR("attn.note"), g.note);
        fputc('\n', stderr);
    }
    r->n_layers = select_range("layer", g.layer, r->c->n_layer, r->layers);
    r->n_heads = select_range("head", g.head, r->c->n_head, r->heads);
    return 0;
}

/* Widest token label plus a blank, within 2..12 columns: the matrices' first column. */
static int label_width(const andrea_attn_tokens *tk) {
    int lw = 2;
    for (int i = 0; i < tk->T; i++) {
        int w = attn_text_width(tk->labels[i]) + 1;
        if (w > lw) lw = w;
    }
    return lw > 12 ? 12 : lw;
}

/* Each asked view of layer l, head h; the softmax view ends with its own check line. */
static void print_head_views(const attn_run *r, unsigned views, int l, int h, int lw) {
    int T = r->tk.T;
    for (int v = 0; v < ANDREA_VIEW_COUNT; v++) {
        if (!(views & ANDREA_VIEW_BIT(v))) continue;
        const float *M = andrea_attn_map(&r->maps, v, l, h);
        char vk[32];
        snprintf(vk, sizeof vk, "view.%s", andrea_attn_view_name(v));
        printf(TR("attn.matrix"), l, h, TR(vk));
        print_matrix(&r->tk, M, T, v, lw);
        if (v != ANDREA_VIEW_SOFTMAX) continue;
        andrea_attn_check ck;
        andrea_attention_check(M, T, &ck);
        printf(TR("attn.check_rows"), ck.max_row_error, ck.tolerance,
               pass(ck.max_row_error <= ck.tolerance && !ck.negative), (long long)T * (T - 1) / 2,
               (long long)ck.upper_nonzero, pass(ck.upper_nonzero == 0));
    }
}

/* The matrices of the selected heads as text; a long prompt's would not fit a terminal. */
static void print_matrices(const attn_run *r, unsigned views) {
    if (r->tk.T > TEXT_MAX_T) {
        printf(TR("attn.too_long"), TEXT_MAX_T, r->tk.T);
        return;
    }
    int lw = label_width(&r->tk);
    for (int li = 0; li < r->n_layers; li++)
        for (int hi = 0; hi < r->n_heads; hi++) print_head_views(r, views, r->layers[li], r->heads[hi], lw);
}

/* A table row per selected head: entropy, distances, weights and the kind they suggest. */
static void print_stats(const attn_run *r) {
    int T = r->tk.T;
    andrea_attn_stats ref; /* any head's: the header quotes the uniform entropy at this T */
    andrea_attention_stats(andrea_attn_map(&r->maps, ANDREA_VIEW_SOFTMAX, 0, 0), T, &ref);
    printf(TR("attn.stats"), ref.entropy_uniform);
    printf("%s\n", TR("attn.stats_cols"));
    for (int li = 0; li < r->n_layers; li++)
        for (int hi = 0; hi < r->n_heads; hi++) {
            andrea_attn_stats st;
            andrea_attention_stats(andrea_attn_map(&r->maps, ANDREA_VIEW_SOFTMAX, r->layers[li], r->heads[hi]),
                                   T, &st);
            char kk[48];
            snprintf(kk, sizeof kk, "kind.%s", andrea_head_kind_name(andrea_attention_head_kind(&st, T)));
            printf("%5d %4d %9.4f %10.3f %12.4f %11.4f  %s\n", r->layers[li], r->heads[hi], st.entropy,
                   st.mean_distance, st.first_weight, st.prev_weight, TR(kk));
        }
}

/* The lesson's checks over every head, not only the selected ones, into out.
 * Returns 1 when all pass. */
static int check_all_heads(const attn_run *r, FILE *out) {
    const andrea_config *c = r->c;
    int T = r->tk.T, ok_all = 1;
    double worst_row = 0;
    long long upper_bad = 0;
    for (int l = 0; l < c->n_layer; l++)
        for (int h = 0; h < c->n_head; h++) {
            andrea_attn_check ck;
            andrea_attention_check(andrea_attn_map(&r->maps, ANDREA_VIEW_SOFTMAX, l, h), T, &ck);
            if (!ck.ok) ok_all = 0;
            if (!(ck.max_row_error <= worst_row)) worst_row = ck.max_row_error; /* NaN wins */
            upper_bad += ck.upper_nonzero + ck.negative;
        }
    const andrea_attn_maps *mp = &r->maps;
    int same = mp->prob_mismatches == 0 && mp->out_mismatches == 0 && mp->raw_mismatches == 0;
    fprintf(out, TR("attn.checks_all"), c->n_layer, c->n_head);
    fprintf(out, TR("attn.check_sum"), worst_row, (T + 2) * ldexp(1.0, -23), pass(worst_row <= (T + 2) * ldexp(1.0, -23)));
    fprintf(out, TR("attn.check_upper"), upper_bad, pass(upper_bad == 0));
    fprintf(out, TR("attn.check_engine"), (long long)mp->prob_mismatches, (long long)mp->out_mismatches,
            (long long)mp->raw_mismatches, pass(same));
    return ok_all && same;
}

/* The files asked for, each only while the ones before it were written. Returns 1 when all were. */
static int write_exports(const attn_request *q, attn_run *r) {
    andrea_attn_export x = {q->model_path, q->prompt, &r->tk, &r->maps, r->layers, r->heads,
                            r->n_layers, r->n_heads, lang};
    if (q->json_path && attn_write_json_file(q->json_path, &x, q->views)) return 0;
    if (q->html_path && attn_write_html_file(q->html_path, &x)) return 0;
    if (q->png_dir && attn_write_png_dir(q->png_dir, &x, q->views)) return 0;
    return 1;
}

/* Inspects the prompt and reports: the banner, the matrices, the statistics, the checks
 * and the files. Returns the exit status: 0, 1 (an error), 3 (a check failed). */
static int inspect_and_report(const attn_request *q, attn_run *r) {
    const andrea_config *c = r->c;
    /* the HTML page needs the raw scores and the probabilities (it derives the rest) */
    unsigned need = q->views | ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX) |
                    (q->html_path ? ANDREA_VIEW_BIT(ANDREA_VIEW_RAW) : 0);
    if (andrea_attention_inspect(r->m, r->tk.ids, r->tk.T, need, &r->maps)) {
        fprintf(stderr, "andrea attention: %s\n", andrea_error());
        return 1;
    }
    FILE *out = q->json_stdout ? stderr : stdout; /* keep stdout clean for JSON */
    fprintf(out, TR("attn.header"), q->model_path, c->n_layer, c->n_head, c->d_model, r->maps.head_size,
            c->ctx, andrea_tokenizer_kind_name(andrea_tokenizer_kind(r->tok)), r->tk.T, r->maps.head_size,
            (double)r->maps.scale);
    if (!q->json_stdout && q->matrices) print_matrices(r, q->views);
    if (!q->json_stdout) print_stats(r);
    int ok_all = check_all_heads(r, out);
    if (!write_exports(q, r)) return 1;
    if (ok_all) return 0;
    fprintf(stderr, "andrea attention: %s\n", TR("err.failed"));
    return 3;
}

int cmd_attention(int argc, char **argv) {
    attn_request q;
    int rc = parse_request(argc, argv, &q);
    if (rc >= 0) return rc;
    attn_run r = {0};
    rc = open_run(&q, &r);
    if (!rc) rc = apply_size_guard(&q, &r);
    if (!rc) rc = inspect_and_report(&q, &r);
    attn_run_free(&r);
    return rc;
}
