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

int cmd_attention(int argc, char **argv) {
    const char *model_path = NULL, *prompt = NULL, *views_s = "softmax", *png_dir = NULL,
               *html_path = NULL, *json_path = NULL;
    int layer = -1, head = -1, bos = 0, threads = 0, matrices = 1;
    float max_mb = 64;
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &model_path, "checkpoint to inspect", 0},
        {"prompt", 'p', ARG_STR, &prompt, "text to run through the model", 0},
        {"layer", 0, ARG_INT, &layer, "only this layer (default: all)", 0},
        {"head", 0, ARG_INT, &head, "only this head (default: all)", 0},
        {"views", 0, ARG_STR, &views_s,
         "comma list of raw, scaled, masked, softmax for text/JSON/PNG (softmax)", 0},
        {"png", 0, ARG_STR, &png_dir, "write PNG heatmaps into this folder", 0},
        {"html", 0, ARG_STR, &html_path, "write a self-contained HTML explorer (all views, head "
                                         "and cell views)", 0},
        {"json", 0, ARG_STR, &json_path, "write the numbers as JSON ('-' = stdout)", 0},
        {"bos", 0, ARG_FLAG, &bos, "put the BOS token before the prompt", 0},
        {"matrices", 0, ARG_INT, &matrices, "1 = print matrices as text (when T <= 24), 0 = only "
                                            "statistics and checks (1)", 0},
        {"max-mb", 0, ARG_FLOAT, &max_mb, "largest JSON/HTML file to write, MB; more heads are "
                                          "narrowed to one layer, then one head (64)", 0},
        {"lang", 0, ARG_STR, &lang, "language of the report, the page and the PNG labels: en (default) | id", 0},
        {"threads", 't', ARG_INT, &threads, "OpenMP threads, 0 = all cores (0)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("attention", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("attention", "-m CKPT -p TEXT [--layer L] [--head H] [--views LIST] "
                                "[--png DIR] [--html FILE] [--json FILE]", specs, n_specs);
        return 0;
    }
    if (r) return 2;
    if (andrea_lang_check(lang)) {
        fprintf(stderr, "andrea attention: --lang: %s\n", andrea_error());
        return 2;
    }
    if (!model_path || !prompt) {
        fprintf(stderr, "andrea attention: %s\n", TR("err.need"));
        return 2;
    }
    if (!(max_mb > 0)) {
        fprintf(stderr, "andrea attention: ");
        fprintf(stderr, TR("err.max_mb"), (double)max_mb);
        fputc('\n', stderr);
        return 2;
    }
    unsigned views = 0;
    if (andrea_attn_views_parse(views_s, &views)) {
        fprintf(stderr, "andrea attention: --views: %s\n", andrea_error());
        return 2;
    }
#ifndef ANDREA_HAVE_PNG
    if (png_dir) {
        fprintf(stderr, "andrea attention: %s\n", TR("err.no_png"));
        return 2;
    }
