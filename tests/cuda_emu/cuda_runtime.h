/*
 * cuda_runtime.h (the emulator's) - the part of the CUDA runtime the backend uses, run on
 * the CPU so that src/backend/cuda/ executes in a test build on a machine without a GPU
 * (cmake -DANDREA_CUDA_EMU=ON; tests/cuda_emu/README.md says what it does and does not
 * prove). Kernels are plain C++ functions; a launch runs every block in turn and every
 * thread of a block as a fiber, so __syncthreads() is a real barrier and __shared__
 * memory (a function-local static: one block runs at a time) is shared by the block.
 * Device memory is host memory, but every allocation is registered: a kernel argument or
 * cudaMemcpy pointer outside a device allocation is an error, as an illegal address is on
 * a GPU. Never part of a build that runs on a GPU.
 */
#ifndef ANDREA_CUDA_EMU_RUNTIME_H
#define ANDREA_CUDA_EMU_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>

struct cuda_emu_stream; /* cudaStream_t's, below */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
    unsigned x, y, z;
};

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevice = 101,
    cudaErrorNoDevice = 100,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorIllegalAddress = 700,
    cudaErrorNotReady = 600,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureImplicit = 906,
    cudaErrorStreamCaptureWrongThread = 908,
} cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int major, minor, multiProcessorCount;
};
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaMalloc(void **p, size_t bytes);
template <class T> static inline cudaError_t cudaMalloc(T **p, size_t bytes) {
    return cudaMalloc((void **)p, bytes);
}
cudaError_t cudaFree(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
cudaError_t cudaDeviceSynchronize(void);
/* pinned host memory: host memory a copy captured into a graph may read (a pageable one is
 * refused there, as by CUDA) */
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaFreeHost(void *p);

/* a kernel's attributes: only the one the backend sets. A launch may ask for up to 48 KiB of
 * dynamic shared memory; more only after this attribute was raised to at least that much
 * (at most 232448 bytes, 227 KiB: sm_90's opt-in limit per block) */
enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};
namespace cuda_emu {
typedef void (*kernel_key)(void); /* a kernel, by its address */
cudaError_t set_attribute(kernel_key k, cudaFuncAttribute attr, int value);
} // namespace cuda_emu
template <class T>
static inline cudaError_t cudaFuncSetAttribute(T *kernel, cudaFuncAttribute attr, int value) {
    return cuda_emu::set_attribute(reinterpret_cast<cuda_emu::kernel_key>(kernel), attr, value);
}
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);

/* ---- what a kernel sees -------------------------------------------------------------- */

namespace cuda_emu {
extern uint3 thread_idx, block_idx;
extern dim3 block_dim, grid_dim;
void syncthreads(int line);
void syncwarp(void); /* a barrier of the 32 threads of the caller's warp */
void *dynamic_shared(void);
/* 1 when p lies in (or one past the end of) a device allocation */
int is_device(const void *p);
} // namespace cuda_emu

#define threadIdx (cuda_emu::thread_idx)
#define blockIdx (cuda_emu::block_idx)
#define blockDim (cuda_emu::block_dim)
#define gridDim (cuda_emu::grid_dim)
#define __syncthreads() cuda_emu::syncthreads(__LINE__)
#define __syncwarp(...) cuda_emu::syncwarp()

