/*
 * cuda_internal.h - what the CUDA backend's files share: the instance's state (device,
 * cuBLAS handle, the first error), the checks every CUDA call and launch goes through,
 * and the host fallback that runs an op through the "cpu" backend on host copies.
 *
 * Errors. Operations return void (the ops table's contract), so a failure is recorded:
 * the first one is kept in the state (andrea_cuda_last_error) and set as this thread's
 * andrea_error(), naming the op, its shapes and the CUDA/cuBLAS message; every later op
 * returns at once without touching memory (a sticky failure, as CUDA's own launch errors
 * are), so the caller sees garbage never silently: its next error check or NaN check fails.
 * The library never prints or exits.
 */
#ifndef ANDREA_BACKEND_CUDA_INTERNAL_H
#define ANDREA_BACKEND_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" {
#include "backend/backend.h"
#include "util/error.h"
}

typedef struct {
    int probed, usable;     /* device probe done once (cuda_probe); usable: a device runs */
    char why[256];          /* why not, when !usable */
    char name[256];         /* the device's name (cudaGetDeviceProperties), when usable */
    int device;             /* the device every op runs on */
    volatile int failed;    /* an op failed: later ops do nothing */
    int failed_capturing;   /* ... while its thread captured a graph (cuda_graph.cu may undo it) */
    char err[512];          /* the first failure */
} cuda_state;

extern cuda_state andrea_cuda_state;

/* 1 when the device is usable (probing it the first time), else 0 with why set. */
int cuda_probe(void);

/* Records a failure of op (shapes in the printf-style tail) and returns -1. */
int cuda_failf(const char *op, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Binds the calling thread to the backend's device, once per thread (the server calls ops
 * from many); 0, or -1 with the failure recorded. */
int cuda_bind_thread(void);
extern __thread int cuda_thread_bound;

/* The stream this thread's ops are issued to: the legacy default stream (0), which orders
 * them after every other thread's, or, while this thread captures a graph (cuda_graph.cu),
 * the stream being captured. Every launch, copy and product takes it. */
extern __thread cudaStream_t cuda_stream_now;
static inline cudaStream_t cuda_stream(void) { return cuda_stream_now; }
/* 1 while this thread captures a graph: an op may not wait for the device, read a result
 * back, or grow a scratch buffer */
static inline int cuda_capturing(void) { return cuda_stream_now != 0; }

/* 1 when ops may run (no earlier failure, this thread on the device), else 0. */
static inline int cuda_ok(void) {
    return !andrea_cuda_state.failed && (cuda_thread_bound || cuda_bind_thread() == 0);
}

/* This thread's cuBLAS handle (one per thread: a handle is not for concurrent use): with
 * pedantic math (exact fp32, no TF32: the fp32 products), or cuBLAS's default math (tensor
 * cores: the bf16 products), set to cuda_stream(); NULL with the failure recorded. */
cublasHandle_t cuda_blas(const char *op, int pedantic);

/* A kernel launch on cuda_stream(), CU_LAUNCH(kernel, grid, block, shared_bytes)(args...), and a kernel's
 * dynamic shared memory, CU_DYN_SHARED(type, name), 128-byte aligned (WMMA tiles need 32):
 * nvcc's <<<...>>> and extern __shared__, or, in the test build that runs this folder on the
 * CPU (tests/cuda_emu/, -DANDREA_CUDA_EMU=ON), the emulator's launch and buffer. Past 48 KiB
 * of dynamic shared memory a launch fails unless the kernel's
 * cudaFuncAttributeMaxDynamicSharedMemorySize was raised first (cudaFuncSetAttribute; sm_90:
 * at most 227 KiB a block, static included). */
