/*
 * test_dist_device.c - the ranks' sums on device memory (src/parallel/dist_device.h) with
 * one rank, through the backend's device collectives (NCCL on cuda): the bootstrap (the id,
 * joining, polled to completion), a sum and an uneven all-gather on device buffers (one
 * rank: the buffer unchanged, read back through the backend), the bytes and time counted,
 * and close. The same code path as a multi-rank run, whose NCCL test is mpirun -np 2 in
 * test_cuda_cli.sh (in the emulator, NCCL over MPI; on a machine with two GPUs, NCCL).
 * In the emulator build it also checks that a host buffer is refused with a message.
 * Skips (77) where no backend with device collectives is available.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/backend.h"
#include "parallel/dist.h"
#include "parallel/dist_device.h"
#include "test_util.h"

enum { N = 5000 };

static float *device_copy(const andrea_backend *be, const float *host, size_t n) {
    float *d = be->ops.alloc(be, sizeof(float) * n);
    if (d) be->ops.upload(be, d, host, sizeof(float) * n);
    return d;
}

static int same_as(const andrea_backend *be, const float *d, const float *host, size_t n) {
    float *back = malloc(sizeof(float) * n);
    be->ops.download(be, back, d, sizeof(float) * n);
    int same = memcmp(back, host, sizeof(float) * n) == 0;
    free(back);
    return same;
}

int main(void) {
    const andrea_backend *be = andrea_backend_find("cuda");
    if (!be || !be->comm) {
        printf("test_dist_device: skipped: %s\n", !be ? andrea_error()
               : "the cuda backend was built without NCCL (no device collectives)");
        return 77;
    }
    andrea_dist *d = andrea_dist_local_open();
    CHECK(d != NULL);
    if (!d) return tu_finish("test_dist_device");
    d->timeout_s = 60;
    char why[200] = "";
    CHECK(andrea_dist_device_usable(d, be, why, sizeof why) == 1);
    int rc = andrea_dist_device_open(d, be);
    if (rc) printf("test_dist_device: open: %s\n", andrea_error());
    CHECK(rc == 0 && d->device != NULL);
    printf("test_dist_device: %s joined, one rank (%s)\n", be->comm->name, be->name);

    float host[N];
    for (int i = 0; i < N; i++) host[i] = sinf((float)i) * 3.0f;
    float *buf = device_copy(be, host, N);
    CHECK(buf != NULL);
    uint64_t bytes0 = d->comm_bytes;
    /* two sums in flight, one wait: the stream runs them in order */
    CHECK(andrea_dist_device_start_sum(d, buf, 1000) == 0);
    CHECK(andrea_dist_device_start_sum(d, buf + 1000, N - 1000) == 0);
    CHECK(andrea_dist_device_wait(d) == 0);
    CHECK(same_as(be, buf, host, N)); /* the sum over one rank is the buffer */
    CHECK(d->comm_bytes - bytes0 == sizeof(float) * N);
    CHECK(andrea_dist_device_sum(d, buf, N) == 0 && same_as(be, buf, host, N));
    int counts[1] = {N - 64}, displs[1] = {64};
    CHECK(andrea_dist_device_allgather(d, buf, counts, displs) == 0);
    CHECK(same_as(be, buf, host, N));
    CHECK(andrea_dist_device_wait(d) == 0); /* nothing in flight: returns at once */
#ifdef ANDREA_CUDA_EMU
    /* a host buffer is refused by the emulator's NCCL as a GPU's would fault on it; the
     * run is broken afterwards and says so */
    CHECK(andrea_dist_device_start_sum(d, host, N) == -1);
    CHECK(strstr(andrea_error(), "not device memory") != NULL);
    printf("test_dist_device: a host buffer: %s\n", andrea_error());
    CHECK(d->broken && andrea_dist_device_sum(d, buf, N) == -1);
#endif
    be->ops.free(be, buf);
    andrea_dist_close(d); /* closes the device communicator too */
    return tu_finish("test_dist_device");
}