#endif
    cli_set_threads(threads);
    int json_stdout = json_path && strcmp(json_path, "-") == 0;

    andrea_tokenizer *tok = NULL;
    andrea_model *m = cli_model_open(model_path, NULL, &tok); /* any format, probed */
    if (!m) {
        cli_model_error("attention", lang, model_path);
        return 1;
    }
    const andrea_config *c = andrea_model_config(m);
    int rc = 1;
    andrea_attn_tokens tk = {0};
    andrea_attn_maps maps = {0};
    int *layers = malloc(sizeof(int) * (size_t)c->n_layer);
    int *heads = malloc(sizeof(int) * (size_t)c->n_head);
    if (!layers || !heads) {
        fprintf(stderr, "andrea attention: %s\n", TR("err.memory"));
        goto done;
    }
    if (select_range("layer", layer, c->n_layer, layers) < 0 ||
        select_range("head", head, c->n_head, heads) < 0) {
        rc = 2;
        goto done;
    }
    if (attn_prompt_tokens("attention", lang, tok, prompt, bos, c->ctx, &tk)) goto done;
    int T = tk.T;
    /* the size guard, before any inspection: andrea-120m at T = 1024 would be gigabytes */
    andrea_attn_guard g = {0};
    g.layer = layer;
    g.head = head;
    g.views = json_path ? views : 0;
    g.html = html_path != NULL;
    g.limit = (int64_t)((double)max_mb * 1e6);
    g.lang = lang;
    if ((json_path || html_path) && andrea_attention_guard(c, T, &g)) {
        fprintf(stderr, "andrea attention: %s (--max-mb)\n", andrea_error());
        rc = 2;
        goto done;
    }
    if (g.limited) {
        fprintf(stderr, "andrea attention: ");
        fprintf(stderr, TR("attn.note"), g.note);
        fputc('\n', stderr);
    }
    int n_layers = select_range("layer", g.layer, c->n_layer, layers);
    int n_heads = select_range("head", g.head, c->n_head, heads);
    /* the HTML page needs the raw scores and the probabilities (it derives the rest) */
    unsigned need = views | ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX) |
                    (html_path ? ANDREA_VIEW_BIT(ANDREA_VIEW_RAW) : 0);
    if (andrea_attention_inspect(m, tk.ids, T, need, &maps)) {
        fprintf(stderr, "andrea attention: %s\n", andrea_error());
        goto done;
    }
    FILE *out = json_stdout ? stderr : stdout; /* keep stdout clean for JSON */
    fprintf(out, TR("attn.header"), model_path, c->n_layer, c->n_head, c->d_model, maps.head_size, c->ctx,
            andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)), T, maps.head_size,
            (double)maps.scale);

    /* matrices, for the selected heads and views */
    if (!json_stdout && matrices) {
        if (T > TEXT_MAX_T) {
            printf(TR("attn.too_long"), TEXT_MAX_T, T);
        } else {
            int lw = 2;
            for (int i = 0; i < T; i++) {
                int w = attn_text_width(tk.labels[i]) + 1;
                if (w > lw) lw = w;
            }
            if (lw > 12) lw = 12;
            for (int li = 0; li < n_layers; li++)
                for (int hi = 0; hi < n_heads; hi++)
                    for (int v = 0; v < ANDREA_VIEW_COUNT; v++) {
                        if (!(views & ANDREA_VIEW_BIT(v))) continue;
                        int l = layers[li], h = heads[hi];
                        const float *M = andrea_attn_map(&maps, v, l, h);
                        char vk[32];
                        snprintf(vk, sizeof vk, "view.%s", andrea_attn_view_name(v));
                        printf(TR("attn.matrix"), l, h, TR(vk));
                        print_matrix(&tk, M, T, v, lw);
                        if (v == ANDREA_VIEW_SOFTMAX) {
                            andrea_attn_check ck;
                            andrea_attention_check(M, T, &ck);
                            printf(TR("attn.check_rows"), ck.max_row_error, ck.tolerance,
                                   pass(ck.max_row_error <= ck.tolerance && !ck.negative),
                                   (long long)T * (T - 1) / 2, (long long)ck.upper_nonzero,
                                   pass(ck.upper_nonzero == 0));
                        }
                    }
        }
    }

    /* statistics of the selected heads, and the checks over every head */
    if (!json_stdout) {
        andrea_attn_stats ref;
        andrea_attention_stats(andrea_attn_map(&maps, ANDREA_VIEW_SOFTMAX, 0, 0), T, &ref);
        printf(TR("attn.stats"), ref.entropy_uniform);
        printf("%s\n", TR("attn.stats_cols"));
    }
    int ok_all = 1;
    double worst_row = 0;
    long long upper_bad = 0;
    for (int l = 0; l < c->n_layer; l++)
        for (int h = 0; h < c->n_head; h++) {
            const float *A = andrea_attn_map(&maps, ANDREA_VIEW_SOFTMAX, l, h);
            andrea_attn_check ck;
            andrea_attention_check(A, T, &ck);
            if (!ck.ok) ok_all = 0;
            if (!(ck.max_row_error <= worst_row)) worst_row = ck.max_row_error;
            upper_bad += ck.upper_nonzero + ck.negative;
        }
    for (int li = 0; li < n_layers && !json_stdout; li++)
        for (int hi = 0; hi < n_heads; hi++) {
            andrea_attn_stats st;
            andrea_attention_stats(andrea_attn_map(&maps, ANDREA_VIEW_SOFTMAX, layers[li], heads[hi]),
                                   T, &st);
            char kk[48];
            snprintf(kk, sizeof kk, "kind.%s", andrea_head_kind_name(andrea_attention_head_kind(&st, T)));
            printf("%5d %4d %9.4f %10.3f %12.4f %11.4f  %s\n", layers[li], heads[hi], st.entropy,
                   st.mean_distance, st.first_weight, st.prev_weight, TR(kk));
        }
    int same = maps.prob_mismatches == 0 && maps.out_mismatches == 0 && maps.raw_mismatches == 0;
    fprintf(out, TR("attn.checks_all"), c->n_layer, c->n_head);
    fprintf(out, TR("attn.check_sum"), worst_row, (T + 2) * ldexp(1.0, -23), pass(worst_row <= (T + 2) * ldexp(1.0, -23)));
    fprintf(out, TR("attn.check_upper"), upper_bad, pass(upper_bad == 0));
    fprintf(out, TR("attn.check_engine"), (long long)maps.prob_mismatches, (long long)maps.out_mismatches,
            (long long)maps.raw_mismatches, pass(same));
    ok_all = ok_all && same;

    andrea_attn_export x = {model_path, prompt, &tk, &maps, layers, heads, n_layers, n_heads, lang};
    int wrote_ok = 1;
    if (json_path && attn_write_json_file(json_path, &x, views)) wrote_ok = 0;
    if (wrote_ok && html_path && attn_write_html_file(html_path, &x)) wrote_ok = 0;
    if (wrote_ok && png_dir && attn_write_png_dir(png_dir, &x, views)) wrote_ok = 0;
    rc = !wrote_ok ? 1 : ok_all ? 0 : 3;
    if (rc == 3) fprintf(stderr, "andrea attention: %s\n", TR("err.failed"));
done:
    free(layers);
    free(heads);
    andrea_attn_maps_free(&maps);
    andrea_attn_tokens_free(&tk);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    return rc;
}
