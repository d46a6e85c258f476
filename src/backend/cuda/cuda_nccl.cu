/*
 * cuda_nccl.cu - the cuda backend's device collectives (backend.h's andrea_backend_comm_ops)
 * through NCCL: the gradient sums of a data-parallel run on device buffers, without the
 * round trip through host memory that MPI needs.
 *
 * Communicators are non-blocking (ncclConfig_t.blocking = 0): no NCCL call waits for a
 * peer, so a rank that died turns into a timeout that src/parallel/dist_device.c enforces
 * (and then ncclCommAbort), never an endless wait inside NCCL. The collectives run on a
 * stream of their own, after an event recorded on the legacy default stream (where every
 * op runs, cuda_backend.cu): a sum starts once the backward has written its stretch, and
 * the backward's later kernels run beside it. poll() reads an event recorded after the
 * last collective: the stream runs them in order, so one event answers for all.
 *
 * Built with NCCL (ANDREA_HAVE_NCCL: cmake found nccl.h and libnccl, or the emulator's
 * stand-in); without it the backend has no device collectives and data-parallel sums go
 * through host memory. Never yet run on a GPU (docs/cuda.md).
 */
#include "backend/cuda/cuda_ops.h"

#ifdef ANDREA_HAVE_NCCL
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct andrea_backend_comm {
    ncclComm_t comm;
    cudaStream_t stream;   /* the collectives' own stream */
    cudaEvent_t queued;    /* on the default stream: the work before a collective */
    cudaEvent_t done;      /* on stream: after the last collective started */
    int nranks, rank;
    int joined;            /* ncclCommInitRankConfig has completed */
    double timeout_s;      /* the run's --dist-timeout: the longest an enqueue may take */
};

static int nccl_fail(const char *what, ncclResult_t r, const andrea_backend_comm *c) {
    const char *detail = c && c->comm ? ncclGetLastError(c->comm) : ncclGetLastError(NULL);
    return andrea_set_error("nccl %s (rank %d of %d): %s%s%s", what, c ? c->rank : -1,
                            c ? c->nranks : -1, ncclGetErrorString(r),
                            detail && *detail ? ": " : "", detail ? detail : "");
}

static int cuda_comm_fail(const char *what, cudaError_t e) {
    return andrea_set_error("nccl %s: %s", what, cudaGetErrorString(e));
}

/* "host/bus id": ranks on one machine with one device would deadlock NCCL */
static int nccl_device_key(be_t be, char *key, size_t cap) {
    (void)be;
    if (!cuda_ok()) return andrea_set_error("nccl: the cuda backend failed earlier");
    char host[128] = "", bus[64] = "";
    gethostname(host, sizeof host - 1);
    cudaError_t e = cudaDeviceGetPCIBusId(bus, (int)sizeof bus, andrea_cuda_state.device);
    if (e != cudaSuccess) return cuda_comm_fail("cudaDeviceGetPCIBusId", e);
    snprintf(key, cap, "%s/%s", host, bus);
    return 0;
}

static int nccl_make_id(be_t be, void *id) {
    (void)be;
    ncclResult_t r = ncclGetUniqueId((ncclUniqueId *)id);
    return r == ncclSuccess ? 0 : nccl_fail("ncclGetUniqueId", r, NULL);
}

static void comm_free(andrea_backend_comm *c) {
    if (c->done) cudaEventDestroy(c->done);
    if (c->queued) cudaEventDestroy(c->queued);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

static andrea_backend_comm *nccl_open(be_t be, const void *id, int nranks, int rank,
                                      double timeout_s) {
    (void)be;
    if (!cuda_ok()) return andrea_set_error("nccl: the cuda backend failed earlier"), nullptr;
    andrea_backend_comm *c = (andrea_backend_comm *)calloc(1, sizeof *c);
    if (!c) return andrea_set_error("nccl: out of memory"), nullptr;
    c->nranks = nranks, c->rank = rank, c->timeout_s = timeout_s;
    cudaError_t e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&c->queued, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming);
    if (e != cudaSuccess) return cuda_comm_fail("stream and events", e), comm_free(c), nullptr;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0; /* init and every call return at once: dist_device.c polls */
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    ncclResult_t r = ncclCommInitRankConfig(&c->comm, nranks, uid, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
        nccl_fail("ncclCommInitRankConfig", r, c);
        if (c->comm) ncclCommAbort(c->comm);
        comm_free(c);
        return nullptr;
    }
    return c;
}

