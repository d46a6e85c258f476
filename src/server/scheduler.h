/* scheduler.h - the jobs the connections hand to the one thread that owns the model and
 * the batch (scheduler.c), and what a connection may do with a job meanwhile. */
#ifndef ANDREA_SERVER_SCHEDULER_H
#define ANDREA_SERVER_SCHEDULER_H

#include <pthread.h>

#include "andrea_writer.h"
#include "metrics.h"
#include "request.h"
#include "server.h"

/* One generated token's log-probability and its best alternatives. */
typedef struct {
    int32_t id;
    float logprob;
    int n_top;
    int32_t top_id[SERVE_MAX_TOP];
    float top_lp[SERVE_MAX_TOP];
} serve_tokprob;

/* One choice's answer as far as it was released (non-streamed requests keep it all). */
typedef struct {
    andrea_bytes text;
    serve_tokprob *lp; /* (n_lp) tokens whose text is released */
    int n_lp, cap_lp;
    int n_tokens;      /* generated, for usage */
    const char *finish;/* NULL while running, then "stop" or "length" */
} serve_choice;

typedef struct serve_job {
    serve_params p;
    char id[48];
    long created;        /* unix seconds */
    const char *model;
    /* shared between the connection and the scheduler: under the scheduler's lock */
    pthread_cond_t cond; /* signalled when out grows or done is set */
    andrea_buffer out;   /* streamed: SSE bytes, taken from out_sent on */
    size_t out_sent;
    serve_choice *choices; /* (p.n) */
    int done, cancelled, failed;
    serve_error err;     /* when failed */
    double t_submit, deadline;
    int refs;
    int live;            /* the scheduler's: its sequences in the batch */
} serve_job;

typedef struct serve_sched serve_sched;

serve_sched *serve_sched_start(const serve_config *cfg, serve_metrics *mx);
void serve_sched_stop(serve_sched *s);
/* A job holding p (moved in: the caller's copy is zeroed), one reference for the caller. */
serve_job *serve_job_new(serve_params *p, const char *model);
/* Queues j; 0, or -1 when the queue is full (429). */
int serve_sched_submit(serve_sched *s, serve_job *j);
void serve_job_retain(serve_sched *s, serve_job *j);
void serve_job_release(serve_sched *s, serve_job *j);
/* The client went away: the job leaves the queue or the batch at the next step. */
void serve_job_cancel(serve_sched *s, serve_job *j);
/* Waits up to wait_s for j to finish; 1 when done. */
int serve_job_wait_done(serve_sched *s, serve_job *j, double wait_s);
/* Streamed: waits up to wait_s for bytes, copies up to max into buf (*n). Returns 1 when
 * the job is done and every byte was taken, else 0. */
int serve_job_take(serve_sched *s, serve_job *j, char *buf, size_t max, size_t *n, double wait_s);
/* Queue depth and sequences in the batch, for /metrics and /health. */
void serve_sched_load(serve_sched *s, int *queued, int *active);

#endif
