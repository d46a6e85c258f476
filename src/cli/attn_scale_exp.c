/*
 * attn_scale_exp.c - `andrea explain --experiment scale --data FILE`: the lesson's
 * "without the scale, training stalls", trained and measured (the library's
 * andrea_scale_experiment, src/inspect/scale_exp.c): both runs' loss, entropy of A, max p,
 * gradient through the softmax and gradient reaching Wq and Wk every few steps as text,
 * the held-out loss and the claim's three checks; --png DIR (four charts) and --html FILE
 * draw them.
 * Exits 1 when a check fails. docs/attention.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "andrea.h"
#include "andrea_inspect.h"
#include "args.h"
#include "attn_text.h"
#include "commands.h"
#include "util/atomic_file.h"

static const char *lang;
#define TR(key) andrea_lang_text(lang, key)

/* The whole file into *buf (caller frees); its length, or -1 with the message printed. */
static long read_text(const char *path, uint8_t **buf) {
    FILE *f = fopen(path, "rb");
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        *buf = malloc((size_t)n + 1);
        if (!*buf || fread(*buf, 1, (size_t)n, f) != (size_t)n) n = -1;
    }
    if (n < 0) {
        fprintf(stderr, "andrea explain: ");
        fprintf(stderr, TR("err.read"), path, strerror(errno ? errno : EIO));
        fputc('\n', stderr);
    }
    if (f) fclose(f);
    return n;
}

static void print_report(const andrea_scale_exp *e, const char *data) {
    const andrea_scale_exp_options *o = &e->options;
    char buf[1024];
    printf("%s\n", TR("sx.page_title"));
    snprintf(buf, sizeof buf, TR("sx.intro"), data, e->vocab, e->divisor[1]);
    printf("  %s\n", buf);
    snprintf(buf, sizeof buf, TR("sx.model"), o->d_model, o->d_k, o->T, o->batch, o->lr,
             (unsigned long long)o->seed);
    printf("  %s\n\n", buf);
    double dv = e->divisor[1];
    /* the column heads by display width: "÷" is two bytes */
    const char *heads[5] = {"loss", TR("sx.col_entropy"), TR("sx.col_maxp"), "|dL/dz|", "|dL/dWq,Wk|"};
    static const int wid[5] = {8, 8, 8, 9, 9};
    char d1[16];
    snprintf(d1, sizeof d1, "÷%g", dv);
    attn_print_cell(stdout, TR("sx.step"), 7, 1);
    for (int c = 0; c < 5; c++) {
        fputs(" | ", stdout);
        attn_print_cell(stdout, heads[c], 2 * wid[c] + 1, 1);
    }
    printf("\n%7s", "");
    for (int c = 0; c < 5; c++) {
        fputs(" | ", stdout);
        attn_print_cell(stdout, "÷1", wid[c], 1);
        fputs(" ", stdout);
        attn_print_cell(stdout, d1, wid[c], 1);
    }
    printf("\n");
    for (int p = 0; p < e->n_points; p++)
        printf("%7d | %8.4f %8.4f | %8.4f %8.4f | %8.4f %8.4f | %9.5f %9.5f | %9.4f %9.4f\n",
               e->step[p], e->loss[0][p], e->loss[1][p], e->entropy[0][p], e->entropy[1][p],
               e->max_p[0][p], e->max_p[1][p], e->grad_z[0][p], e->grad_z[1][p],
               e->grad_qk[0][p], e->grad_qk[1][p]);
    printf("\n");
    snprintf(buf, sizeof buf, TR("sx.check_loss"), ANDREA_SCALE_EXP_MARGIN, o->steps, e->eval_loss[0],
             e->eval_loss[1], e->eval_loss[0] - e->eval_loss[1]);
    printf(TR("explain.check"), buf, TR(e->ok_loss ? "explain.pass" : "explain.fail"));
    snprintf(buf, sizeof buf, TR("sx.check_sharp"), e->entropy[0][0], e->entropy[1][0]);
    printf(TR("explain.check"), buf, TR(e->ok_sharp ? "explain.pass" : "explain.fail"));
    snprintf(buf, sizeof buf, TR("sx.check_grad"), e->grad_z_late[0], e->grad_z_late[1],
             e->grad_z_late[1] > 0 ? e->grad_z_late[0] / e->grad_z_late[1] : 0.0,
             ANDREA_SCALE_EXP_GRAD_RATIO);
    printf(TR("explain.check"), buf, TR(e->ok_grad ? "explain.pass" : "explain.fail"));
    printf("\n%s\n", TR("sx.note_qk"));
}

typedef struct {
    const andrea_scale_exp *e;
    int which;       /* a chart, or -1: the page */
    const char *data;
} sx_file;

