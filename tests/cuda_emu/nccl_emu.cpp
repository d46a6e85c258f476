/*
 * nccl_emu.cpp (the emulator's) - NCCL on the CPU (nccl.h says what it stands in for). A
 * communicator of several ranks is MPI_COMM_WORLD's processes (each emulates a device of
 * its own): the collectives are MPI's blocking calls on the emulated device memory, done
 * when the call returns, so the stream and its events have nothing pending afterwards.
 * Non-blocking communicators answer ncclInProgress from their initialisation and complete
 * on the first poll after it, as NCCL's may: the caller must poll before its first
 * collective, and one that does not is refused (ncclInvalidUsage).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"

#ifdef ANDREA_HAVE_MPI
#define OMPI_SKIP_MPICXX 1 /* MPI's C interface only: the C++ bindings need their library */
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

struct nccl_emu_comm {
    int nranks, rank;
    int ready;    /* its initialisation was seen complete (or it is blocking) */
    int pending;  /* non-blocking: the next poll says in progress once */
#ifdef ANDREA_HAVE_MPI
    MPI_Comm mpi;
#endif
};

static thread_local char last_error[256];

static ncclResult_t refuse(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static ncclResult_t refuse(ncclResult_t r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return r;
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    }
    return "unknown result code";
}
const char *ncclGetLastError(ncclComm_t) { return last_error; }

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0, sizeof *id);
    unsigned long long stamp[2] = {(unsigned long long)getpid(), (unsigned long long)time(NULL)};
    memcpy(id->internal, "andrea-nccl-emu", 16);
    memcpy(id->internal + 16, stamp, sizeof stamp);
    return ncclSuccess;
}

#ifdef ANDREA_HAVE_MPI
/* the world's processes are the communicator, every one given rank 0's id */
static ncclResult_t join_world(nccl_emu_comm *c, const ncclUniqueId *id) {
    int inited = 0, size = 0, rank = -1;
    MPI_Initialized(&inited);
    if (!inited) return refuse(ncclSystemError, "emulator: %d ranks need MPI initialised", c->nranks);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size != c->nranks || rank != c->rank)
        return refuse(ncclInvalidArgument, "emulator: rank %d of %d, but MPI_COMM_WORLD has "
                      "rank %d of %d", c->rank, c->nranks, rank, size);
    if (MPI_Comm_dup(MPI_COMM_WORLD, &c->mpi) != MPI_SUCCESS)
        return refuse(ncclSystemError, "emulator: MPI_Comm_dup failed");
    ncclUniqueId root = *id;
    MPI_Bcast(&root, (int)sizeof root, MPI_BYTE, 0, c->mpi);
    int same = memcmp(&root, id, sizeof root) == 0, all = 0;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, c->mpi);
    if (!all) return refuse(ncclInvalidArgument, "emulator: the ranks gave different unique ids");
    return ncclSuccess;
}
#endif

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config) {
    *comm = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return refuse(ncclInvalidArgument, "rank %d of %d", rank, nranks);
    if (memcmp(id.internal, "andrea-nccl-emu", 16) != 0)
        return refuse(ncclInvalidArgument, "not a unique id from ncclGetUniqueId");
    nccl_emu_comm *c = new nccl_emu_comm{};
    c->nranks = nranks, c->rank = rank;
    ncclResult_t r = ncclSuccess;
#ifdef ANDREA_HAVE_MPI
    c->mpi = MPI_COMM_NULL;
    if (nranks > 1) r = join_world(c, &id);
#else
    if (nranks > 1) r = refuse(ncclSystemError, "emulator: %d ranks need a build with MPI", nranks);
#endif
    if (r != ncclSuccess) {
        delete c;
        return r;
    }
    int blocking = !config || config->blocking;
    c->ready = blocking;
    c->pending = !blocking;
    *comm = c;
    return blocking ? ncclSuccess : ncclInProgress;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *state) {
    if (!c) return refuse(ncclInvalidArgument, "ncclCommGetAsyncError: no communicator");
    *state = c->pending ? ncclInProgress : ncclSuccess;
    if (c->pending) c->pending = 0;
    else c->ready = 1;
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t c) {
    return c ? ncclSuccess : refuse(ncclInvalidArgument, "ncclCommFinalize: no communicator");
}

