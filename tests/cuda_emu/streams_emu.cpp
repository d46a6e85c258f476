/*
 * streams_emu.cpp (the emulator's) - streams, events, captures and graphs. Work runs when
 * it is issued (a launch returns once its grid has run, a copy once it is copied), so a
 * stream never has anything pending: synchronizing returns at once and an event is complete
 * when recorded. What is checked is what a GPU would refuse: handles never created or
 * already destroyed.
 *
 * A capture (cudaStreamBeginCapture) records the work issued to its stream, in order, and
 * its graph replays that work at each cudaGraphLaunch: a kernel with the arguments it was
 * launched with, a copy from the addresses it was given (so a pinned input is read again at
 * each replay, as on a GPU). Refused while a thread captures, and the capture invalidated
 * (its cudaStreamEndCapture then fails), as CUDA refuses them: a call that waits for the
 * device or allocates (cudaMemcpy, cudaMemset, cudaMalloc, cudaFree, synchronizing),
 * work for the legacy stream (it would depend on the capture), and an asynchronous copy
 * of pageable host memory into a capture. One capture per stream and per thread.
 */
#include <stdio.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <vector>

#include "cuda_runtime.h"

struct cuda_emu_capture {
    std::vector<std::function<void()>> work;
    int invalid; /* a refused call happened during it */
    char why[256];
};
struct cuda_emu_stream {
    unsigned flags;
    cuda_emu_capture *capture; /* while one is active */
};
struct cuda_emu_graph {
    std::vector<std::function<void()>> work;
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

cudaError_t cuda_emu::stream_valid(const char *fn, cudaStream_t s) { return check_stream(fn, s); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    *s = new cuda_emu_stream{flags, NULL};
    track(*s, 1);
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) {
    return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!s) return cuda_emu::set_error(cudaErrorInvalidResourceHandle, "cudaStreamDestroy(0)");
    cudaError_t e = check_stream("cudaStreamDestroy", s);
    if (e) return e;
    if (s->capture)
        return cuda_emu::set_error(cudaErrorStreamCaptureUnsupported,
                                   "cudaStreamDestroy: the stream is being captured");
    track(s, 0);
    delete s;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    cudaError_t e = cuda_emu::not_capturing("cudaStreamSynchronize");
    return e ? e : check_stream("cudaStreamSynchronize", s);
}

/* ---- captures and graphs ---------------------------------------------------------------- */

static thread_local cudaStream_t capturing_here; /* the stream this thread captures */

/* refuses what: the capture on this thread is invalidated and the call fails with e */
static cudaError_t refuse(cudaError_t e, const char *what) {
    cuda_emu_capture *c = capturing_here->capture;
    if (!c->invalid) {
        c->invalid = 1;
        snprintf(c->why, sizeof c->why, "%s", what);
    }
    return cuda_emu::set_error(e, "%s during a stream capture", what);
}

cudaError_t cuda_emu::not_capturing(const char *what) {
    return capturing_here ? refuse(cudaErrorStreamCaptureUnsupported, what) : cudaSuccess;
}

cudaError_t cuda_emu::enqueue(cudaStream_t s, const char *what, std::function<void()> work) {
    cudaError_t e = check_stream(what, s);
    if (e) return e;
    if (!s && capturing_here) return refuse(cudaErrorStreamCaptureImplicit, what);
    if (s && s->capture) {
        if (capturing_here != s)
            return cuda_emu::set_error(cudaErrorStreamCaptureWrongThread,
                                       "%s: the stream is captured by another thread", what);
        s->capture->work.push_back(std::move(work));
        return cudaSuccess;
    }
    work();
    return cudaSuccess;
}

cudaError_t cuda_emu::capture_check_host(cudaStream_t s, const char *what, const void *host,
                                         size_t bytes) {
    if (!s || !s->capture || is_pinned(host, bytes)) return cudaSuccess;
    return refuse(cudaErrorStreamCaptureUnsupported, what);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
    cudaError_t e = check_stream("cudaStreamBeginCapture", s);
    if (e) return e;
    if (!s)
        return cuda_emu::set_error(cudaErrorStreamCaptureUnsupported,
                                   "cudaStreamBeginCapture: the legacy stream cannot be captured");
    if (s->capture || capturing_here)
        return cuda_emu::set_error(cudaErrorStreamCaptureUnsupported,
                                   "cudaStreamBeginCapture: a capture is already active");
    if (mode != cudaStreamCaptureModeThreadLocal && mode != cudaStreamCaptureModeGlobal)
        return cuda_emu::set_error(cudaErrorInvalidValue, "cudaStreamBeginCapture mode %d",
                                   (int)mode);
    s->capture = new cuda_emu_capture{{}, 0, {0}};
    capturing_here = s;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
    *g = NULL;
    cudaError_t e = check_stream("cudaStreamEndCapture", s);
    if (e) return e;
    if (!s || !s->capture)
        return cuda_emu::set_error(cudaErrorInvalidValue, "cudaStreamEndCapture: not capturing");
    if (capturing_here != s)
        return cuda_emu::set_error(cudaErrorStreamCaptureWrongThread,
                                   "cudaStreamEndCapture: captured by another thread");
    cuda_emu_capture *c = s->capture;
    s->capture = NULL;
    capturing_here = NULL;
    if (c->invalid) {
        e = cuda_emu::set_error(cudaErrorStreamCaptureInvalidated, "refused during it: %s",
                                c->why);
    } else {
        *g = new cuda_emu_graph{std::move(c->work)};
        track(*g, 1);
    }
    delete c;
    return e;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status) {
    cudaError_t e = check_stream("cudaStreamIsCapturing", s);
    if (e) return e;
    *status = !s || !s->capture       ? cudaStreamCaptureStatusNone
              : s->capture->invalid ? cudaStreamCaptureStatusInvalidated
                                    : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

static cudaError_t check_graph(const char *fn, cudaGraph_t g) {
    if (g && alive(g)) return cudaSuccess;
    return cuda_emu::set_error(cudaErrorInvalidResourceHandle, "%s: graph %p", fn, (void *)g);
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags) {
    *x = NULL;
    cudaError_t e = check_graph("cudaGraphInstantiate", g);
    if (e) return e;
    if (flags) return cuda_emu::set_error(cudaErrorInvalidValue, "cudaGraphInstantiate flags");
    *x = new cuda_emu_graph{g->work};
    track(*x, 1);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) {
    cudaError_t e = check_graph("cudaGraphLaunch", x);
    if (e) return e;
    for (auto &w : x->work) /* each node in turn: a capture of one stream is a chain */
        if ((e = cuda_emu::enqueue(s, "cudaGraphLaunch", w)) != cudaSuccess) return e;
    return cudaSuccess;
}

static cudaError_t drop_graph(const char *fn, cudaGraph_t g) {
    cudaError_t e = check_graph(fn, g);
    if (e) return e;
    track(g, 0);
    delete g;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) { return drop_graph("cudaGraphExecDestroy", x); }
cudaError_t cudaGraphDestroy(cudaGraph_t g) { return drop_graph("cudaGraphDestroy", g); }

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
cudaError_t cudaEventQuery(cudaEvent_t e) {
    cudaError_t r = cuda_emu::not_capturing("cudaEventQuery");
    return r ? r : check_event("cudaEventQuery", e);
}
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
