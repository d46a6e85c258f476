/* run_plots.h - the run's plots rendered to PNG bytes (run_plots.c), for the files of
 * `andrea plot` and the data: URIs of `andrea report`. Internal to src/report. */
#ifndef ANDREA_REPORT_RUN_PLOTS_H
#define ANDREA_REPORT_RUN_PLOTS_H

#include <stddef.h>

#include "report/run_log.h"

/* Renders every plot the log has data for; calls each(name, title, png, len, user) for
 * each ("loss.png", "Training and validation loss"). 0, or -1 with andrea_error(). */
int andrea_run_plots_render(const andrea_run_log *log,
                            int (*each)(const char *name, const char *title, const void *png,
                                        size_t len, void *user),
                            void *user);

/* sources.png (run_strip.c): the source each step drew, a row per source. 0 or -1. */
#include "andrea_writer.h"
int andrea_run_strip_png(const andrea_run_log *log, andrea_writer *w);

#endif
