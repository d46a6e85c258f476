/*
 * run_report.c - `andrea_run_report`: one offline HTML page about a run: the plots
 * (PNG bytes as base64 data: URIs, so the file needs no network and no other files),
 * the configuration from ckpt.bin, a curriculum's settings and sources with what each
 * got, and every coherence-gate sample with its score, verdict and whether it counted. Text is HTML-escaped; nothing is fetched.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_report.h"
#include "andrea_writer.h"
#include "report/run_plots.h"
#include "train/checkpoint/checkpoint.h"
#include "util/atomic_file.h"
#include "util/base64.h"
#include "util/error.h"

static void html_text(andrea_writer *w, const char *s, size_t n) {
    size_t a = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep = s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;" : s[i] == '&' ? "&amp;"
                          : s[i] == '"' ? "&quot;" : NULL;
        if (!rep) continue;
        andrea_write(w, s + a, i - a);
        andrea_write_str(w, rep);
        a = i + 1;
    }
    andrea_write(w, s + a, n - a);
}
static void html_str(andrea_writer *w, const char *s) { html_text(w, s, strlen(s)); }

static int plot_img(const char *name, const char *title, const void *png, size_t len, void *user) {
    andrea_writer *w = user;
    andrea_writef(w, "<figure id=\"%s\"><img alt=\"", name);
    html_str(w, title);
    andrea_write_str(w, "\" src=\"data:image/png;base64,");
    andrea_base64_write(w, png, len);
    andrea_write_str(w, "\"><figcaption>");
    html_str(w, title);
    andrea_write_str(w, "</figcaption></figure>\n");
    return w->err ? -1 : 0;
}

static void row(andrea_writer *w, const char *k, const char *v) {
    andrea_write_str(w, "<tr><th>");
    html_str(w, k);
    andrea_write_str(w, "</th><td>");
    html_str(w, v);
    andrea_write_str(w, "</td></tr>\n");
}

/* The configuration the run's ckpt.bin records (none when it has no checkpoint yet). */
static void config_table(andrea_writer *w, const char *run_dir) {
    char path[4096], buf[1200];
    snprintf(path, sizeof path, "%s/ckpt.bin", run_dir);
    andrea_config cfg;
    andrea_train_options o;
    andrea_train_options_default(&o);
    andrea_ckpt_state *st = calloc(1, sizeof *st);
    andrea_write_str(w, "<h2>Configuration</h2>\n");
    if (!st || andrea_checkpoint_peek(path, &cfg, st) ||
        andrea_train_options_from_checkpoint(path, &cfg, &o)) {
        andrea_write_str(w, "<p>No readable ckpt.bin: ");
        html_str(w, andrea_error());
        andrea_write_str(w, "</p>\n");
        free(st);
        return;
    }
    andrea_write_str(w, "<table class=\"cfg\">\n");
    row(w, "checkpoint", path);
    snprintf(buf, sizeof buf, "%lld", (long long)st->step);
    row(w, "step", buf);
    snprintf(buf, sizeof buf, "L=%d NH=%d C=%d T=%d V=%d norm=%s act=%s bias=%d tied=%d",
             cfg.n_layer, cfg.n_head, cfg.d_model, cfg.ctx, cfg.vocab, andrea_norm_name(cfg.norm),
             andrea_act_name(cfg.act), cfg.bias, cfg.tied);
    row(w, "model", buf);
    row(w, "data", st->data_path[0] ? st->data_path : "(not recorded)");
    andrea_train_options_describe(&o, buf, sizeof buf);
    row(w, "training", buf);
    snprintf(buf, sizeof buf, "a sample of %d tokens every %d steps; threshold %g, %d collapsed "
             "samples in a row halt", o.sample_tokens, o.sample_every, o.gate_threshold,
             o.gate_patience);
    row(w, "coherence gate", buf);
    snprintf(buf, sizeof buf, "%.4f", st->best_val_loss);
    row(w, "best validation loss", isfinite(st->best_val_loss) ? buf : "none yet");
    andrea_write_str(w, "</table>\n");
    free(st);
}

static void num_cell(andrea_writer *w, double v, const char *fmt) {
    andrea_write_str(w, "<td>");
    if (isfinite(v)) andrea_writef(w, fmt, v);
    else andrea_write_str(w, "&ndash;");
    andrea_write_str(w, "</td>");
}

/* A curriculum run: its settings, its sources as the manifest gave them, and what each
 * source got: steps, tokens, share, the last training EMA, validation at start and end. */
