/*
 * dist.h - the ranks of a data-parallel run and the collectives training needs.
 *
 * One process is rank 0 of 1 (dist_local.c, always built). Under mpirun, in a build that
 * found MPI (ANDREA_HAVE_MPI), every process is one rank of MPI_COMM_WORLD (dist_mpi.c).
 * Every collective is non-blocking underneath and polled against a deadline
 * (timeout_s): a rank that died or hangs turns into an error on the others within that
 * time, never an endless wait. After such an error the run is broken: the caller stops.
 *
 * Reductions sum in the MPI library's order (fast; float rounding depends on it) unless
 * deterministic is set: then rank 0 gathers every rank's buffer, adds them in rank order
 * ((g0 + g1) + g2) + ..., and broadcasts the sum: the same bits on every run and every
 * network, whatever algorithm the library would pick.
 */
#ifndef ANDREA_DIST_DIST_H
#define ANDREA_DIST_DIST_H

#include <stddef.h>
#include <stdint.h>

typedef struct andrea_dist andrea_dist;

typedef struct {
    const char *name; /* "local", "mpi" */
    int (*allreduce_f32)(andrea_dist *d, float *buf, size_t n);   /* in place, one bucket */
    int (*allreduce_f64)(andrea_dist *d, double *buf, size_t n);  /* in place */
    int (*broadcast)(andrea_dist *d, void *buf, size_t bytes, int root);
    int (*barrier)(andrea_dist *d);
    /* Rank r's part buf[displs[r], +counts[r]) to every rank, in place. */
    int (*allgather_f32)(andrea_dist *d, float *buf, const int *counts, const int *displs);
    /* Rank r's part (its own buffer `part`) into root's buf at displs[r]. */
    int (*gather_f32)(andrea_dist *d, const float *part, float *buf, const int *counts,
                      const int *displs, int root);
    /* Overlapped sums: start one (in place, one bucket) and return at once; move the
     * started ones on without waiting; wait for all of them. */
    int (*start_f32)(andrea_dist *d, float *buf, size_t n);
    int (*progress)(andrea_dist *d);
    int (*finish)(andrea_dist *d);
    void (*close)(andrea_dist *d);
} andrea_dist_ops;

struct andrea_dist {
    int rank, size;
    double timeout_s;   /* a collective not done by then is an error */
    int deterministic;  /* reductions in rank order (see above) */
    int broken;         /* a collective failed or timed out: stop, do not finalize */
    double comm_s;      /* seconds spent in collectives (waiting included) */
    uint64_t comm_bytes; /* payload bytes this rank sent into collectives */
    int algo;           /* the float sums: ANDREA_ALLREDUCE_MPI or _RING (andrea_dist_plan) */
    int wire_bf16;      /* the ring's chunks travel as bf16 (--dist-bf16; ring only) */
    int ring_pieces;    /* the ring sends 32 KB pieces (ranks on several machines), not
                         * whole chunks (one machine); set at open (ring.h,
                         * ANDREA_RING_PIECES overrides) */
    double plan_ms[2];  /* what andrea_dist_plan measured: MPI's, the ring's (0: not measured) */
    const andrea_dist_ops *ops;
    void *impl;
    /* the float sums over device buffers (dist_device.h), NULL: through host memory */
    struct andrea_dist_device *device;
};

/* The ranks of this process: MPI when built with it and launched by mpirun (or another
 * PMI launcher), else one local rank. NULL with andrea_error() on failure. */
andrea_dist *andrea_dist_open(double timeout_s, int deterministic);
void andrea_dist_close(andrea_dist *d);
/* The world size/rank as the launcher announced it in the environment (1 and 0 without
 * one): for front ends that must know before andrea_dist_open (who prints). */
int andrea_dist_env_size(void);
int andrea_dist_env_rank(void);

/* How the float sums run: MPI's own MPI_Iallreduce (whatever algorithm the library
 * picks), or the ring of ring.h (reduce-scatter + all-gather over point-to-point). AUTO:
 * andrea_dist_plan measures both. */
enum { ANDREA_ALLREDUCE_AUTO = -1, ANDREA_ALLREDUCE_MPI = 0, ANDREA_ALLREDUCE_RING = 1 };
/* The sums on device buffers (dist_device.h: NCCL), chosen by the trainer, not measured. */
enum { ANDREA_ALLREDUCE_DEVICE = 2 };
/* Sets d->algo: choice itself, or (AUTO) the faster of the two on a sum of min(n,
 * ANDREA_DIST_BUCKET) floats, timed 3 times each, the times all-reduced so every rank
 * picks the same; d->plan_ms holds them. One rank, or deterministic sums: nothing to
 * choose. Collective. 0 or -1. */
int andrea_dist_plan(andrea_dist *d, size_t n, int choice);
const char *andrea_dist_algo_name(int algo);

/* Sum over ranks, in place, in buckets of ANDREA_DIST_BUCKET floats in flight together. */
#define ANDREA_DIST_BUCKET (1u << 22)
int andrea_dist_allreduce_sum(andrea_dist *d, float *buf, size_t n);
int andrea_dist_allreduce_sum_f64(andrea_dist *d, double *buf, size_t n);
int andrea_dist_broadcast(andrea_dist *d, void *buf, size_t bytes, int root);
int andrea_dist_barrier(andrea_dist *d);
int andrea_dist_allgather(andrea_dist *d, float *buf, const int *counts, const int *displs);
int andrea_dist_gather(andrea_dist *d, const float *part, float *buf, const int *counts,
                       const int *displs, int root);

/* The same sum as andrea_dist_allreduce_sum, started now and completed by
 * andrea_dist_finish: the caller computes meanwhile (the rest of the backward pass) and
 * calls andrea_dist_progress now and then, because MPI moves a non-blocking collective on
 * only inside MPI calls. buf must not be touched until finish. Every rank starts the same
 * sequence of (n) in the same order. Not for deterministic reductions (they gather to
 * rank 0 and need the whole buffer): those callers use andrea_dist_allreduce_sum. */
int andrea_dist_start_sum(andrea_dist *d, float *buf, size_t n);
int andrea_dist_progress(andrea_dist *d);
int andrea_dist_finish(andrea_dist *d);

/* 1 when a collective of this process broke (a timeout, an error MPI reported): the
 * other ranks are gone or cut off. The front end then prints its message and calls
 * andrea_dist_abort, which ends the whole job (MPI_Abort: mpirun kills every rank and
 * exits, also when the control channel to a cut-off rank is gone); the library itself
 * never exits. Without MPI: 0, and andrea_dist_abort returns. */
int andrea_dist_failed(void);
void andrea_dist_abort(int code);

/* dist_local.c, and dist_mpi.c when built (NULL and an error otherwise). */
andrea_dist *andrea_dist_local_open(void);
andrea_dist *andrea_dist_mpi_open(void);
int andrea_dist_mpi_built(void);

#endif
