/*
 * scale_exp_render.c - the scale experiment's pictures (scale_exp.c): four line charts
 * (the loss, the entropy of A, the gradient through the softmax, the gradient reaching Wq
 * and Wk; each run divided by 1 against divided by sqrt(d_k)) as PNG through plot.c, and one offline HTML page that
 * draws the same charts as inline SVG beside the table of numbers and the checks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_inspect.h"
#include "inspect/export.h"
#include "raster/plot.h"
#include "util/error.h"

#define TR(key) andrea_lang_text(lang, key)

/* The series of chart `which` for run r. */
static const double *series_of(const andrea_scale_exp *e, int which, int r) {
    return which == 0 ? e->loss[r] : which == 1 ? e->entropy[r] : which == 2 ? e->grad_z[r] : e->grad_qk[r];
}

static const char *const TITLES[4] = {"sx.chart_loss", "sx.chart_entropy", "sx.chart_grad",
                                      "sx.chart_grad_qk"};

static void run_names(const andrea_scale_exp *e, const char *lang, char names[2][96]) {
    snprintf(names[0], sizeof names[0], "%s", TR("sx.run_unscaled"));
    snprintf(names[1], sizeof names[1], TR("sx.run_scaled"), e->options.d_k, e->divisor[1]);
}

int andrea_scale_exp_render_png(andrea_writer *w, const andrea_scale_exp *e, const char *lang,
                                int which) {
    if (which < 0 || which > 3) return andrea_set_error("scale experiment: no chart %d", which);
    double *x = malloc(sizeof(double) * (size_t)e->n_points);
    if (!x) return andrea_set_error("scale experiment: out of memory");
    for (int p = 0; p < e->n_points; p++) x[p] = e->step[p];
    char names[2][96];
    run_names(e, lang, names);
    andrea_plot_series s[2];
    for (int r = 0; r < 2; r++)
        s[r] = (andrea_plot_series){names[r], x, series_of(e, which, r), e->n_points, r == 0 ? 3 : 0, 2, 0};
    andrea_plot p = {.title = TR(TITLES[which]), .xlabel = TR("sx.step"), .ylabel = "", .series = s,
                     .n_series = 2};
    int rc = andrea_plot_png(&p, w);
    free(x);
    return rc;
}

/* ---- the HTML page ------------------------------------------------------------------------ */

enum { SW = 420, SH = 240, PL = 52, PB = 28, PT = 10, PR = 10 };

