/*
 * dist_mpi.c - the ranks of MPI_COMM_WORLD (built only with ANDREA_HAVE_MPI).
 *
 * Every collective is the non-blocking MPI call (MPI_Iallreduce, MPI_Ibcast, ...) polled
 * with MPI_Testall until it completes or the deadline passes: a blocking MPI_Allreduce
 * waits forever for a rank that hangs. Errors return (MPI_ERRORS_RETURN on our own
 * communicator) instead of aborting the job, so the caller reports them. MPI is
 * initialised once per process, finalised at exit unless a collective broke (finalize
 * would wait for the missing rank).
 */
#include "parallel/dist.h"

#ifdef ANDREA_HAVE_MPI
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "parallel/ring.h"
#include "util/error.h"
#include "util/perf.h"

static MPI_Comm g_comm = MPI_COMM_NULL; /* a dup of MPI_COMM_WORLD, errors returned */
static int g_broken;                    /* some collective of this process broke */
static int g_one_host;                  /* every rank on this machine (ring.h) */

int andrea_dist_mpi_built(void) { return 1; }

static void finalize_at_exit(void) {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && !g_broken) MPI_Finalize();
}

static int world_init(void) {
    if (g_comm != MPI_COMM_NULL) return 0;
    int inited = 0, provided;
    MPI_Initialized(&inited);
    /* OpenMPI's non-blocking all-reduce (libnbc) picks a binomial tree (reduce to rank 0,
     * then broadcast: the whole buffer twice, in sequence) for fewer than 4 ranks and for
     * any in-place sum, which is every gradient sum here; its ring (1) sends 2(N-1)/N of it.
     * Measured between two namespaces at 100 Mbit/s: 4 MB in 448 ms (tree) against 374 ms
     * (ring), and a 2-rank step of a 4 MB gradient 706-750 ms against 396-399 ms
     * (docs/distributed.md). A value the user set (mpirun --mca, the environment) wins. */
    if (!inited) setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
    /* only the main thread calls MPI (OpenMP threads never do) */
    if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return andrea_set_error("MPI_Init failed");
    if (!inited) atexit(finalize_at_exit);
    if (MPI_Comm_dup(MPI_COMM_WORLD, &g_comm) != MPI_SUCCESS)
        return andrea_set_error("MPI_Comm_dup failed");
    MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
    /* the ring sends whole chunks over shared memory, pieces over a network (ring.c);
     * every rank computes the same answer: its machine's ranks are all of them or not */
    MPI_Comm node;
    int world = 0, local = 0;
    if (MPI_Comm_split_type(g_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(g_comm, &world);
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    g_one_host = local > 0 && local == world;
    return 0;
}

static int mpi_fail(andrea_dist *d, const char *what, int code) {
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(code, msg, &len);
    g_broken = 1;
    return andrea_set_error("rank %d of %d: %s failed (%s): another rank died or the network "
                            "failed", d->rank, d->size, what, msg);
}

/* Polls reqs until done or d->timeout_s. MPI moves a non-blocking collective on only
 * inside MPI calls, so the polling is what drives it: tests back to back, yielding the
 * core between them (to the other ranks on an oversubscribed machine), and after a second
 * of waiting (a rank is late: its step is slower, or it hangs) 1 ms sleeps. */
typedef int (*poll_fn)(andrea_dist *d, void *what, int *done); /* an MPI code */

static int wait_until(andrea_dist *d, poll_fn poll, void *ctx, const char *what) {
    double t0 = andrea_now();
    for (long polls = 0;; polls++) {
        int done = 0, rc = poll(d, ctx, &done);
        if (rc != MPI_SUCCESS) return mpi_fail(d, what, rc);
        if (done) return 0;
        if ((polls & 63) == 0 && andrea_now() - t0 > d->timeout_s) {
            g_broken = 1;
            return andrea_set_error("rank %d of %d: %s not complete after %g s (--dist-timeout): "
                                    "another rank died or hangs; stopping", d->rank, d->size,
                                    what, d->timeout_s);
        }
        if (polls > 100000 && andrea_now() - t0 > 1.0)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        else
            sched_yield();
    }
}

typedef struct {
    MPI_Request *reqs;
    int n;
} req_set;

static int test_reqs(andrea_dist *d, void *ctx, int *done) {
    (void)d;
    req_set *s = ctx;
    return MPI_Testall(s->n, s->reqs, done, MPI_STATUSES_IGNORE);
}

static int wait_all(andrea_dist *d, MPI_Request *reqs, int n, const char *what) {
    req_set s = {reqs, n};
    return wait_until(d, test_reqs, &s, what);
}

#define START(d, what, call)                                                                  \
    do {                                                                                      \
        int rc_ = (call);                                                                     \
        if (rc_ != MPI_SUCCESS) return mpi_fail(d, what, rc_);                                \
    } while (0)

/* Deterministic sum: gather to rank 0, add in rank order, broadcast. (size, n) floats at
 * rank 0 for the time of one bucket. */
static int ordered_sum(andrea_dist *d, void *buf, size_t n, MPI_Datatype t, size_t esz) {
    void *all = d->rank == 0 ? malloc(esz * n * (size_t)d->size) : NULL;
    if (d->rank == 0 && !all) return andrea_set_error("out of memory in a reduction");
    MPI_Request req;
    START(d, "gather", MPI_Igather(buf, (int)n, t, all, (int)n, t, 0, g_comm, &req));
    int rc = wait_all(d, &req, 1, "gather (deterministic reduction)");
    if (rc == 0 && d->rank == 0) {
        for (int r = 1; r < d->size; r++)
            for (size_t i = 0; i < n; i++) {
                if (esz == sizeof(float)) ((float *)all)[i] += ((float *)all)[(size_t)r * n + i];
                else ((double *)all)[i] += ((double *)all)[(size_t)r * n + i];
            }
        memcpy(buf, all, esz * n);
    }
    free(all);
    if (rc) return rc;
    START(d, "broadcast", MPI_Ibcast(buf, (int)n, t, 0, g_comm, &req));
    return wait_all(d, &req, 1, "broadcast (deterministic reduction)");
}

static int ring_sum(andrea_dist *d, float *buf, size_t n);

static int reduce(andrea_dist *d, void *buf, size_t n, MPI_Datatype t, size_t esz) {
    if (d->deterministic) return ordered_sum(d, buf, n, t, esz);
    if (t == MPI_FLOAT && d->algo == ANDREA_ALLREDUCE_RING) return ring_sum(d, buf, n);
    MPI_Request req;
    START(d, "all-reduce", MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, t, MPI_SUM, g_comm, &req));
    return wait_all(d, &req, 1, "all-reduce");
}

static int f32(andrea_dist *d, float *b, size_t n) { return reduce(d, b, n, MPI_FLOAT, 4); }
static int f64(andrea_dist *d, double *b, size_t n) { return reduce(d, b, n, MPI_DOUBLE, 8); }

static int bcast(andrea_dist *d, void *b, size_t n, int root) {
    MPI_Request req;
    START(d, "broadcast", MPI_Ibcast(b, (int)n, MPI_BYTE, root, g_comm, &req));
    return wait_all(d, &req, 1, "broadcast");
}

static int barrier(andrea_dist *d) {
    MPI_Request req;
    START(d, "barrier", MPI_Ibarrier(g_comm, &req));
    return wait_all(d, &req, 1, "barrier");
}

static int allgather(andrea_dist *d, float *b, const int *c, const int *o) {
    MPI_Request req;
    START(d, "all-gather", MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, b, c, o, MPI_FLOAT, g_comm,
                                           &req));
    return wait_all(d, &req, 1, "all-gather of the parameters");
}

