/* worker.h - the one long-lived thread that runs the server's full forward passes
 * (worker.c): /attention pages and /v1/embeddings. A bounded queue, and work a client
 * gave up on (gone, past --timeout, the server stopping) is withdrawn before it runs. */
#ifndef ANDREA_SERVER_WORKER_H
#define ANDREA_SERVER_WORKER_H

#include "request.h"

typedef struct serve_task {
    int (*run)(struct serve_task *t); /* on the worker; its return is rc */
    void *arg;
    int rc;
    int state;               /* the worker's: queued, running, done */
    struct serve_task *next; /* the queue */
} serve_task;

/* Queues t (the caller's until serve_task_wait returns). 0, or -1 when max_queued tasks
 * already wait (429) or the worker thread cannot start (andrea_error()). */
int serve_task_submit(serve_task *t, int max_queued);
/* Waits for t, asking give_up(user) four times a second. Returns 0 when t ran (t->rc), 1
 * when the caller gave up: a queued t is withdrawn, a running one is waited for (one task
 * is bounded: --attn-max-tokens, or one batch of embeddings). */
int serve_task_wait(serve_task *t, int (*give_up)(void *user), void *user);
/* Submit and wait: t's rc, or -1 with e (429 when the queue is full, 408 when the caller
 * gave up; `what` names the work in the message). */
int serve_task_run(serve_task *t, int max_queued, const char *what, serve_error *e,
                   int (*give_up)(void *user), void *user);
/* Tasks waiting, whether one runs, and how many were withdrawn so far. */
void serve_task_load(int *queued, int *running, long *withdrawn);

#endif