/* One chart as inline SVG: a frame, the y range at its ends, the steps, both runs. */
static void svg_chart(andrea_writer *w, const andrea_scale_exp *e, const char *lang, int which) {
    double lo = INFINITY, hi = -INFINITY;
    for (int r = 0; r < 2; r++)
        for (int p = 0; p < e->n_points; p++) {
            double y = series_of(e, which, r)[p];
            if (y < lo) lo = y;
            if (y > hi) hi = y;
        }
    if (!(hi > lo)) hi = lo + 1;
    if (which >= 1) lo = 0; /* entropy and gradient norms start at 0 */
    double x1 = e->step[e->n_points - 1];
    andrea_writef(w, "<figure><figcaption>%s</figcaption><svg class=\"chart\" data-chart=\"%d\" "
                     "width=\"%d\" height=\"%d\">", TR(TITLES[which]), which, SW, SH);
    andrea_writef(w, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                     "stroke=\"#999\"/>", PL, PT, SW - PL - PR, SH - PT - PB);
    andrea_writef(w, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.3g</text>", PL - 4, PT + 10, hi);
    andrea_writef(w, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.3g</text>", PL - 4, SH - PB, lo);
    andrea_writef(w, "<text x=\"%d\" y=\"%d\">1</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">"
                     "%s %g</text>", PL, SH - 8, SW - PR, SH - 8, TR("sx.step"), x1);
    static const char *const COLOR[2] = {"#d62728", "#1f77b4"};
    for (int r = 0; r < 2; r++) {
        andrea_writef(w, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", COLOR[r]);
        for (int p = 0; p < e->n_points; p++) {
            double fx = x1 > 1 ? (e->step[p] - 1) / (x1 - 1) : 0;
            double fy = (series_of(e, which, r)[p] - lo) / (hi - lo);
            andrea_writef(w, "%.1f,%.1f ", PL + fx * (SW - PL - PR), SH - PB - fy * (SH - PT - PB));
        }
        andrea_write_str(w, "\"/>");
    }
    andrea_write_str(w, "</svg></figure>\n");
}

/* The table: every point's numbers for both runs. */
static void html_table(andrea_writer *w, const andrea_scale_exp *e, const char *lang) {
    andrea_writef(w, "<table id=\"points\"><tr><th rowspan=\"2\">%s</th><th colspan=\"2\">loss</th>"
                     "<th colspan=\"2\">%s</th><th colspan=\"2\">%s</th><th colspan=\"2\">|dL/dz|</th>"
                     "<th colspan=\"2\">|dL/dW<sub>q</sub>, dL/dW<sub>k</sub>|</th></tr><tr>",
                  TR("sx.step"), TR("sx.col_entropy"), TR("sx.col_maxp"));
    for (int c = 0; c < 5; c++) andrea_writef(w, "<th>&divide;1</th><th>&divide;%g</th>", e->divisor[1]);
    andrea_write_str(w, "</tr>\n");
    for (int p = 0; p < e->n_points; p++) {
        andrea_writef(w, "<tr><td>%d</td>", e->step[p]);
        for (int r = 0; r < 2; r++) andrea_writef(w, "<td>%.4f</td>", e->loss[r][p]);
        for (int r = 0; r < 2; r++) andrea_writef(w, "<td>%.4f</td>", e->entropy[r][p]);
        for (int r = 0; r < 2; r++) andrea_writef(w, "<td>%.4f</td>", e->max_p[r][p]);
        for (int r = 0; r < 2; r++) andrea_writef(w, "<td>%.5f</td>", e->grad_z[r][p]);
        for (int r = 0; r < 2; r++) andrea_writef(w, "<td>%.4f</td>", e->grad_qk[r][p]);
        andrea_write_str(w, "</tr>\n");
    }
    andrea_write_str(w, "</table>\n");
}

int andrea_scale_exp_render_html(andrea_writer *w, const andrea_scale_exp *e, const char *lang,
                                 const char *data_name) {
    if (andrea_lang_check(lang)) return -1;
    const andrea_scale_exp_options *o = &e->options;
    andrea_writef(w, "<!DOCTYPE html>\n<html lang=\"%s\"><head><meta charset=\"utf-8\"><title>",
                  lang && *lang ? lang : "en");
    andrea_html_text(w, TR("sx.page_title"));
    andrea_write_str(w, "</title>\n<style>body{font:14px/1.4 system-ui,sans-serif;margin:16px;"
                        "max-width:1300px;color:#222} figure{display:inline-block;margin:0 12px 12px 0}"
                        " svg text{font:11px sans-serif} table{border-collapse:collapse;font:12px "
                        "ui-monospace,monospace} td,th{border:1px solid #ddd;padding:2px 6px;"
                        "text-align:right} .ok{color:#070} .bad{color:#b00}</style></head><body>\n<h1>");
    andrea_html_text(w, TR("sx.page_title"));
    andrea_write_str(w, "</h1>\n<p>");
    char buf[1024], names[2][96];
    snprintf(buf, sizeof buf, TR("sx.intro"), data_name, e->vocab, e->divisor[1]);
    andrea_html_text(w, buf);
    andrea_write_str(w, "</p>\n<p>");
    snprintf(buf, sizeof buf, TR("sx.model"), o->d_model, o->d_k, o->T, o->batch, o->lr,
             (unsigned long long)o->seed);
    andrea_html_text(w, buf);
    run_names(e, lang, names);
    andrea_writef(w, "</p>\n<p><span style=\"color:#d62728\">&#9644; %s</span> &nbsp; "
                     "<span style=\"color:#1f77b4\">&#9644; %s</span></p>\n", names[0], names[1]);
    for (int c = 0; c < 4; c++) svg_chart(w, e, lang, c);
    andrea_write_str(w, "<ul id=\"checks\">\n");
    const int ok[3] = {e->ok_loss, e->ok_sharp, e->ok_grad};
    for (int c = 0; c < 3; c++) {
        static const char *const KEYS[3] = {"sx.check_loss", "sx.check_sharp", "sx.check_grad"};
        if (c == 0)
            snprintf(buf, sizeof buf, TR(KEYS[c]), ANDREA_SCALE_EXP_MARGIN, o->steps,
                     e->eval_loss[0], e->eval_loss[1], e->eval_loss[0] - e->eval_loss[1]);
        else if (c == 1)
            snprintf(buf, sizeof buf, TR(KEYS[c]), e->entropy[0][0], e->entropy[1][0]);
        else
            snprintf(buf, sizeof buf, TR(KEYS[c]), e->grad_z_late[0], e->grad_z_late[1],
                     e->grad_z_late[1] > 0 ? e->grad_z_late[0] / e->grad_z_late[1] : 0.0,
                     ANDREA_SCALE_EXP_GRAD_RATIO);
        andrea_writef(w, "<li class=\"%s\" data-ok=\"%d\">", ok[c] ? "ok" : "bad", ok[c]);
        andrea_html_text(w, buf);
        andrea_writef(w, ": %s</li>\n", TR(ok[c] ? "explain.pass" : "explain.fail"));
    }
    andrea_write_str(w, "</ul>\n<p>");
    andrea_html_text(w, TR("sx.note_qk"));
    andrea_write_str(w, "</p>\n");
    html_table(w, e, lang);
    andrea_write_str(w, "</body></html>\n");
    return andrea_writer_status(w, "scale experiment HTML");
}
