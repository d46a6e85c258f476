/*
 * streams_emu.cpp (the emulator's) - streams and events. Work runs when it is issued (a
 * launch returns once its grid has run, a copy once it is copied), so a stream never has
 * anything pending: synchronizing returns at once and an event is complete when recorded.
 * What is checked is what a GPU would refuse: handles never created or already destroyed.
 */
#include <stdio.h>
#include <unistd.h>

#include <mutex>
#include <set>

#include "cuda_runtime.h"

struct cuda_emu_stream {
    unsigned flags;
};
struct cuda_emu_event {
    unsigned flags;
};

static std::mutex handle_lock;
static std::set<const void *> live; /* streams and events created and not destroyed */

static int alive(const void *h) {
    std::lock_guard<std::mutex> g(handle_lock);
    return live.count(h) != 0;
}
static void track(const void *h, int on) {
    std::lock_guard<std::mutex> g(handle_lock);
    if (on) live.insert(h);
    else live.erase(h);
}
/* the legacy default stream (0) or one created and not yet destroyed */
static cudaError_t check_stream(const char *fn, cudaStream_t s) {
    if (!s || alive(s)) return cudaSuccess;
    return cuda_emu::set_error(cudaErrorInvalidResourceHandle, "%s: stream %p", fn, (void *)s);
}
static cudaError_t check_event(const char *fn, cudaEvent_t e) {
    if (e && alive(e)) return cudaSuccess;
    return cuda_emu::set_error(cudaErrorInvalidResourceHandle, "%s: event %p", fn, (void *)e);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    *s = new cuda_emu_stream{flags};
    track(*s, 1);
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!s) return cuda_emu::set_error(cudaErrorInvalidResourceHandle, "cudaStreamDestroy(0)");
    cudaError_t e = check_stream("cudaStreamDestroy", s);
    if (e) return e;
    track(s, 0);
    delete s;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return check_stream("cudaStreamSynchronize", s); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    *e = new cuda_emu_event{flags};
    track(*e, 1);
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    cudaError_t r = check_event("cudaEventDestroy", e);
    if (r) return r;
    track(e, 0);
    delete e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    cudaError_t r = check_event("cudaEventRecord", e);
    return r ? r : check_stream("cudaEventRecord", s);
}
cudaError_t cudaEventQuery(cudaEvent_t e) { return check_event("cudaEventQuery", e); }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
    cudaError_t r = check_event("cudaStreamWaitEvent", e);
    if (!r && flags) r = cuda_emu::set_error(cudaErrorInvalidValue, "cudaStreamWaitEvent flags %u", flags);
    return r ? r : check_stream("cudaStreamWaitEvent", s);
}

cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device) {
    if (device != 0) return cuda_emu::set_error(cudaErrorInvalidDevice, "device %d of 1", device);
    snprintf(bus, (size_t)len, "emu-%ld:00:00.0", (long)getpid());
    return cudaSuccess;
}