static void release(ncclComm_t c, int free_mpi) {
#ifdef ANDREA_HAVE_MPI
    if (free_mpi && c->mpi != MPI_COMM_NULL) MPI_Comm_free(&c->mpi);
#else
    (void)free_mpi;
#endif
    delete c;
}
ncclResult_t ncclCommDestroy(ncclComm_t c) {
    if (c) release(c, 1);
    return ncclSuccess;
}
/* the peers may be gone: nothing collective, the MPI communicator is left behind */
ncclResult_t ncclCommAbort(ncclComm_t c) {
    if (c) release(c, 0);
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

/* what NCCL needs before it runs a collective on count floats at send and recv */
static ncclResult_t check_call(const char *fn, ncclComm_t c, const void *send, const void *recv,
                               size_t count, ncclDataType_t type, cudaStream_t stream) {
    if (!c) return refuse(ncclInvalidArgument, "%s: no communicator", fn);
    if (!c->ready)
        return refuse(ncclInvalidUsage, "%s: the communicator's initialisation was never seen "
                      "complete (ncclCommGetAsyncError)", fn);
    if (type != ncclFloat32) return refuse(ncclInvalidArgument, "%s: data type %d", fn, type);
    size_t bytes = count * sizeof(float);
    if (count && (!cuda_emu::is_device_span(send, bytes) || !cuda_emu::is_device_span(recv, bytes)))
        return refuse(ncclInvalidArgument, "%s: %zu floats at %p -> %p: not device memory", fn,
                      count, send, recv);
    if (cudaStreamSynchronize(stream) != cudaSuccess)
        return refuse(ncclInvalidArgument, "%s: not a stream", fn);
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t c, cudaStream_t stream) {
    ncclResult_t r = check_call("ncclAllReduce", c, send, recv, count, type, stream);
    if (r != ncclSuccess) return r;
    if (op != ncclSum) return refuse(ncclInvalidArgument, "ncclAllReduce: op %d", op);
    cuda_emu::device_access open;
    if (send != recv) memmove(recv, send, count * sizeof(float));
#ifdef ANDREA_HAVE_MPI
    for (size_t at = 0; c->nranks > 1 && at < count; at += INT_MAX / 2) {
        size_t n = count - at < INT_MAX / 2 ? count - at : INT_MAX / 2;
        if (MPI_Allreduce(MPI_IN_PLACE, (float *)recv + at, (int)n, MPI_FLOAT, MPI_SUM, c->mpi))
            return refuse(ncclRemoteError, "ncclAllReduce: MPI_Allreduce failed");
    }
#endif
    return ncclSuccess;
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t c, cudaStream_t stream) {
    ncclResult_t r = check_call("ncclBroadcast", c, send, recv, count, type, stream);
    if (r != ncclSuccess) return r;
    if (root < 0 || root >= c->nranks) return refuse(ncclInvalidArgument, "ncclBroadcast: root %d", root);
    cuda_emu::device_access open;
    if (c->rank == root && send != recv) memmove(recv, send, count * sizeof(float));
#ifdef ANDREA_HAVE_MPI
    for (size_t at = 0; c->nranks > 1 && at < count; at += INT_MAX / 2) {
        size_t n = count - at < INT_MAX / 2 ? count - at : INT_MAX / 2;
        if (MPI_Bcast((float *)recv + at, (int)n, MPI_FLOAT, root, c->mpi))
            return refuse(ncclRemoteError, "ncclBroadcast: MPI_Bcast failed");
    }
#endif
    return ncclSuccess;
}
