/*
 * bench_allreduce.c - the gradient all-reduce on its own: for each buffer size, the best
 * and median time of andrea_dist_allreduce_sum over ROUNDS rounds (a barrier before each),
 * and the bus bandwidth a ring all-reduce implies, 2 (N - 1) / N x bytes / time (the bytes
 * each rank sends and receives; docs/distributed.md's model uses the same formula). With
 * a parameter count it times exactly one step's gradient. Rank 0 prints.
 *
 *   mpirun -np 2 build/bench/bench_allreduce [FLOATS [ROUNDS [mpi|ring|both|bf16]]]
 *   (FLOATS 0: a size sweep; mpi: MPI_Iallreduce, ring: src/parallel/ring.c; both: the
 *   two side by side, each size timed with one then the other; bf16: the ring with bf16
 *   on the wire (the test values are small integers: exact in bf16); default both)
 *   mpirun -np 2 build/bench/bench_allreduce $(andrea info ... params) 20
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "parallel/dist.h"
#include "util/perf.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* best and median seconds of one all-reduce of n floats; -1 on failure */
static int time_one(andrea_dist *d, float *buf, size_t n, int rounds, double *best, double *med) {
    double t[64];
    for (int i = 0; i < rounds; i++) {
        for (size_t k = 0; k < n; k++) buf[k] = (float)(k % 7) + (float)d->rank;
        if (andrea_dist_barrier(d)) return -1;
        double t0 = andrea_now();
        if (andrea_dist_allreduce_sum(d, buf, n)) return -1;
        t[i] = andrea_now() - t0;
    }
    /* rank 0's times: every round starts together after the barrier */
    qsort(t, (size_t)rounds, sizeof(double), cmp_double);
    *best = t[0];
    *med = t[rounds / 2];
    return 0;
}

int main(int argc, char **argv) {
    size_t floats = argc > 1 ? (size_t)atoll(argv[1]) : 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 10;
    if (rounds < 1 || rounds > 64) rounds = 10;
    const char *which = argc > 3 ? argv[3] : "both";
    int bf16 = strcmp(which, "bf16") == 0;
    int a0 = strcmp(which, "ring") == 0 || bf16, a1 = strcmp(which, "mpi") == 0 ? 0 : 1;
    if (strcmp(which, "ring") && strcmp(which, "mpi") && strcmp(which, "both") && !bf16) {
        fprintf(stderr, "bench_allreduce: '%s': expected mpi, ring, both or bf16\n", which);
        return 2;
    }
    andrea_dist *d = andrea_dist_open(60.0, 0);
    if (!d) {
        fprintf(stderr, "bench_allreduce: %s\n", andrea_error());
        return 1;
    }
    size_t sweep[] = {1024, 16384, 262144, 1u << 20, 1u << 22, 1u << 24};
    size_t nsz = floats ? 1 : sizeof sweep / sizeof sweep[0], max = floats;
    for (size_t i = 0; !floats && i < nsz; i++) max = sweep[i] > max ? sweep[i] : max;
    float *buf = malloc(sizeof(float) * max);
    if (!buf) return 1;
    d->wire_bf16 = bf16;
    if (d->rank == 0)
        printf("all-reduce (%d ranks, fp32 sum, rounds %d)\n%6s %12s %12s %12s %12s\n",
               d->size, rounds, "algo", "floats", "best ms", "median ms", "bus GB/s");
    for (size_t i = 0; i < nsz; i++) {
        size_t n = floats ? floats : sweep[i];
        for (int a = a0; a <= a1; a++) {
            d->algo = a;
            double best, med;
            if (time_one(d, buf, n, rounds, &best, &med)) {
                fprintf(stderr, "bench_allreduce: %s\n", andrea_error());
                return 1;
            }
            /* the sum is right: element k is sum over ranks of (k % 7 + rank) */
            for (size_t k = 0; k < n; k++)
                if (buf[k] != (float)((double)(k % 7) * d->size + d->size * (d->size - 1) / 2.0)) {
                    fprintf(stderr, "bench_allreduce: %s sum wrong at %zu: %g\n",
                            andrea_dist_algo_name(a), k, buf[k]);
                    return 1;
                }
            double bus = d->size > 1 ? 2.0 * (d->size - 1) / d->size * 4.0 * (double)n / med / 1e9 : 0;
            if (d->rank == 0)
                printf("%6s %12zu %12.3f %12.3f %12.2f\n", bf16 ? "ring16" : andrea_dist_algo_name(a), n, best * 1e3,
                       med * 1e3, bus);
        }
    }
    free(buf);
    andrea_dist_close(d);
    return 0;
}
