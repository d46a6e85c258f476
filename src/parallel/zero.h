/*
 * zero.h - ZeRO-1: the AdamW moments sharded over the ranks. Rank r keeps m and v only for
 * its slice [lo, hi) of the flat parameter vector, updates those parameters alone (with
 * the full, all-reduced gradient), then every rank's slice is all-gathered so all hold the
 * same weights again. Per rank the moments take 8 bytes x params / ranks instead of 8 x
 * params. AdamW is elementwise, so the weights are bit-identical to the unsharded update.
 */
#ifndef ANDREA_DIST_ZERO_H
#define ANDREA_DIST_ZERO_H

#include <stdint.h>

#include "andrea.h"

typedef struct andrea_dist andrea_dist;

typedef struct {
    int on;                 /* sharded: --zero 1 and more than one rank */
    int64_t lo, hi;         /* this rank's slice of the flat parameters */
    int *counts, *displs;   /* (ranks) every rank's slice, for the gathers */
    float *host;            /* (n_params) host staging of the parameters' all-gather when the
                             * backend's memory is not the host's; NULL otherwise */
} andrea_zero;

/* Splits n_params over d's ranks: cuts at multiples of 64 floats from the start of the
 * tensor they fall in, so that every element goes through the same vector lane of the
 * AdamW kernel as in an unsharded update. 0 or -1. */
int andrea_zero_plan(andrea_zero *z, const andrea_model *m, const andrea_dist *d);
void andrea_zero_free(andrea_zero *z);
/* AdamW on this rank's slice (adam_m, adam_v: hi - lo floats each), then the all-gather
 * of the parameters. 0 or -1 (a failed collective). */
int andrea_zero_step(const andrea_zero *z, andrea_dist *d, andrea_model *m, float *adam_m,
                     float *adam_v, float lr, float b1, float b2, float eps, float wd, int t,
                     float gscale);
/* The full moments on rank 0 (in m's backend memory, *m_full and *v_full; NULL on the
 * other ranks), for a checkpoint that is the same as an unsharded run's. 0 or -1. */
int andrea_zero_gather(const andrea_zero *z, andrea_dist *d, const andrea_model *m,
                       const float *adam_m, const float *adam_v, float **m_full,
                       float **v_full);

#endif
