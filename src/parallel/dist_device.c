/* dist_device.c - the ranks' sums on device memory (dist_device.h). */
#include "parallel/dist_device.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "util/perf.h"

struct andrea_dist_device {
    const andrea_backend *be;
    andrea_backend_comm *comm;
    int in_flight;  /* sums started and not yet waited for */
    uint64_t bytes; /* of those, for d->comm_bytes */
};

enum { KEY_BYTES = 192 };

/* Every rank's device key in turn (a broadcast each): does another rank name ours? */
static int shares_device(andrea_dist *d, const char *mine, int *shared) {
    char key[KEY_BYTES];
    double dup = 0;
    for (int r = 0; r < d->size; r++) {
        memcpy(key, mine, sizeof key);
        if (andrea_dist_broadcast(d, key, sizeof key, r)) return -1;
        if (r != d->rank && strcmp(key, mine) == 0) dup = 1;
    }
    if (andrea_dist_allreduce_sum_f64(d, &dup, 1)) return -1;
    *shared = dup > 0;
    return 0;
}

int andrea_dist_device_usable(andrea_dist *d, const andrea_backend *be, char *why, size_t cap) {
    char key[KEY_BYTES] = "";
    const andrea_backend_comm_ops *c = be->comm;
    double missing = !c || c->device_key(be, key, sizeof key) != 0;
    if (andrea_dist_allreduce_sum_f64(d, &missing, 1)) return -1;
    if (missing > 0) {
        snprintf(why, cap, "%s", c ? "a rank's device gave no key" :
                 "this backend has no device collectives (a build without NCCL, or a host backend)");
        return 0;
    }
    int shared = 0;
    if (shares_device(d, key, &shared)) return -1;
    if (shared) {
        snprintf(why, cap, "two ranks share one device (%s needs a device per rank: more "
                 "devices, or ANDREA_CUDA_DEVICE per rank)", c->name);
        return 0;
    }
    return 1;
}

/* Polls the communicator until done or the deadline; a timeout or failure aborts it
 * (what is in flight is dropped: the peers are gone) and breaks the run. */
static int wait_done(andrea_dist *d, const char *what) {
    struct andrea_dist_device *x = d->device;
    double t0 = andrea_now(), deadline = t0 + d->timeout_s;
    int s;
    for (long spins = 0; (s = x->be->comm->poll(x->comm)) == 0; spins++) {
        if (andrea_now() > deadline) {
            andrea_set_error("rank %d of %d: %s on the device (%s) not done within %g s "
                             "(--dist-timeout): another rank died or hangs", d->rank, d->size,
                             what, x->be->comm->name, d->timeout_s);
            break;
        }
        if (spins > 64) sched_yield();
    }
    d->comm_s += andrea_now() - t0;
    if (s == 1) {
        d->comm_bytes += x->bytes;
        x->bytes = 0;
        x->in_flight = 0;
        return 0;
    }
    x->be->comm->abort(x->comm);
    x->comm = NULL;
    d->broken = 1;
    return -1;
}

int andrea_dist_device_open(andrea_dist *d, const andrea_backend *be) {
    const andrea_backend_comm_ops *c = be->comm;
    unsigned char id[1024] = {0};
    if (!c || c->id_bytes > sizeof id)
        return andrea_set_error("the %s backend has no device collectives", be->name);
    double made = d->rank != 0 || c->make_id(be, id) == 0;
    if (andrea_dist_allreduce_sum_f64(d, &made, 1)) return -1;
    if (made < d->size) /* rank 0's message is its own; the others name the reason */
        return d->rank == 0 ? -1 : andrea_set_error("rank 0 could not make the %s id", c->name);
    if (andrea_dist_broadcast(d, id, c->id_bytes, 0)) return -1;
    struct andrea_dist_device *x = calloc(1, sizeof *x);
    if (!x) return andrea_set_error("out of memory");
    x->be = be;
    x->comm = c->open(be, id, d->size, d->rank, d->timeout_s);
    if (!x->comm) return free(x), -1;
    d->device = x;
    if (wait_done(d, "joining the communicator")) {
        andrea_dist_device_close(d);
        return -1;
    }
    return 0;
}

static int usable_now(andrea_dist *d) {
    if (d->broken)
        return andrea_set_error("rank %d: an earlier collective failed; stopping", d->rank);
    if (!d->device || !d->device->comm)
        return andrea_set_error("rank %d: no device collectives open", d->rank);
    return 0;
}

int andrea_dist_device_start_sum(andrea_dist *d, float *buf, size_t n) {
    if (n == 0) return 0;
    if (usable_now(d)) return -1;
    struct andrea_dist_device *x = d->device;
    if (x->be->comm->allreduce_start(x->comm, buf, n)) {
        d->broken = 1;
        return -1;
    }
    x->in_flight++;
    x->bytes += sizeof(float) * n;
    return 0;
}

int andrea_dist_device_wait(andrea_dist *d) {
    if (usable_now(d)) return -1;
    return d->device->in_flight ? wait_done(d, "the gradient sums") : 0;
}

int andrea_dist_device_sum(andrea_dist *d, float *buf, size_t n) {
    return andrea_dist_device_start_sum(d, buf, n) || andrea_dist_device_wait(d) ? -1 : 0;
}

int andrea_dist_device_allgather(andrea_dist *d, float *buf, const int *counts,
                                 const int *displs) {
    if (usable_now(d)) return -1;
    struct andrea_dist_device *x = d->device;
    if (x->be->comm->allgather_start(x->comm, buf, counts, displs)) {
        d->broken = 1;
        return -1;
    }
    x->in_flight++;
    x->bytes += sizeof(float) * (size_t)counts[d->rank];
    return wait_done(d, "the parameters' all-gather");
}

void andrea_dist_device_close(andrea_dist *d) {
    struct andrea_dist_device *x = d ? d->device : NULL;
    if (!x) return;
    if (x->comm) {
        if (d->broken || x->in_flight) x->be->comm->abort(x->comm);
        else x->be->comm->close(x->comm);
    }
    free(x);
    d->device = NULL;
}