static int gather(andrea_dist *d, const float *part, float *b, const int *c, const int *o,
                  int root) {
    MPI_Request req;
    START(d, "gather", MPI_Igatherv(part, c[d->rank], MPI_FLOAT, b, c, o, MPI_FLOAT, root, g_comm,
                                    &req));
    return wait_all(d, &req, 1, "gather of the AdamW moments");
}

/* The overlapped sums in flight (d->impl): started in order, finished together. */
typedef struct {
    MPI_Request *req;
    int n, cap;
    andrea_ring **ring; /* the ring sums in flight (d->algo ring), NULL once done */
    int nring, ringcap, tag;
} pending;

static int ring_tag(pending *p) { return p->tag = (p->tag + 1) % 30000; } /* <= MPI_TAG_UB */

/* Moves every ring sum in flight on; *done when all are. */
static int test_rings(andrea_dist *d, void *ctx, int *done) {
    (void)d;
    pending *p = ctx;
    int all = 1;
    for (int i = 0; i < p->nring; i++) {
        if (!p->ring[i]) continue;
        int ok = 0, rc = andrea_ring_progress(p->ring[i], &ok);
        if (rc != MPI_SUCCESS) return rc;
        if (ok) {
            andrea_ring_free(p->ring[i]);
            p->ring[i] = NULL;
        } else {
            all = 0;
        }
    }
    if (all) p->nring = 0;
    *done = all;
    return MPI_SUCCESS;
}

