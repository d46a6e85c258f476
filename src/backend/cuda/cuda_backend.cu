/*
 * cuda_backend.cu - the "cuda" backend's instance: the device probe (available,
 * why_unavailable), the error record, and the memory operations (alloc, free, upload,
 * download, zero, copy_rows, synchronize, fill). The compute operations are in
 * cuda_elementwise.cu, cuda_dense.cu and cuda_host.cu; cuda_ops.cu assembles the table.
 *
 * Every op runs on the legacy default stream of one device (device_pick.h: ANDREA_CUDA_DEVICE,
 * else the rank's index on its machine under mpirun, else 0), or on the stream a graph
 * capture records (cuda_graph.cu), so ops are ordered as issued and download (cudaMemcpy)
 * waits for them. Never yet run on a GPU: docs/cuda.md says what has been checked and what
 * has not.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_api.h"
#include "backend/device_pick.h"
#include "backend/cuda/cuda_internal.h"

cuda_state andrea_cuda_state;

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe(void) {
    cuda_state *s = &andrea_cuda_state;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(s->why, sizeof s->why, "no CUDA device (cudaGetDeviceCount: %s)",
                 cudaGetErrorString(e));
    } else if (n <= 0) {
        snprintf(s->why, sizeof s->why, "no CUDA device on this machine");
    } else if (andrea_device_pick(getenv("ANDREA_CUDA_DEVICE"), andrea_device_local_rank(), n,
                                  &s->device, s->why, sizeof s->why)) {
        /* why says which value */
    } else if ((e = cudaSetDevice(s->device)) != cudaSuccess) {
        snprintf(s->why, sizeof s->why, "cudaSetDevice(%d): %s", s->device, cudaGetErrorString(e));
    } else {
        cuda_thread_bound = 1;
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, s->device) == cudaSuccess)
            snprintf(s->name, sizeof s->name, "%s", prop.name);
        cublasHandle_t h = NULL;
        cublasStatus_t b = cublasCreate(&h);
        if (b != CUBLAS_STATUS_SUCCESS)
            snprintf(s->why, sizeof s->why, "cuBLAS: %s", cublasGetStatusString(b));
        else
            s->usable = 1;
        if (h) cublasDestroy(h); /* the probe only: each thread makes its own (cuda_blas) */
    }
    s->probed = 1;
}

__thread int cuda_thread_bound;
__thread cudaStream_t cuda_stream_now;
static __thread cublasHandle_t thread_blas[2]; /* [0] pedantic fp32, [1] default math */
static __thread cudaStream_t thread_blas_stream[2]; /* the stream each handle was set to */

int cuda_bind_thread(void) {
    cudaError_t e = cudaSetDevice(andrea_cuda_state.device);
    if (e != cudaSuccess) return cuda_failf("bind thread", cudaGetErrorString(e), "device %d",
                                            andrea_cuda_state.device);
    cuda_thread_bound = 1;
    return 0;
}

/* Handles are never destroyed: one per thread that ran a product, for the process's life. */
cublasHandle_t cuda_blas(const char *op, int pedantic) {
    int i = pedantic ? 0 : 1;
    cublasHandle_t *slot = &thread_blas[i];
    if (*slot && thread_blas_stream[i] != cuda_stream()) {
        /* only on a change: cublasSetStream also resets the handle's workspace */
        cublasStatus_t b = cublasSetStream(*slot, cuda_stream());
        if (b != CUBLAS_STATUS_SUCCESS) {
            cuda_failf(op, cublasGetStatusString(b), "%s", "cublasSetStream");
            return NULL;
        }
        thread_blas_stream[i] = cuda_stream();
    }
    if (*slot) return *slot;
    cublasHandle_t h = NULL;
    cublasStatus_t b = cublasCreate(&h);
    if (b == CUBLAS_STATUS_SUCCESS)
        b = cublasSetMathMode(h, pedantic ? CUBLAS_PEDANTIC_MATH : CUBLAS_DEFAULT_MATH);
    if (b == CUBLAS_STATUS_SUCCESS) b = cublasSetStream(h, cuda_stream());
    thread_blas_stream[i] = cuda_stream();
    if (b != CUBLAS_STATUS_SUCCESS) {
        if (h) cublasDestroy(h);
        cuda_failf(op, cublasGetStatusString(b), "%s", "cublasCreate");
        return NULL;
    }
    return *slot = h;
}

int cuda_probe(void) {
    pthread_once(&probe_once, probe);
    return andrea_cuda_state.usable;
}