static void sources_tables(andrea_writer *w, const andrea_run_log *log) {
    if (!log->n_src) return;
    andrea_write_str(w, "<h2>Curriculum</h2>\n<table class=\"cfg\">\n");
    if (log->manifest[0]) row(w, "manifest", log->manifest);
    if (log->policy[0]) row(w, "policy", log->policy);
    char buf[64];
    snprintf(buf, sizeof buf, "%.0f steps", log->warmup_steps);
    if (isfinite(log->warmup_steps)) row(w, "curriculum warmup", buf);
    andrea_write_str(w, "</table>\n<table id=\"sources\" class=\"sources\"><tr><th>source</th>"
                        "<th>format</th><th>documents</th><th>tokens</th><th>floor</th><th>cap</th>"
                        "<th>weight</th><th>warmup</th><th>steps</th><th>tokens trained</th>"
                        "<th>share of steps</th><th>last train EMA</th><th>val loss, first</th>"
                        "<th>val loss, last</th></tr>\n");
    double total = log->choice.n;
    for (int i = 0; i < log->n_src; i++) {
        const andrea_log_source *src = &log->src[i];
        andrea_write_str(w, "<tr><td>");
        html_str(w, src->name);
        andrea_write_str(w, "</td><td>");
        html_str(w, src->has_meta ? src->format : "");
        andrea_write_str(w, "</td>");
        double nan = NAN, m = src->has_meta;
        num_cell(w, m ? src->docs : nan, "%.0f");
        num_cell(w, m ? src->tokens : nan, "%.0f");
        num_cell(w, m ? src->floor : nan, "%g");
        num_cell(w, m ? src->cap : nan, "%g");
        num_cell(w, m ? src->weight0 : nan, "%g");
        andrea_writef(w, "<td>%s</td>", !m ? "" : src->warmup ? "yes" : "no");
        num_cell(w, (double)src->steps, "%.0f");
        num_cell(w, log->tokens_per_step > 0 ? (double)src->steps * log->tokens_per_step : nan, "%.0f");
        num_cell(w, total > 0 ? 100.0 * (double)src->steps / total : nan, "%.1f%%");
        num_cell(w, src->ema, "%.4f");
        num_cell(w, src->val.n ? src->val.y[0] : nan, "%.4f");
        num_cell(w, src->val.n ? src->val.y[src->val.n - 1] : nan, "%.4f");
        andrea_write_str(w, "</tr>\n");
    }
    andrea_write_str(w, "</table>\n");
}

static void samples_table(andrea_writer *w, const andrea_run_log *log) {
    andrea_writef(w, "<h2>Coherence-gate samples (%d)</h2>\n", log->n_samples);
    if (!log->n_samples) {
        andrea_write_str(w, "<p>No samples (sampling off: --sample-every 0).</p>\n");
        return;
    }
    andrea_write_str(w, "<table id=\"samples\" class=\"samples\"><tr><th>step</th><th>gate</th>"
                        "<th>score</th><th>verdict</th><th>text</th><th>toward a halt</th></tr>\n");
    for (int i = 0; i < log->n_samples; i++) {
        const andrea_log_sample *s = &log->samples[i];
        const char *verdict = s->pass ? "pass" : !s->armed ? "fail (not armed)"
                              : s->strike[0] ? "FAIL" : "fail (not a collapse)";
        andrea_writef(w, "<tr class=\"%s\"><td>%d</td><td>%s</td><td>%.1f / %g</td><td>%s</td>"
                      "<td><pre>", s->pass ? "pass" : "fail", s->step, s->gate, s->score,
                      s->threshold, verdict);
        html_str(w, s->text);
        andrea_write_str(w, "</pre></td><td>");
        html_str(w, s->strike[0] ? s->strike : "no");
        andrea_write_str(w, "</td></tr>\n");
    }
    andrea_write_str(w, "</table>\n");
}

static const char *STYLE =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
    "figure{display:inline-block;margin:0 1em 1em 0}img{max-width:100%;border:1px solid #ddd}"
    "table{border-collapse:collapse;margin-bottom:1em}th,td{border:1px solid #ccc;padding:4px 8px;"
    "vertical-align:top;text-align:left}pre{white-space:pre-wrap;margin:0;font-size:12px;"
    "max-height:14em;overflow:auto}tr.fail td:nth-child(4){color:#b00;font-weight:bold}"
    "tr.pass td:nth-child(4){color:#080}";

int andrea_run_report(const char *run_dir, const char *html_path) {
    char path[4096];
    snprintf(path, sizeof path, "%s/log.jsonl", run_dir);
    andrea_run_log log;
    if (andrea_run_log_read(path, &log)) return -1;
    andrea_atomic_file af; /* whole under a temporary name, then renamed */
    FILE *f = andrea_atomic_open(&af, html_path);
    if (!f) {
        andrea_run_log_free(&log);
        return -1;
    }
    andrea_writer w = andrea_writer_file(f);
    andrea_write_str(&w, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>andrea run ");
    html_str(&w, run_dir);
    andrea_writef(&w, "</title><style>%s</style></head><body>\n<h1>Training run ", STYLE);
    html_str(&w, run_dir);
    andrea_writef(&w, "</h1>\n<p>%d steps logged, %d evaluations, %d samples", log.loss.n,
                  log.val.n, log.n_samples);
    if (log.n_src) andrea_writef(&w, ", %d data sources", log.n_src);
    andrea_write_str(&w, ".</p>\n<h2>Plots</h2>\n");
    int rc = andrea_run_plots_render(&log, plot_img, &w);
    if (rc == 0) {
        config_table(&w, run_dir);
        sources_tables(&w, &log);
        samples_table(&w, &log);
        andrea_write_str(&w, "</body></html>\n");
        rc = andrea_writer_status(&w, "report");
    }
    if (rc == 0) rc = andrea_atomic_commit(&af);
    else andrea_atomic_abort(&af);
    andrea_run_log_free(&log);
    return rc;
}