/* The communicator's state: 1 ready, 0 an init or enqueue still in progress, -1 failed. */
static int comm_state(andrea_backend_comm *c, const char *what) {
    ncclResult_t st = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(c->comm, &st);
    if (r != ncclSuccess) return nccl_fail("ncclCommGetAsyncError", r, c);
    if (st == ncclInProgress) return 0;
    if (st != ncclSuccess) return nccl_fail(what, st, c);
    c->joined = 1;
    return 1;
}

/* A non-blocking communicator takes the next call only once the last one is enqueued
 * (ncclInProgress passed): that is host-side work, a moment, not the transfer. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int settled(andrea_backend_comm *c, const char *what) {
    double deadline = now_s() + c->timeout_s;
    for (long spins = 0;; spins++) {
        int s = comm_state(c, what);
        if (s != 0) return s < 0 ? -1 : 0;
        if (now_s() > deadline)
            return andrea_set_error("nccl %s (rank %d of %d): not settled within %g s: another "
                                    "rank died or hangs", what, c->rank, c->nranks, c->timeout_s);
        if (spins > 1000) usleep(20);
    }
}

/* The collective waits on the default stream's work so far; done follows it. */
static int order_after_queued(andrea_backend_comm *c, const char *what) {
    if (!cuda_ok()) return andrea_set_error("nccl %s: the cuda backend failed earlier", what);
    cudaError_t e = cudaEventRecord(c->queued, 0);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(c->stream, c->queued, 0);
    return e == cudaSuccess ? 0 : cuda_comm_fail(what, e);
}

static int mark_done(andrea_backend_comm *c, const char *what) {
    cudaError_t e = cudaEventRecord(c->done, c->stream);
    return e == cudaSuccess ? 0 : cuda_comm_fail(what, e);
}

static int nccl_allreduce_start(andrea_backend_comm *c, float *buf, size_t n) {
    const char *what = "ncclAllReduce";
    if (!c->joined && settled(c, "ncclCommInitRankConfig")) return -1;
    if (order_after_queued(c, what)) return -1;
    ncclResult_t r = ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, c->comm, c->stream);
    if (r != ncclSuccess && r != ncclInProgress) return nccl_fail(what, r, c);
    if (r == ncclInProgress && settled(c, what)) return -1;
    return mark_done(c, what);
}

/* Uneven parts (ZeRO-1's shards): one broadcast per rank from its part, grouped so NCCL
 * runs them together (ncclAllGather wants equal counts). */
static int nccl_allgather_start(andrea_backend_comm *c, float *buf, const int *counts,
                                const int *displs) {
    const char *what = "allgather (ncclBroadcast per rank)";
    if (!c->joined && settled(c, "ncclCommInitRankConfig")) return -1;
    if (order_after_queued(c, what)) return -1;
    ncclResult_t r = ncclGroupStart();
    for (int k = 0; k < c->nranks && r == ncclSuccess; k++) {
        float *part = buf + displs[k];
        if (counts[k] > 0)
            r = ncclBroadcast(part, part, (size_t)counts[k], ncclFloat32, k, c->comm, c->stream);
    }
    ncclResult_t g = ncclGroupEnd();
    if (r == ncclSuccess) r = g;
    if (r != ncclSuccess && r != ncclInProgress) return nccl_fail(what, r, c);
    if (r == ncclInProgress && settled(c, what)) return -1;
    return mark_done(c, what);
}

static int nccl_poll(andrea_backend_comm *c) {
    int s = comm_state(c, c->joined ? "collective" : "ncclCommInitRankConfig");
    if (s <= 0) return s;
    cudaError_t e = cudaEventQuery(c->done); /* never recorded: cudaSuccess */
    if (e == cudaErrorNotReady) return 0;
    return e == cudaSuccess ? 1 : cuda_comm_fail("cudaEventQuery", e);
}

static void nccl_abort(andrea_backend_comm *c) {
    if (!c) return;
    if (c->comm) ncclCommAbort(c->comm); /* frees it; in-flight work is dropped */
    c->comm = nullptr;
    comm_free(c);
}

static void nccl_close(andrea_backend_comm *c) {
    if (!c) return;
    if (c->comm && c->joined && ncclCommFinalize(c->comm) == ncclInProgress) settled(c, "finalize");
    if (c->comm) ncclCommDestroy(c->comm);
    c->comm = nullptr;
    comm_free(c);
}

const andrea_backend_comm_ops cuda_nccl_ops = {
    "nccl",
    sizeof(ncclUniqueId),
    nccl_device_key,
    nccl_make_id,
    nccl_open,
    nccl_allreduce_start,
    nccl_allgather_start,
    nccl_poll,
    nccl_abort,
    nccl_close,
};
#endif
