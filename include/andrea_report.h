/*
 * andrea_report.h - watch a training run: its log.jsonl (and ckpt.bin) as PNG plots and
 * as one offline HTML page (src/report). Needs jansson to read the log and libpng for
 * the pictures; without them the calls return -1 with the reason.
 *
 *     andrea_run_plot("runs/baby", "runs/baby/plots", NULL, NULL);  // loss.png, lr.png, ...
 *     andrea_run_report("runs/baby", "runs/baby/report.html");
 */
#ifndef ANDREA_REPORT_H
#define ANDREA_REPORT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the run's plots into out_dir (created): loss.png (training, smoothed,
 * validation), lr.png, grad_norm.png, gate.png (sample scores and the threshold) and, for
 * curriculum runs, loss_by_source.png, sources.png (shares of steps over time) and
 * weights.png. Calls wrote(file, title, user) for each file written (may be NULL).
 * 0, or -1 with andrea_error(). */
int andrea_run_plot(const char *run_dir, const char *out_dir,
                    void (*wrote)(const char *file, const char *title, void *user), void *user);
/* One self-contained HTML page (the plots as data: URIs, no network): the plots, the
 * configuration from ckpt.bin and every gate sample (step, score, verdict, text). */
int andrea_run_report(const char *run_dir, const char *html_path);

#ifdef __cplusplus
}
#endif
#endif