/* One file, written whole under a temporary name and renamed. 0 or -1 (printed). */
static int write_one(const char *path, const sx_file *j) {
    andrea_atomic_file af;
    FILE *f = andrea_atomic_open(&af, path);
    if (!f) {
        fprintf(stderr, "andrea explain: %s\n", andrea_error());
        return -1;
    }
    andrea_writer w = andrea_writer_file(f);
    int rc = j->which < 0 ? andrea_scale_exp_render_html(&w, j->e, lang, j->data)
                          : andrea_scale_exp_render_png(&w, j->e, lang, j->which);
    if (rc) {
        andrea_atomic_abort(&af);
    } else if (andrea_atomic_commit(&af)) {
        rc = -1;
    }
    if (rc) fprintf(stderr, "andrea explain: '%s': %s\n", path, andrea_error());
    else fprintf(stderr, TR("sx.wrote"), path);
    return rc;
}

static int write_files(const andrea_scale_exp *e, const char *data, const char *png_dir,
                       const char *html) {
    if (html && write_one(html, &(sx_file){e, -1, data})) return -1;
    if (!png_dir) return 0;
    struct stat st;
    if (mkdir(png_dir, 0777) != 0 && (stat(png_dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, "andrea explain: ");
        fprintf(stderr, TR("err.png_dir"), png_dir);
        fputc('\n', stderr);
        return -1;
    }
    static const char *const NAMES[4] = {"scale_loss.png", "scale_entropy.png", "scale_grad.png",
                                         "scale_grad_qk.png"};
    for (int c = 0; c < 4; c++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", png_dir, NAMES[c]);
        if (write_one(path, &(sx_file){e, c, data})) return -1;
    }
    return 0;
}

int cmd_explain_experiment(int argc, char **argv, const char *name) {
    const char *data = NULL, *png_dir = NULL, *html = NULL;
    andrea_scale_exp_options o = {64, 64, 32, 16, 200, 10, 0.003, 1};
    float lr = (float)o.lr;
    arg_spec specs[] = {
        {"data", 0, ARG_STR, &data, "text to train on (its bytes are the characters)", 0},
        {"dk", 0, ARG_INT, &o.d_k, "d_k of the one head (64; 256 shows it more)", 0},
        {"d-model", 0, ARG_INT, &o.d_model, "width of the embeddings (64)", 0},
        {"seq", 0, ARG_INT, &o.T, "context T of a training window (32)", 0},
        {"batch", 0, ARG_INT, &o.batch, "windows per step (16)", 0},
        {"steps", 0, ARG_INT, &o.steps, "Adam steps of each run (200)", 0},
        {"every", 0, ARG_INT, &o.every, "a measurement every N steps (10)", 0},
        {"lr", 0, ARG_FLOAT, &lr, "Adam's learning rate (0.003)", 0},
        {"seed", 0, ARG_U64, &o.seed, "initial weights and batches (1)", 0},
        {"png", 0, ARG_STR, &png_dir, "write scale_loss/entropy/grad/grad_qk.png into this folder", 0},
        {"html", 0, ARG_STR, &html, "write one offline page with the charts and numbers", 0},
        {"lang", 0, ARG_STR, &lang, "language: en (default) | id", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("explain --experiment", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("explain --experiment scale", "--data FILE [--dk N] [--steps N] [--png DIR] "
                   "[--html FILE]", specs, n_specs);
        return 0;
    }
    if (r) return 2;
    if (andrea_lang_check(lang)) {
        fprintf(stderr, "andrea explain: --lang: %s\n", andrea_error());
        return 2;
    }
    if (strcmp(name, "scale") != 0) {
        fprintf(stderr, "andrea explain: ");
        fprintf(stderr, TR("err.experiment"), name);
        fputc('\n', stderr);
        return 2;
    }
    if (!data) {
        fprintf(stderr, "andrea explain: %s\n", TR("err.need_data"));
        return 2;
    }
    o.lr = lr;
    uint8_t *text = NULL;
    long n = read_text(data, &text);
    if (n < 0) {
        free(text);
        return 1;
    }
    andrea_scale_exp e;
    int rc = andrea_scale_experiment(text, (size_t)n, &o, &e);
    free(text);
    if (rc) {
        fprintf(stderr, "andrea explain: %s\n", andrea_error());
        andrea_scale_exp_free(&e);
        return 2;
    }
    print_report(&e, data);
    rc = write_files(&e, data, png_dir, html) ? 1 : e.ok_loss && e.ok_sharp && e.ok_grad ? 0 : 1;
    andrea_scale_exp_free(&e);
    return rc;
}
