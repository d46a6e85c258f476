/*
 * consistency.c - ranks whose copies of the weights cannot drift apart unseen.
 *
 * Every rank applies the optimizer step to its own copy of the weights, from the same
 * summed gradient: the copies stay equal only while that step rounds the same on every
 * rank. Two guards:
 *
 * - One ISA for the kernels that write the weights (AdamW, and the gradient norm whose
 *   clipping scales it), agreed at the start: the lowest any rank has. Each ISA's copy of
 *   those loops rounds differently (FMA or not, the vector width of the norm's partial
 *   sums), and a pool of machines of different CPU generations is the normal case, so
 *   refusing mixed ranks would refuse most clusters; the update is elementwise and
 *   memory-bound, a small part of a step, so the lowest level costs little. Forward and
 *   backward keep each machine's best: their rounding changes only that rank's share of
 *   the gradient, which the all-reduce sums into the same bits on every rank. Ranks of
 *   different architectures (x86-64 and AArch64) have no common vector code: refused.
 * - A 64-bit hash of every rank's parameters, compared over the ranks at the start, every
 *   --dist-check-every steps and before each checkpoint (so no checkpoint is written
 *   from copies that differ): a difference stops the run naming the step and the ranks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tensor_io.h"
#include "backend/cpu/kernels/kernels.h"
#include "model/model.h"
#include "parallel/dist_train.h"
#include "util/error.h"

/* This machine's architecture, for the level's meaning (NEON and AVX2 are both 1). */
#if defined(__x86_64__)
#define ARCH 1
#elif defined(__aarch64__)
#define ARCH 2
#else
#define ARCH 3
#endif
static const char *arch_name(int a) { return a == 1 ? "x86-64" : a == 2 ? "aarch64" : "other"; }

/* Every rank's value v, on every rank: an all-reduce of a vector holding v in its own slot
 * (exact: integers below 2^53 and zeros). all has d->size slots. */
static int share(andrea_dist *d, double v, double *all) {
    memset(all, 0, sizeof(double) * (size_t)d->size);
    all[d->rank] = v;
    return andrea_dist_allreduce_sum_f64(d, all, (size_t)d->size);
}

/* r->dist_ranks: "2 ranks (mpi); weights updated at avx2 on every rank, the lowest of:
 * rank 0 avx512, rank 1 avx2". all: every rank's code (0: not a CPU backend). */
static void describe(andrea_train_run *r, int low, int mixed, const double *all) {
    andrea_dist *d = r->dist;
    char *b = r->dist_ranks;
    int cap = (int)sizeof r->dist_ranks, n = snprintf(b, (size_t)cap, "%d ranks (%s); ", d->size,
                                                      d->ops->name);
    if (low < 0)
        n += snprintf(b + n, (size_t)(cap - n), "weights updated by the %s backend", r->m->be->name);
    else if (r->o.inject_own_isa)
        n += snprintf(b + n, (size_t)(cap - n), "testing: no agreement, each rank updates the "
                      "weights at its own best ISA");
    else
        n += snprintf(b + n, (size_t)(cap - n), "weights updated at %s on every rank%s",
                      andrea_isa_name(low), mixed ? ", the lowest of:" : "");
    for (int q = 0; mixed && q < d->size && n < cap - 24; q++)
        n += snprintf(b + n, (size_t)(cap - n), "%s rank %d %s", q ? "," : "", q,
                      andrea_isa_name((int)all[q] - 1 - ARCH * 16));
}

int andrea_dist_run_isa(andrea_train_run *r) {
    andrea_dist *d = r->dist;
    andrea_backend_cap_updates(-1); /* a previous run's agreement */
    r->dist_ranks[0] = 0;
    if (d->size == 1) return 0;
    int own = andrea_backend_update_isa(r->m->be); /* -1: not a CPU backend */
    double *all = malloc(sizeof(double) * (size_t)d->size);
    if (!all) return andrea_set_error("out of memory");
    int rc = share(d, own < 0 ? 0 : ARCH * 16 + own + 1, all), low = -1, mixed = 0;
    for (int q = 0; rc == 0 && q < d->size; q++) {
        int code = (int)all[q] - 1, arch = code / 16, lvl = code % 16;
        if (code < 0) continue; /* another backend: the hash check alone watches it */
        if (arch != ARCH) {
            rc = andrea_set_error("rank %d is %s and rank %d is %s: ranks of different "
                                  "architectures cannot update the weights alike; run every rank "
                                  "on one architecture", q, arch_name(arch), d->rank,
                                  arch_name(ARCH));
            break;
        }
        if (low >= 0 && lvl != low) mixed = 1;
        if (low < 0 || lvl < low) low = lvl;
    }
    if (rc == 0 && low >= 0 && !r->o.inject_own_isa) andrea_backend_cap_updates(low);
    if (rc == 0) describe(r, low, mixed, all);
    free(all);
    return rc;
}

/* FNV-1a over 32-bit words instead of bytes (a quarter of the multiplies): a difference
 * in any one word always changes the 64-bit result (xor and the odd multiply are
 * bijections); the 52 bits compared miss it with probability 2^-52. */
static int hash_chunk(void *user, const float *chunk, size_t k, size_t at) {
    (void)at;
    uint64_t h = *(uint64_t *)user;
    const uint32_t *w = (const uint32_t *)(const void *)chunk;
    for (size_t i = 0; i < k; i++) h = (h ^ w[i]) * 0x100000001b3ull;
    *(uint64_t *)user = h;
    return 0;
}

/* testing (--inject-drift-step): the last rank's first weight one ulp up */
static void inject_drift(andrea_train_run *r) {
    float w;
    andrea_tio_read(r->m->be, &w, r->m->params, 1);
    w = nextafterf(w, INFINITY);
    andrea_tio_write(r->m->be, r->m->params, &w, 1);
}

int andrea_dist_check_weights(andrea_train_run *r, int step, int saving) {
    andrea_dist *d = r->dist;
    const andrea_train_options *o = &r->o;
    if (d->size == 1) return 0;
    if (step == o->inject_drift_step && d->rank == d->size - 1) inject_drift(r);
    if (o->dist_check_every <= 0 || !(saving || step % o->dist_check_every == 0)) return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    if (andrea_tio_each(r->m->be, r->m->params, (size_t)r->m->layout.total, hash_chunk, &h))
        return -1;
    double *all = malloc(sizeof(double) * (size_t)d->size);
    if (!all) return andrea_set_error("out of memory");
    int rc = share(d, (double)(h >> 12), all); /* 52 bits: exact in a double */
    char who[160] = "";
    int n = 0, bad = 0, first = 0;
    for (int q = 1; rc == 0 && q < d->size; q++) {
        if (all[q] == all[0]) continue;
        if (!bad) first = q;
        if (n < (int)sizeof who - 16)
            n += snprintf(who + n, sizeof who - (size_t)n, "%s%d", bad ? ", " : "", q);
        bad++;
    }
    if (rc == 0 && bad)
        rc = andrea_set_error("step %d: the weights of rank%s %s differ from rank 0's (parameter "
                              "hash %013llx on rank 0, %013llx on rank %d): the ranks' copies "
                              "drifted apart; stopped before training on them (every "
                              "checkpoint written before was checked: resume from the last)", step,
                              bad > 1 ? "s" : "", who, (unsigned long long)all[0],
                              (unsigned long long)all[first], first);
    free(all);
    return rc;
}