#ifdef ANDREA_CUDA_EMU
#define CU_LAUNCH(kernel, grid, block, shared)                                                \
    cuda_emu::launch(#kernel, grid, block, shared, cuda_stream(), kernel)
#define CU_DYN_SHARED(type, name) type *name = (type *)cuda_emu::dynamic_shared()
#else
#define CU_LAUNCH(kernel, grid, block, shared) kernel<<<grid, block, shared, cuda_stream()>>>
#define CU_DYN_SHARED(type, name) extern __shared__ __align__(128) type name[]
#endif

/* a failed CUDA call: recorded, and the op returns ret */
#define CU_CHECK_R(ret, call, op, ...)                                                       \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            cuda_failf(op, cudaGetErrorString(e_), __VA_ARGS__);                             \
            return ret;                                                                      \
        }                                                                                    \
    } while (0)
/* in a function returning void (the empty argument: `return ;`) */
#define CU_CHECK(call, op, ...) CU_CHECK_R(, call, op, __VA_ARGS__)
#define CUBLAS_CHECK(call, op, ...)                                                          \
    do {                                                                                     \
        cublasStatus_t s_ = (call);                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            cuda_failf(op, cublasGetStatusString(s_), __VA_ARGS__);                          \
            return;                                                                          \
        }                                                                                    \
    } while (0)
/* after every kernel launch: the launch's own error (bad configuration, no kernel image) */
#define CU_LAUNCHED(op, ...) CU_CHECK(cudaGetLastError(), op, __VA_ARGS__)
#define CU_LAUNCHED_R(ret, op, ...) CU_CHECK_R(ret, cudaGetLastError(), op, __VA_ARGS__)

/* Blocks of 256 threads covering n items (at most 65535 * 32 blocks: grid-stride loops). */
static inline unsigned cuda_blocks(size_t n) {
    size_t b = (n + 255) / 256;
    return (unsigned)(b == 0 ? 1 : b > 2097120 ? 2097120 : b);
}

/* Device scratch, one buffer per purpose and per host thread, grown as needed and never
 * freed. Ops used to cudaMalloc and cudaFree their temporaries on every call, and cudaFree
 * waits for the whole device: every such op was a synchronisation. Reuse is safe because
 * all of a thread's ops run in order on one stream (a later op's use of a buffer starts
 * after an earlier op's has finished; a pageable host-to-device copy waits for the stream
 * first; a graph replays on a blocking stream, which the legacy stream waits for). An op
 * never holds two of one purpose. A graph keeps the addresses it captured: growing a buffer
 * during a capture fails (capture after a step at the same shape), and a buffer that grows
 * while a graph lives is kept, not freed, until the graphs are gone (cuda_graph.cu). NULL
 * with the failure recorded. */
enum {
    CUDA_SCRATCH_STAGING, /* host arrays an op receives: token ids, targets, row ids */
    CUDA_SCRATCH_SMALL,   /* per-row losses, reduction parts, a counter */
    CUDA_SCRATCH_ATT,     /* the flash backward's D (B, NH, T), or its probabilities
                           * (B, NH, T, T) where the head is too large for the tiles */
    CUDA_SCRATCH_DPRE,    /* the attention backward's score gradients, (B, NH, T, T) */
    CUDA_SCRATCH_BF16,    /* cuda-bf16's rounded product operands */
    CUDA_SCRATCH_COLSUM,  /* column sums' per-chunk partials (cuda_colsum.cu) */
    CUDA_SCRATCH_LT,      /* cuBLASLt's workspace (cuda_lt.cu) */
    CUDA_SCRATCH_N
};
void *cuda_scratch(int purpose, size_t bytes, const char *op);

/* A device copy of a host array an op receives (in the STAGING scratch), on cuda_stream():
 * during a capture the array must be pinned (the graph reads it again at each replay). NULL
 * on failure. */
void *cuda_upload_staging(const void *host, size_t bytes, const char *op);

/* During a capture: a device slot of n doubles that the graph's replays fill with an op's
 * host-visible result (andrea_backend_graph_ops.results reads them, in order of the calls);
 * NULL, with the failure recorded, when the capture has no room. */
double *cuda_capture_result(int n, const char *op);
/* while captured graphs live, scratch buffers are kept when they grow (cuda_backend.cu) */
void cuda_scratch_keep(int on);

#endif
