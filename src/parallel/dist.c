/* dist.c - choosing the ranks (MPI or one local rank) and the collectives' common part:
 * argument checks, buckets, the time and bytes they cost. */
#include "parallel/dist.h"
#include "parallel/dist_device.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/perf.h"

static int env_int(const char *const *names, int def) {
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return atoi(v);
    }
    return def;
}

/* OpenMPI's mpirun, then PMIx and PMI launchers (MPICH's hydra, Slurm's srun). */
static const char *const SIZE_VARS[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", NULL};
static const char *const RANK_VARS[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", NULL};

int andrea_dist_env_size(void) { return env_int(SIZE_VARS, 1); }
int andrea_dist_env_rank(void) { return env_int(RANK_VARS, 0); }

andrea_dist *andrea_dist_open(double timeout_s, int deterministic) {
    if (!(timeout_s > 0))
        return andrea_set_error("--dist-timeout %g: must be > 0 seconds", timeout_s), NULL;
    int launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
    andrea_dist *d = NULL;
    if (launched && andrea_dist_mpi_built()) d = andrea_dist_mpi_open();
    else if (launched && andrea_dist_env_size() > 1)
        return andrea_set_error("started by an MPI launcher as one of %d ranks, but this andrea "
                                "was built without MPI (install libopenmpi-dev and rebuild with "
                                "-DANDREA_MPI=ON)", andrea_dist_env_size()), NULL;
    else d = andrea_dist_local_open();
    if (!d) return NULL;
    d->timeout_s = timeout_s;
    d->deterministic = deterministic;
    return d;
}

void andrea_dist_close(andrea_dist *d) {
    if (!d) return;
    andrea_dist_device_close(d); /* before the host ranks it was bootstrapped over */
    d->ops->close(d);
}

/* Every collective goes through here: no work for one rank, and a broken run stays
 * broken (the peers are gone; waiting again would only wait out the deadline again). */
#define COLLECTIVE(d, bytes, call)                                                            \
    do {                                                                                      \
        if ((d)->size == 1) return 0;                                                         \
        if ((d)->broken)                                                                      \
            return andrea_set_error("rank %d: an earlier collective failed; stopping", (d)->rank); \
        double t0_ = andrea_now();                                                            \
        int rc_ = (call);                                                                     \
        (d)->comm_s += andrea_now() - t0_;                                                    \
        (d)->comm_bytes += (uint64_t)(bytes);                                                 \
        if (rc_) (d)->broken = 1;                                                             \
        return rc_;                                                                           \
    } while (0)

/* op (a blocking or a started sum) on buf in buckets of ANDREA_DIST_BUCKET floats */
static int in_buckets(andrea_dist *d, float *buf, size_t n,
                      int (*op)(andrea_dist *, float *, size_t)) {
    for (size_t at = 0; at < n; at += ANDREA_DIST_BUCKET) {
        size_t k = n - at < ANDREA_DIST_BUCKET ? n - at : ANDREA_DIST_BUCKET;
        if (op(d, buf + at, k)) return -1;
    }
    return 0;
}

/* bytes on the wire per float: the ring's bf16 sends half */
#define WIRE(d) ((d)->wire_bf16 && (d)->algo == ANDREA_ALLREDUCE_RING ? 2u : 4u)

int andrea_dist_allreduce_sum(andrea_dist *d, float *buf, size_t n) {
    COLLECTIVE(d, n * WIRE(d), in_buckets(d, buf, n, d->ops->allreduce_f32));
}

int andrea_dist_start_sum(andrea_dist *d, float *buf, size_t n) {
    if (d->deterministic && d->size > 1)
        return andrea_set_error("an overlapped sum cannot be deterministic (rank 0 orders it)");
    COLLECTIVE(d, n * WIRE(d), in_buckets(d, buf, n, d->ops->start_f32));
}

int andrea_dist_progress(andrea_dist *d) { COLLECTIVE(d, 0, d->ops->progress(d)); }

int andrea_dist_finish(andrea_dist *d) { COLLECTIVE(d, 0, d->ops->finish(d)); }

const char *andrea_dist_algo_name(int algo) {
    return algo == ANDREA_ALLREDUCE_RING ? "ring" : algo == ANDREA_ALLREDUCE_DEVICE ? "device" : "mpi";
}

/* median seconds of 3 sums of buf (n) with d->algo, after one untimed warm-up */
static int time_sums(andrea_dist *d, float *buf, size_t n, double *sec) {
    double t[3];
    for (int i = -1; i < 3; i++) {
        if (andrea_dist_barrier(d)) return -1;
        double t0 = andrea_now();
        if (andrea_dist_allreduce_sum(d, buf, n)) return -1;
        if (i >= 0) t[i] = andrea_now() - t0;
    }
    double lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
    *sec = t[2] < lo ? lo : t[2] > hi ? hi : t[2];
    return 0;
}

int andrea_dist_plan(andrea_dist *d, size_t n, int choice) {
    d->algo = choice == ANDREA_ALLREDUCE_RING ? ANDREA_ALLREDUCE_RING : ANDREA_ALLREDUCE_MPI;
    if (choice != ANDREA_ALLREDUCE_AUTO || d->size == 1 || d->deterministic || n == 0) return 0;
    if (n > ANDREA_DIST_BUCKET) n = ANDREA_DIST_BUCKET;
    float *buf = calloc(n, sizeof(float));
    if (!buf) return andrea_set_error("out of memory measuring the all-reduce");
    double ms[2], comm_s = d->comm_s;
    uint64_t comm_bytes = d->comm_bytes; /* the measurement is not the run's traffic */
    int rc = 0;
    for (int a = 0; rc == 0 && a < 2; a++) {
        d->algo = a;
        rc = time_sums(d, buf, n, &ms[a]);
        ms[a] *= 1e3;
    }
    free(buf);
    d->comm_s = comm_s;
    d->comm_bytes = comm_bytes;
    /* every rank decides on the same numbers: the ranks' times summed */
    if (rc || andrea_dist_allreduce_sum_f64(d, ms, 2)) return -1;
    d->plan_ms[0] = ms[0] / d->size;
    d->plan_ms[1] = ms[1] / d->size;
    d->algo = ms[1] < ms[0] ? ANDREA_ALLREDUCE_RING : ANDREA_ALLREDUCE_MPI;
    return 0;
}

int andrea_dist_allreduce_sum_f64(andrea_dist *d, double *buf, size_t n) {
    COLLECTIVE(d, n * sizeof(double), d->ops->allreduce_f64(d, buf, n));
}

int andrea_dist_broadcast(andrea_dist *d, void *buf, size_t bytes, int root) {
    COLLECTIVE(d, d->rank == root ? bytes : 0, d->ops->broadcast(d, buf, bytes, root));
}

int andrea_dist_barrier(andrea_dist *d) { COLLECTIVE(d, 0, d->ops->barrier(d)); }

int andrea_dist_allgather(andrea_dist *d, float *buf, const int *counts, const int *displs) {
    COLLECTIVE(d, (size_t)counts[d->rank] * sizeof(float),
               d->ops->allgather_f32(d, buf, counts, displs));
}

int andrea_dist_gather(andrea_dist *d, const float *part, float *buf, const int *counts,
                       const int *displs, int root) {
    if (d->size == 1 && buf + displs[0] != part)
        memcpy(buf + displs[0], part, sizeof(float) * (size_t)counts[0]);
    COLLECTIVE(d, (size_t)counts[d->rank] * sizeof(float),
               d->ops->gather_f32(d, part, buf, counts, displs, root));
}