static int ring_start(andrea_dist *d, pending *p, float *b, size_t n) {
    if (p->nring == p->ringcap) {
        int cap = p->ringcap ? 2 * p->ringcap : 64;
        andrea_ring **ring = realloc(p->ring, sizeof *ring * (size_t)cap);
        if (!ring) return andrea_set_error("out of memory for the ring sums");
        p->ring = ring;
        p->ringcap = cap;
    }
    int rc;
    p->ring[p->nring] =
        andrea_ring_start(g_comm, b, n, ring_tag(p), d->wire_bf16, !d->ring_pieces, &rc);
    if (!p->ring[p->nring])
        return rc != MPI_SUCCESS ? mpi_fail(d, "ring all-reduce", rc)
                                 : andrea_set_error("out of memory for a ring sum");
    p->nring++;
    return 0;
}

/* a blocking ring sum: started alone, driven to its end */
static int ring_sum(andrea_dist *d, float *buf, size_t n) {
    pending one = {0};
    int rc = ring_start(d, &one, buf, n);
    if (rc == 0) rc = wait_until(d, test_rings, &one, "ring all-reduce");
    for (int i = 0; i < one.nring; i++) andrea_ring_free(one.ring[i]);
    free(one.ring);
    return rc;
}

static int start(andrea_dist *d, float *b, size_t n) {
    pending *p = d->impl;
    if (d->algo == ANDREA_ALLREDUCE_RING) return ring_start(d, p, b, n);
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        MPI_Request *req = realloc(p->req, sizeof *req * (size_t)cap);
        if (!req) return andrea_set_error("out of memory for the all-reduce requests");
        p->req = req;
        p->cap = cap;
    }
    START(d, "all-reduce", MPI_Iallreduce(MPI_IN_PLACE, b, (int)n, MPI_FLOAT, MPI_SUM, g_comm,
                                          &p->req[p->n]));
    p->n++;
    return 0;
}

static int progress(andrea_dist *d) {
    pending *p = d->impl;
    int done = 0, rc = p->n ? MPI_Testall(p->n, p->req, &done, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS) return mpi_fail(d, "all-reduce", rc);
    if (done) p->n = 0;
    if (p->nring && (rc = test_rings(d, p, &done)) != MPI_SUCCESS)
        return mpi_fail(d, "ring all-reduce", rc);
    return 0;
}

