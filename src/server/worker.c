/*
 * worker.c - one long-lived thread for the server's full forward passes (/attention pages,
 * /v1/embeddings), one task at a time: each uses every core, an /attention page holds
 * 4 L NH T^2 floats, and the matmul kernels keep per-thread panels that a thread leaves
 * behind when it exits (a connection's thread would leak them on every request).
 *
 * The queue is bounded (--queue) and a task is the waiting connection's: one whose client
 * gave up leaves the queue without running, so clients that abort cost nothing.
 */
#include "worker.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "util/error.h"

enum { QUEUED, RUNNING, DONE };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static serve_task *head, *tail; /* the queue */
static int n_queued, running;
static long n_withdrawn; /* tasks whose client gave up before they ran */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int started;

static void *worker_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!head) pthread_cond_wait(&cv, &mu);
        serve_task *t = head;
        head = t->next;
        if (!head) tail = NULL;
        n_queued--;
        t->state = RUNNING;
        running = 1;
        pthread_mutex_unlock(&mu);
        int rc = t->run(t);
        pthread_mutex_lock(&mu);
        t->rc = rc;
        t->state = DONE;
        running = 0;
        pthread_cond_broadcast(&cv);
    }
    return NULL;
}

static void start(void) {
    pthread_t th;
    if (pthread_create(&th, NULL, worker_main, NULL) == 0) {
        pthread_detach(th); /* it lives as long as the server */
        started = 1;
    }
}

int serve_task_submit(serve_task *t, int max_queued) {
    pthread_once(&once, start);
    if (!started) return andrea_set_error("cannot start the worker thread");
    pthread_mutex_lock(&mu);
    int full = n_queued >= max_queued;
    if (!full) {
        t->state = QUEUED;
        t->next = NULL;
        if (tail) tail->next = t;
        else head = t;
        tail = t;
        n_queued++;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
    return full ? -1 : 0;
}

/* Under the lock: t leaves the queue. */
static void withdraw(serve_task *t) {
    serve_task **p = &head, *prev = NULL;
    while (*p && *p != t) prev = *p, p = &(*p)->next;
    if (!*p) return;
    *p = t->next;
    if (tail == t) tail = prev;
    n_queued--;
    n_withdrawn++;
}

int serve_task_wait(serve_task *t, int (*give_up)(void *user), void *user) {
    pthread_mutex_lock(&mu);
    int gave_up = 0;
    while (t->state != DONE) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        if (pthread_cond_timedwait(&cv, &mu, &ts) != ETIMEDOUT || t->state == DONE || gave_up) continue;
        pthread_mutex_unlock(&mu);
        gave_up = give_up(user);
        pthread_mutex_lock(&mu);
        if (gave_up && t->state == QUEUED) {
            withdraw(t);
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return gave_up;
}

int serve_task_run(serve_task *t, int max_queued, const char *what, serve_error *e,
                   int (*give_up)(void *user), void *user) {
    if (serve_task_submit(t, max_queued))
        return serve_fail(e, 429, "rate_limit_error", NULL, "queue_full", "%d requests wait for "
                          "the worker (%s); retry later", max_queued, what);
    if (serve_task_wait(t, give_up, user))
        return serve_fail(e, 408, "timeout_error", NULL, "timeout", "%s: given up (the client "
                          "went away or --timeout passed)", what);
    return t->rc;
}

void serve_task_load(int *queued, int *run, long *withdrawn) {
    pthread_mutex_lock(&mu);
    *queued = n_queued;
    *run = running;
    *withdrawn = n_withdrawn;
    pthread_mutex_unlock(&mu);
}
