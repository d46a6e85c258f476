/*
 * dist_device.h - the ranks' float sums on device memory, through the backend's own
 * collectives (backend.h's andrea_backend_comm_ops: NCCL on cuda): the gradients are
 * summed where they are, not staged through host memory for MPI. The host ranks
 * (dist.h) bootstrap it: rank 0 makes the id, a broadcast hands it to every rank, and
 * every wait runs against the run's deadline (d->timeout_s) as the host collectives do:
 * a rank that died turns into an error here, and the communicator is aborted, never an
 * endless wait.
 */
#ifndef ANDREA_DIST_DIST_DEVICE_H
#define ANDREA_DIST_DIST_DEVICE_H

#include <stddef.h>

#include "backend/backend.h"
#include "parallel/dist.h"

/* Collective over d: 1 when every rank's backend has device collectives and a device of
 * its own (ranks sharing one device cannot form a communicator), else 0 with the reason
 * in why; -1 when a host collective failed. */
int andrea_dist_device_usable(andrea_dist *d, const andrea_backend *be, char *why, size_t cap);

/* Collective: joins every rank's backend into one communicator, as d->device (closed by
 * andrea_dist_close). 0, or -1 with andrea_error(). */
int andrea_dist_device_open(andrea_dist *d, const andrea_backend *be);

/* Sums buf (n floats of the backend's memory) over the ranks in place, started now: the
 * backend's ops queued after it run beside it; buf is the caller's again after
 * andrea_dist_device_wait. 0 or -1. */
int andrea_dist_device_start_sum(andrea_dist *d, float *buf, size_t n);
/* Rank r's part buf[displs[r], +counts[r]) to every rank, in place, and waits. 0 or -1. */
int andrea_dist_device_allgather(andrea_dist *d, float *buf, const int *counts,
                                 const int *displs);
/* Waits for everything started (at most d->timeout_s; then the run is broken). 0 or -1. */
int andrea_dist_device_wait(andrea_dist *d);
/* The sum, started and waited for. 0 or -1. */
int andrea_dist_device_sum(andrea_dist *d, float *buf, size_t n);

void andrea_dist_device_close(andrea_dist *d);

#endif