static int finish(andrea_dist *d) {
    pending *p = d->impl;
    int rc = p->n ? wait_all(d, p->req, p->n, "all-reduce of the gradients") : 0;
    p->n = 0;
    if (rc == 0 && p->nring) rc = wait_until(d, test_rings, p, "ring all-reduce of the gradients");
    return rc;
}

int andrea_dist_failed(void) { return g_broken; }

/* 1 when pid is an MPI launcher (mpirun and its other names): a rank on the launching
 * machine is its child. Linux (/proc); elsewhere 0. */
static int is_launcher(pid_t pid) {
    char path[64], name[32] = "";
    snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    if (!fgets(name, sizeof name, f)) name[0] = 0;
    fclose(f);
    name[strcspn(name, "\n")] = 0;
    return !strcmp(name, "mpirun") || !strcmp(name, "mpiexec") || !strcmp(name, "orterun") ||
           !strcmp(name, "prterun");
}

/* MPI_Abort asks mpirun to kill every rank; mpirun then waits until each machine's
 * daemon reports its ranks gone. When a partition cut a machine off, that report never
 * comes (mpirun's control channel runs over the dead link too) and mpirun would wait
 * until the link returns. So a rank on mpirun's own machine leaves a watchdog behind:
 * a child that, if mpirun is still there ABORT_GRACE_S later, kills it. The child
 * closes every descriptor first (mpirun waits for the ranks' output pipes to close
 * before it exits) and does nothing else (no MPI after fork). The ranks on the other
 * side of the cut time out the same way and end by their own MPI_Abort. */
#define ABORT_GRACE_S 10

void andrea_dist_abort(int code) {
    fflush(NULL); /* the message first: MPI_Abort does not return */
    pid_t launcher = getppid();
    if (is_launcher(launcher) && fork() == 0) {
        for (int fd = 0; fd < 1024; fd++) close(fd);
        setsid(); /* out of the rank's process group: mpirun's kill of the rank spares it */
        sleep(ABORT_GRACE_S);
        if (kill(launcher, 0) == 0 && is_launcher(launcher)) /* not a reused pid */
            kill(launcher, SIGKILL);
        _exit(0);
    }
    MPI_Abort(MPI_COMM_WORLD, code);
}

static void mpi_close(andrea_dist *d) {
    if (d->broken) g_broken = 1;
    pending *p = d->impl;
    if (p) {
        free(p->req);
        for (int i = 0; i < p->nring; i++) andrea_ring_free(p->ring[i]);
        free(p->ring);
    }
    free(d->impl);
    free(d);
}

static const andrea_dist_ops MPI_OPS = {"mpi",  f32,   f64,      bcast,  barrier, allgather,
                                        gather, start, progress, finish, mpi_close};

andrea_dist *andrea_dist_mpi_open(void) {
    if (world_init()) return NULL;
    andrea_dist *d = calloc(1, sizeof *d);
    if (d) d->impl = calloc(1, sizeof(pending));
    if (!d || !d->impl) {
        free(d);
        return andrea_set_error("out of memory"), NULL;
    }
    MPI_Comm_rank(g_comm, &d->rank);
    MPI_Comm_size(g_comm, &d->size);
    /* ANDREA_RING_PIECES=1 or 0 forces pieces or whole chunks (tests, benchmarks: the
     * sums' bits are the same either way); it must be the same on every rank */
    const char *pieces = getenv("ANDREA_RING_PIECES");
    d->ring_pieces = pieces && *pieces ? strcmp(pieces, "0") != 0 : !g_one_host;
    d->ops = &MPI_OPS;
    return d;
}

#else /* built without MPI */

#include "util/error.h"

int andrea_dist_mpi_built(void) { return 0; }
int andrea_dist_failed(void) { return 0; }
void andrea_dist_abort(int code) { (void)code; }
andrea_dist *andrea_dist_mpi_open(void) {
    return andrea_set_error("this andrea was built without MPI"), NULL;
}

#endif
