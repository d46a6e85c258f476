/*
 * run_plots.c - the plots of a run (run_plots.h) and `andrea_run_plot`: one chart per
 * question a person watching a run asks. Is the loss falling (training raw and smoothed,
 * validation)? Per source? What was the learning rate, the gradient norm? Do the samples
 * pass the gate, and which failures count toward a halt? Which source did each step
 * draw (a strip, sources.png), and with what weights?
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "andrea_report.h"
#include "andrea_writer.h"
#include "raster/plot.h"
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

static int emit_strip(const andrea_run_log *log, each_fn each, void *user) {
    andrea_buffer buf = {0};
    andrea_writer w = andrea_writer_buffer(&buf);
    int rc = andrea_run_strip_png(log, &w);
    if (rc == 0) rc = each("sources.png", "Source drawn at each step", buf.data, buf.len, user);
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
    andrea_plot p = {.title = "Loss per source (train: EMA 0.1 where drawn, broken where not; "
                              "val: dots)", .xlabel = "step", .ylabel = "loss", .series = s,
                     .n_series = k};
    rc = emit(&p, "loss_by_source.png", each, user);
    if (rc == 0 && log->choice.n) rc = emit_strip(log, each, user);
    for (int i = 0; i < n; i++) {
        s[i] = series(log->src[i].name, &log->src[i].weight, i, 2, 0);
        any_w |= log->src[i].weight.n > 0;
    }
    andrea_plot r = {.title = "Bandit weight per source", .xlabel = "step", .ylabel = "weight",
                     .series = s, .n_series = n, .fixed_y = 1, .y0 = 0, .y1 = 1};
    if (rc == 0 && any_w) rc = emit(&r, "weights.png", each, user);
    free(s), free(names);
    return rc;
}

#define MAX_SWITCH_MARKS 400 /* more would grey the whole plot: the strip shows them */

/* loss.png: training (raw, smoothed) and validation loss; in a curriculum run a vertical
 * mark where the drawn source changes, in the new source's colour. */
static int loss_plot(const andrea_run_log *log, each_fn each, void *user) {
    andrea_plot_series s[3] = {series("train (raw)", &log->loss, 7, 1, 0),
                               series("train (smoothed)", &log->smooth, 0, 2, 0),
                               series("validation", &log->val, 3, 2, 1)};
    const andrea_xy *c = &log->choice;
    double *vx = malloc(sizeof *vx * (size_t)(c->n + 1));
    int *vc = malloc(sizeof *vc * (size_t)(c->n + 1)), nv = 0;
    if (!vx || !vc) {
        free(vx), free(vc);
        return andrea_set_error("out of memory");
    }
    for (int k = 1; k < c->n; k++)
        if (c->y[k] != c->y[k - 1]) vx[nv] = c->x[k] - 0.5, vc[nv++] = (int)c->y[k];
    char title[120] = "Training and validation loss";
    if (nv && nv <= MAX_SWITCH_MARKS)
        snprintf(title, sizeof title, "Training and validation loss (%d source switches: lines in "
                 "the new source's colour)", nv);
    else if (nv)
        snprintf(title, sizeof title, "Training and validation loss (%d source switches: see "
                 "sources.png)", nv);
    andrea_plot p = {.title = title, .xlabel = "step", .ylabel = "loss", .series = s,
                     .n_series = 3, .vx = vx, .vx_color = vc,
                     .n_vx = nv <= MAX_SWITCH_MARKS ? nv : 0};
    int rc = emit(&p, "loss.png", each, user);
    free(vx), free(vc);
    return rc;
}

/* gate.png: every sample's score against the threshold, passing, failing and counted
 * toward a halt apart, and the step the gate was armed. */
static int gate_plot(const andrea_run_log *log, each_fn each, void *user) {
    int n = log->n_samples, counted = 0;
    andrea_xy cls[3] = {{0}, {0}, {0}}; /* pass, fail not counted, counted */
    int rc = 0;
    for (int c = 0; c < 3 && !rc; c++) {
        cls[c].x = malloc(sizeof(double) * (size_t)(n + 1));
        cls[c].y = malloc(sizeof(double) * (size_t)(n + 1));
        if (!cls[c].x || !cls[c].y) rc = andrea_set_error("out of memory");
    }
    for (int i = 0; i < n && !rc; i++) {
        const andrea_log_sample *sm = &log->samples[i];
        int c = sm->pass ? 0 : sm->strike[0] ? 2 : 1;
        counted += c == 2;
        cls[c].x[cls[c].n] = sm->step;
        cls[c].y[cls[c].n++] = sm->score;
    }
    andrea_plot_series g[4] = {series("score", &log->gate, 7, 1, 0),
                               series("pass", &cls[0], 2, 0, 1),
                               series("fail, not a collapse (not counted)", &cls[1], 1, 0, 1),
                               series("fail, counted toward a halt", &cls[2], 3, 0, 1)};
    char ref[48], title[160];
    snprintf(ref, sizeof ref, "threshold %g", log->threshold);
    const char *gate = n ? log->samples[n - 1].gate : "";
    double arm = log->arm_step;
    int colour = 3;
    if (log->arm_step >= 0)
        snprintf(title, sizeof title, "Coherence gate (%s): sample scores; armed from step %d "
                 "(red line); %d counted toward a halt", gate, log->arm_step, counted);
    else
        snprintf(title, sizeof title, "Coherence gate (%s): sample scores; never armed", gate);
    andrea_plot t = {.title = title, .xlabel = "step", .ylabel = "score", .series = g,
                     .n_series = 4, .has_ref = 1, .ref = log->threshold, .ref_label = ref,
                     .fixed_y = 1, .y0 = 0, .y1 = 100, .vx = &arm, .vx_color = &colour,
                     .n_vx = log->arm_step >= 0};
    if (!rc) rc = emit(&t, "gate.png", each, user);
    for (int c = 0; c < 3; c++) free(cls[c].x), free(cls[c].y);
    return rc;
}

int andrea_run_plots_render(const andrea_run_log *log, each_fn each, void *user) {
    int rc = log->loss.n ? loss_plot(log, each, user) : 0;
    andrea_plot_series lr = series("learning rate", &log->lr, 2, 2, 0);
    andrea_plot q = {.title = "Learning rate", .xlabel = "step", .ylabel = "lr", .series = &lr,
                     .n_series = 1};
    if (rc == 0 && log->lr.n) rc = emit(&q, "lr.png", each, user);
    andrea_plot_series gn = series("gradient norm (before clipping)", &log->gnorm, 4, 1, 0);
    andrea_plot r = {.title = "Gradient norm", .xlabel = "step", .ylabel = "norm", .series = &gn,
                     .n_series = 1};
    if (rc == 0 && log->gnorm.n) rc = emit(&r, "grad_norm.png", each, user);
    if (rc == 0 && log->gate.n) rc = gate_plot(log, each, user);
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
