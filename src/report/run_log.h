/* run_log.h - a training run's log.jsonl read into series for the plots and the report
 * (run_log.c). Internal to src/report. */
#ifndef ANDREA_REPORT_RUN_LOG_H
#define ANDREA_REPORT_RUN_LOG_H

#include <stdint.h>

typedef struct {
    double *x, *y;
    int n, cap;
} andrea_xy;

typedef struct {
    int step, tokens, pass, armed;
    double score, threshold;
    char gate[16];
    char *text;
} andrea_log_sample;

/* A data source of a curriculum run (the per-step "source" field, per-source evals). */
typedef struct {
    char name[64];
    andrea_xy train;  /* EMA (alpha 0.1) of its step losses, at each of its steps */
    andrea_xy val;    /* validation loss at each evaluation that names it */
    andrea_xy share;  /* fraction of the steps in each window that drew it */
    andrea_xy weight; /* the bandit's weight, when a record gives one */
    double ema;
    int64_t in_window;
} andrea_log_source;

typedef struct {
    andrea_xy loss, smooth, lr, gnorm, val, gate;
    double threshold; /* of the last sample that says (30 if none) */
    andrea_log_sample *samples;
    int n_samples, cap_samples;
    andrea_log_source *src;
    int n_src, cap_src;
    int n_lines, bad_lines;
} andrea_run_log;

/* Reads path (log.jsonl): unknown record types and fields are skipped, so logs of
 * older and newer runs read. 0, or -1 with andrea_error(). */
int andrea_run_log_read(const char *path, andrea_run_log *log);
void andrea_run_log_free(andrea_run_log *log);

#endif