/* one block runs at a time on one host thread: atomics are plain updates */
template <class T> static inline T atomicAdd(T *p, T v) {
    T old = *p;
    *p = old + v;
    return old;
}
template <class T> static inline T atomicMax(T *p, T v) {
    T old = *p;
    *p = old > v ? old : v;
    return old;
}
static inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline int __float_as_int(float f) { return (int)__float_as_uint(f); }
static inline float __int_as_float(int i) { return __uint_as_float((unsigned)i); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline float __fdividef(float a, float b) { return a / b; }

/* ---- launches: CU_LAUNCH(kernel, grid, block, shared_bytes)(args) (cuda_internal.h) --- */

namespace cuda_emu {
struct config {
    dim3 grid, block;
    size_t shared; /* dynamic shared memory, bytes */
    const char *name;
    kernel_key kernel; /* whose attributes bound the launch */
};
/* 0 when the configuration is one a GPU launches, else -1 with the last error set */
int launch_check(const config &c);
/* records a kernel argument that is not device memory (index: its position) */
void bad_pointer(const config &c, int index, const void *p);
/* runs body(ctx) for every thread of every block */
void run_grid(const config &c, void (*body)(void *), void *ctx);

template <class T> static inline int check_arg(const config &c, int i, T *p) {
    if (p && !is_device(p)) {
        bad_pointer(c, i, p);
        return -1;
    }
    return 0;
}
template <class T> static inline int check_arg(const config &, int, const T &) { return 0; }

/* runs work now, or, when s is being captured, records it into the capture (a graph
 * replays it); cudaSuccess, else the error (set as the last error) */
cudaError_t enqueue(struct cuda_emu_stream *s, const char *what, std::function<void()> work);

template <class F> struct bound {
    config c;
    F f;
    struct cuda_emu_stream *stream;
    template <class... A> void operator()(A... a) const {
        if (launch_check(c)) return; /* checked at the launch, captured or not */
        int i = 0, bad = 0;
        ((bad |= check_arg(c, i++, a)), ...);
        if (bad) return;
        config cc = c;
        F ff = f;
        enqueue(stream, c.name, [cc, ff, a...]() {
            auto call = [&]() { ff(a...); };
            run_grid(cc, [](void *p) { (*(decltype(call) *)p)(); }, &call);
        });
    }
};
template <class F>
static inline bound<F> launch(const char *name, dim3 grid, dim3 block, size_t shared,
                              struct cuda_emu_stream *stream, F f) {
    return bound<F>{config{grid, block, shared, name, reinterpret_cast<kernel_key>(f)}, f,
                    stream};
}
} // namespace cuda_emu

/* ---- streams and events: the work a stream is given runs at once (a launch returns when
 * its grid is done), so every event has happened when it is recorded; the handles are
 * checked (a stream or event never created, or destroyed, is an invalid handle). A stream
 * being captured records its work instead, for a graph to replay (streams_emu.cpp says
 * what a capture refuses) ------------------------------------------------------------- */

typedef struct cuda_emu_stream *cudaStream_t; /* 0: the legacy default stream */
typedef struct cuda_emu_event *cudaEvent_t;
enum { cudaStreamDefault = 0, cudaStreamNonBlocking = 1 };
enum { cudaEventDefault = 0, cudaEventDisableTiming = 2 };
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamCreate(cudaStream_t *s); /* a blocking stream */
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s);

/* graphs: a capture's work in order, replayed by cudaGraphLaunch */
enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2,
};
typedef struct cuda_emu_graph *cudaGraph_t;
typedef struct cuda_emu_graph *cudaGraphExec_t; /* an instance: a copy of the graph */
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e);
cudaError_t cudaGraphDestroy(cudaGraph_t g);

/* "emu-PID:00:00.0": each process emulates a device of its own */
cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device);

/* ---- for the emulator's other parts (nccl_emu.cpp, streams_emu.cpp) ------------------- */
namespace cuda_emu {
/* sets the thread's last error (with a detail for cudaGetErrorString) and returns e */
cudaError_t set_error(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 when [p, p + bytes) lies inside one device allocation */
int is_device_span(const void *p, size_t bytes);
/* a call that waits for the device or allocates: refused (and the capture invalidated)
 * while this thread captures a stream; cudaSuccess or the error */
cudaError_t not_capturing(const char *what);
/* cudaSuccess unless s is being captured and host is not pinned: a capture reads it at each
 * replay, which pageable memory cannot promise (the capture is invalidated) */
cudaError_t capture_check_host(cudaStream_t s, const char *what, const void *host, size_t bytes);
/* 1 when [p, p + bytes) lies inside one pinned host allocation (cudaMallocHost) */
int is_pinned(const void *p, size_t bytes);
/* cudaSuccess for the legacy stream or a live stream, else the error */
cudaError_t stream_valid(const char *fn, cudaStream_t s);
/* device memory is readable and writable by the host while one of these lives */
struct device_access {
    device_access();
    ~device_access();
    device_access(const device_access &) = delete;
    device_access &operator=(const device_access &) = delete;
};
} // namespace cuda_emu

#endif
