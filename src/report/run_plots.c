/*
 * run_plots.c - the plots of a run (run_plots.h) and `andrea_run_plot`: one chart per
 * question a person watching a run asks. Is the loss falling (training raw and smoothed,
 * validation)? Per source? What was the learning rate, the gradient norm? Do the samples
 * pass the gate? Which sources did the bandit draw, and with what weights?
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "andrea_report.h"
#include "andrea_writer.h"
#include "inspect/plot.h"
#include "report/run_plots.h"
#include "util/atomic_file.h"
#include "util/error.h"

typedef int (*each_fn)(const char *name, const char *title, const void *png, size_t len, void *user);

static andrea_plot_series series(const char *name, const andrea_xy *s, int color, int width,
                                 int markers) {
    andrea_plot_series p = {name, s->x, s->y, s->n, color, width, markers};
    return p;
}

static int emit(const andrea_plot *p, const char *name, each_fn each, void *user) {
    andrea_buffer buf = {0};
    andrea_writer w = andrea_writer_buffer(&buf);
    int rc = andrea_plot_png(p, &w);
    if (rc == 0) rc = each(name, p->title, buf.data, buf.len, user);
    andrea_buffer_free(&buf);
    return rc;
}

static int per_source(const andrea_run_log *log, each_fn each, void *user) {
    int n = log->n_src;
    andrea_plot_series *s = calloc((size_t)(2 * n + 1), sizeof *s);
    char (*names)[80] = calloc((size_t)(2 * n + 1), sizeof *names);
    if (!s || !names) {
        free(s), free(names);
        return andrea_set_error("out of memory");
    }
    int k = 0, rc = 0, any_w = 0;
    for (int i = 0; i < n; i++) {
        snprintf(names[k], sizeof names[k], "%s train", log->src[i].name);
        s[k] = series(names[k], &log->src[i].train, i, 1, 0);
        k++;
        if (log->src[i].val.n) {
            snprintf(names[k], sizeof names[k], "%s val", log->src[i].name);
            s[k] = series(names[k], &log->src[i].val, i, 2, 1);
            k++;
        }
    }
    andrea_plot p = {"Loss per source (train: EMA 0.1 of its steps; val: dots)", "step", "loss",
                     s, k, 0, 0, NULL, 0, 0, 0};
    rc = emit(&p, "loss_by_source.png", each, user);
    k = 0; /* the sources steps drew (not those only evaluated) */
    for (int i = 0; i < n; i++)
        if (log->src[i].train.n) s[k++] = series(log->src[i].name, &log->src[i].share, i, 2, 0);
    andrea_plot q = {"Share of steps per source (windows of the run)", "step", "share", s, k, 0,
                     0, NULL, 1, 0, 1};
    if (rc == 0) rc = emit(&q, "sources.png", each, user);
    for (int i = 0; i < n; i++) {
        s[i] = series(log->src[i].name, &log->src[i].weight, i, 2, 0);
        any_w |= log->src[i].weight.n > 0;
    }
    andrea_plot r = {"Bandit weight per source", "step", "weight", s, n, 0, 0, NULL, 1, 0, 1};
    if (rc == 0 && any_w) rc = emit(&r, "weights.png", each, user);
    free(s), free(names);
    return rc;
}

int andrea_run_plots_render(const andrea_run_log *log, each_fn each, void *user) {
    andrea_plot_series s[3] = {series("train (raw)", &log->loss, 7, 1, 0),
                               series("train (smoothed)", &log->smooth, 0, 2, 0),
                               series("validation", &log->val, 3, 2, 1)};
    andrea_plot p = {"Training and validation loss", "step", "loss", s, 3, 0, 0, NULL, 0, 0, 0};
    int rc = log->loss.n ? emit(&p, "loss.png", each, user) : 0;
    andrea_plot_series lr = series("learning rate", &log->lr, 2, 2, 0);
    andrea_plot q = {"Learning rate", "step", "lr", &lr, 1, 0, 0, NULL, 0, 0, 0};
    if (rc == 0 && log->lr.n) rc = emit(&q, "lr.png", each, user);
    andrea_plot_series gn = series("gradient norm (before clipping)", &log->gnorm, 4, 1, 0);
    andrea_plot r = {"Gradient norm", "step", "norm", &gn, 1, 0, 0, NULL, 0, 0, 0};
    if (rc == 0 && log->gnorm.n) rc = emit(&r, "grad_norm.png", each, user);
    andrea_plot_series g = series("sample score", &log->gate, 0, 2, 1);
    char ref[48];
    snprintf(ref, sizeof ref, "threshold %g", log->threshold);
    const char *gate = log->n_samples ? log->samples[log->n_samples - 1].gate : "";
    char title[96];
    snprintf(title, sizeof title, "Coherence gate (%s): sample scores", gate);
    andrea_plot t = {title, "step", "score", &g, 1, 1, log->threshold, ref, 1, 0, 100};
    if (rc == 0 && log->gate.n) rc = emit(&t, "gate.png", each, user);
    if (rc == 0 && log->n_src) rc = per_source(log, each, user);
    return rc;
}

/* ---- andrea_run_plot: the PNGs as files -------------------------------------------- */

typedef struct {
    const char *dir;
    void (*wrote)(const char *file, const char *title, void *user);
    void *user;
} to_files;

static int write_file(const char *name, const char *title, const void *png, size_t len, void *user) {
    to_files *t = user;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", t->dir, name);
    andrea_atomic_file af; /* whole under a temporary name, then renamed */
    if (!andrea_atomic_open(&af, path)) return -1;
    if (fwrite(png, 1, len, af.f) != len) {
        andrea_atomic_abort(&af);
        return andrea_set_error("cannot write '%s': %s", path, strerror(errno));
    }
    if (andrea_atomic_commit(&af)) return -1;
    if (t->wrote) t->wrote(path, title, t->user);
    return 0;
}

int andrea_run_plot(const char *run_dir, const char *out_dir,
                    void (*wrote)(const char *file, const char *title, void *user), void *user) {
    char path[4096];
    snprintf(path, sizeof path, "%s/log.jsonl", run_dir);
    andrea_run_log log;
    if (andrea_run_log_read(path, &log)) return -1;
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        andrea_run_log_free(&log);
        return andrea_set_error("cannot create '%s': %s", out_dir, strerror(errno));
    }
    to_files t = {out_dir, wrote, user};
    int rc = andrea_run_plots_render(&log, write_file, &t);
    andrea_run_log_free(&log);
    return rc;
}
