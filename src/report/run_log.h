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
    char strike[32];  /* why it counted toward a halt; "" when it did not */
    char *text;
} andrea_log_sample;

/* A data source of a curriculum run (the per-step "source" field, per-source evals, the
 * "sources" record's description). */
typedef struct {
    char name[64];
    andrea_xy train;  /* EMA (alpha 0.1) of its step losses at each of its steps; a NaN
                       * breaks the line where it was not drawn for a while */
    andrea_xy val;    /* validation loss at each evaluation that names it */
    andrea_xy weight; /* the bandit's weight, when a record gives one */
    double ema;       /* the EMA after its last step (NaN: never drawn) */
    int64_t steps, last_step;
    /* from the "sources" record (has_meta 0 when the log has none) */
    int has_meta, warmup;
    char format[16];
    double docs, tokens, floor, cap, weight0;
} andrea_log_source;

typedef struct {
    andrea_xy loss, smooth, lr, gnorm, val, gate;
    double threshold; /* of the last sample that says (30 if none) */
    andrea_log_sample *samples;
    int n_samples, cap_samples;
    andrea_log_source *src;
    int n_src, cap_src;
    andrea_xy choice;      /* (step, index of the source it drew) */
    int64_t gap;           /* steps without a source's draw that break its loss line */
    int arm_step;          /* the first armed sample's step (-1: none) */
    double tokens_per_step; /* batch x seq x grad-accum of the start record (0: unknown) */
    char policy[32], manifest[512];
    double warmup_steps;
    int n_lines, bad_lines;
} andrea_run_log;

/* Reads path (log.jsonl): unknown record types and fields are skipped, so logs of
 * older and newer runs read. 0, or -1 with andrea_error(). */
int andrea_run_log_read(const char *path, andrea_run_log *log);
void andrea_run_log_free(andrea_run_log *log);

#endif