int cuda_failf(const char *op, const char *what, const char *fmt, ...) {
    cuda_state *s = &andrea_cuda_state;
    char shapes[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(shapes, sizeof shapes, fmt, ap);
    va_end(ap);
    if (!s->failed) {
        snprintf(s->err, sizeof s->err, "cuda %s (%s): %s", op, shapes, what);
        s->failed_capturing = cuda_capturing();
        s->failed = 1;
    }
    andrea_set_error("cuda %s (%s): %s", op, shapes, what);
    return -1;
}

extern "C" const char *andrea_cuda_last_error(void) {
    return andrea_cuda_state.failed ? andrea_cuda_state.err : NULL;
}

extern "C" const char *andrea_cuda_device_name(void) {
    return cuda_probe() && andrea_cuda_state.name[0] ? andrea_cuda_state.name : NULL;
}

static __thread void *scratch[CUDA_SCRATCH_N];
static __thread size_t scratch_cap[CUDA_SCRATCH_N];
static int graphs_alive; /* captured graphs not yet destroyed, on any thread */
static __thread void **kept;  /* buffers grown out of while graphs lived: theirs to use */
static __thread size_t n_kept;

/* Frees the buffers kept for graphs when none is left (a graph of this thread ended). */
void cuda_scratch_keep(int on) {
    if (__atomic_add_fetch(&graphs_alive, on ? 1 : -1, __ATOMIC_SEQ_CST) > 0) return;
    for (size_t i = 0; i < n_kept; i++) cudaFree(kept[i]);
    free(kept);
    kept = NULL, n_kept = 0;
}

/* the old buffer of a purpose that grows: freed, or kept while a graph may still use it */
static void retire(void *p) {
    if (!__atomic_load_n(&graphs_alive, __ATOMIC_SEQ_CST)) {
        cudaFree(p); /* waits for its last users */
        return;
    }
    void **k = (void **)realloc(kept, sizeof(void *) * (n_kept + 1));
    if (!k) { /* no room to remember it: leaked, never freed under a graph */
        return;
    }
    kept = k;
    kept[n_kept++] = p;
}

void *cuda_scratch(int purpose, size_t bytes, const char *op) {
    if (bytes <= scratch_cap[purpose] && scratch[purpose]) return scratch[purpose];
    if (cuda_capturing()) {
        cuda_failf(op, "a scratch buffer would grow during a graph capture (capture after a "
                   "step at the same shape)", "scratch %d of %zu bytes", purpose, bytes);
        return NULL;
    }
    if (scratch[purpose]) retire(scratch[purpose]);
    scratch[purpose] = NULL, scratch_cap[purpose] = 0;
    size_t grown = bytes < 4096 ? 4096 : bytes + bytes / 4; /* amortised growth */
    CU_CHECK_R(NULL, cudaMalloc(&scratch[purpose], grown), op, "scratch %d of %zu bytes",
               purpose, grown);
    scratch_cap[purpose] = grown;
    return scratch[purpose];
}

void *cuda_upload_staging(const void *host, size_t bytes, const char *op) {
    void *d = cuda_scratch(CUDA_SCRATCH_STAGING, bytes, op);
    if (d && bytes)
        CU_CHECK_R(NULL, cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, cuda_stream()),
                   op, "staging %zu bytes", bytes);
    return d;
}

/* ---- memory ------------------------------------------------------------------------- */

void *cuda_alloc(be_t be, size_t bytes) {
    (void)be;
    void *p = NULL;
    if (!cuda_ok()) return NULL;
    /* cudaMalloc aligns to 256 bytes, beyond the 64 the contract asks */
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* out of memory is not sticky for CUDA: nor for us */
        andrea_set_error("cuda alloc (%zu bytes): %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

void cuda_free(be_t be, void *p) {
    (void)be;
    if (p) cudaFree(p); /* an error here is a stale pointer or a dead context: nothing to do */
}

void cuda_upload(be_t be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (!cuda_ok() || !bytes) return;
    if (cuda_capturing()) { /* a copy node of the graph: src pinned, read at each replay */
        CU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cuda_stream()),
                 "upload", "%zu bytes, captured", bytes);
        return;
    }
    CU_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "upload", "%zu bytes", bytes);
}

void cuda_download(be_t be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (!bytes) return;
    if (!cuda_ok() || (cuda_capturing() && cuda_failf("download", "a read back during a graph "
                                                      "capture", "%zu bytes", bytes))) {
        memset(dst, 0xff, bytes); /* NaNs, never stale data that looks right */
        return;
    }
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        memset(dst, 0xff, bytes);
        cuda_failf("download", cudaGetErrorString(e), "%zu bytes", bytes);
    }
}

void cuda_zero(be_t be, void *p, size_t bytes) {
    (void)be;
    if (!cuda_ok() || !bytes) return;
    CU_CHECK(cudaMemsetAsync(p, 0, bytes, cuda_stream()), "zero", "%zu bytes", bytes);
}

void cuda_copy_rows(be_t be, float *dst, size_t ld_dst, const float *src, size_t ld_src,
                    size_t n, size_t rows) {
    (void)be;
    if (!cuda_ok() || !n || !rows) return;
    /* one row may come with any strides (callers pass 0), which cudaMemcpy2D refuses: its
     * pitches must be at least the width */
    if (rows == 1) {
        CU_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice,
                                 cuda_stream()),
                 "copy_rows", "n %zu rows 1", n);
        return;
    }
    CU_CHECK(cudaMemcpy2DAsync(dst, ld_dst * sizeof(float), src, ld_src * sizeof(float),
                               n * sizeof(float), rows, cudaMemcpyDeviceToDevice, cuda_stream()),
             "copy_rows", "n %zu rows %zu ld_dst %zu ld_src %zu", n, rows, ld_dst, ld_src);
}

void cuda_synchronize(be_t be) {
    (void)be;
    if (!cuda_ok()) return;
    CU_CHECK(cudaDeviceSynchronize(), "synchronize", "%s", "all ops issued so far");
}

/* The draws are the host's (the same bits as every backend), uploaded in chunks. */
void cuda_fill(be_t be, float *p, size_t n, int kind, float a, float b, andrea_rng *rng) {
    const size_t CHUNK = (size_t)1 << 20;
    if (!cuda_ok() || !n) return;
    float *h = (float *)malloc(sizeof(float) * (n < CHUNK ? n : CHUNK));
    if (!h) {
        cuda_failf("fill", "out of host memory", "n %zu", n);
        return;
    }
    for (size_t i = 0; i < n && cuda_ok(); i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        andrea_fill(h, k, kind, a, b, rng);
        cuda_upload(be, p + i, h, k * sizeof(float));
    }
    free(h);
}

int cuda_available(be_t be) {
    (void)be;
    return cuda_probe();
}

const char *cuda_why(be_t be) {
    (void)be;
    cuda_probe();
    return andrea_cuda_state.why;
}

