/*
 * test_cuda_emu.cpp - the CUDA emulator's own launch rules for dynamic shared memory
 * (tests/cuda_emu/README.md), which the backend's tests only reach where a kernel breaks
 * them: more than 48 KiB is refused unless the kernel raised its
 * cudaFuncAttributeMaxDynamicSharedMemorySize to at least that much (per kernel), nothing
 * above 232448 bytes (sm_90's 227 KiB), a buffer that large is all there and 128-byte
 * aligned, and a write past what the launch asked for crashes. And its stream captures:
 * a graph replays its kernels and copies in order, reading a pinned input again at each
 * replay; refused during a capture, invalidating it: a synchronous copy, an allocation,
 * legacy-stream work, a pageable copy. Built only with -DANDREA_CUDA_EMU=ON, against the
 * emulator's headers, as the backend's .cu files are.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/cuda/cuda_internal.h"
#include "test_util.h"


/* writes n bytes of dynamic shared memory (a pattern, all threads), then counts the bytes
 * that do not hold it into out[0]; out[1] = 1 when the buffer is 128-byte aligned */
__device__ static void fill_and_check(int *out, int n) {
    CU_DYN_SHARED(unsigned char, buf);
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = (unsigned char)(i * 7 + 1);
    __syncthreads();
    if (threadIdx.x != 0) return;
    int bad = 0;
    for (int i = 0; i < n; i++) bad += buf[i] != (unsigned char)(i * 7 + 1);
    out[0] = bad, out[1] = (uintptr_t)buf % 128 == 0;
}
__global__ static void k_fill(int *out, int n) { fill_and_check(out, n); }
__global__ static void k_other(int *out, int n) { fill_and_check(out, n); }

/* launches kernel with shared bytes (the kernel writing n); the launch's error, and out's
 * two values (-1 where the kernel did not run) */
template <class K>
static cudaError_t run(K *kernel, int *d_out, size_t shared, int n, int out[2]) {
    cudaGetLastError();
    cudaMemset(d_out, 0xff, 2 * sizeof(int));
    CU_LAUNCH(kernel, 1, 64, shared)(d_out, n);
    cudaError_t e = cudaGetLastError();
    cudaMemcpy(out, d_out, 2 * sizeof(int), cudaMemcpyDeviceToHost);
    return e;
}

/* the launch is refused, saying why, and the kernel does not run */
template <class K> static void refused(K *kernel, int *d_out, size_t shared) {
    int out[2];
    cudaError_t e = run(kernel, d_out, shared, (int)shared, out);
    CHECK(e == cudaErrorLaunchOutOfResources);
    CHECK(out[0] == -1 && out[1] == -1);
    printf("test_cuda_emu: %zu bytes refused: %s\n", shared, cudaGetErrorString(e));
}

/* the launch runs, and its n bytes are all there, 128-byte aligned */
template <class K> static void runs(K *kernel, int *d_out, size_t shared) {
    int out[2];
    CHECK(run(kernel, d_out, shared, (int)shared, out) == cudaSuccess);
    CHECK(out[0] == 0 && out[1] == 1);
}

__global__ static void k_add(int *out, const int *in, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] += in[i];
}

/* begins a capture on s, does refused_call(), and checks that the capture is invalid */
template <class F> static void capture_refuses(cudaStream_t s, const char *what, F refused_call) {
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    cudaError_t e = refused_call();
    char why[640];
    snprintf(why, sizeof why, "%s", cudaGetErrorString(e));
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    CHECK(cudaStreamIsCapturing(s, &st) == cudaSuccess && st == cudaStreamCaptureStatusInvalidated);
    cudaGraph_t g = NULL;
    CHECK(e != cudaSuccess && cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated && !g);
    printf("test_cuda_emu: during a capture, %s refused: %s\n", what, why);
    cudaGetLastError();
}

/* A capture of (copy in from pinned memory, kernel) replayed twice reads the pinned input
 * at each replay; nothing runs while captured; and the refusals. */
static void check_graphs(void) {
    enum { N = 100 };
    int *d = NULL, *din = NULL, *pin = NULL, host[N], page[N];
    CHECK(cudaMalloc(&d, N * sizeof(int)) == cudaSuccess && cudaMalloc(&din, N * sizeof(int)) == cudaSuccess);
    CHECK(cudaMallocHost((void **)&pin, N * sizeof(int)) == cudaSuccess);
    cudaStream_t s = NULL;
    CHECK(cudaStreamCreate(&s) == cudaSuccess);
    if (!d || !din || !pin || !s) return;
    CHECK(cudaMemset(d, 0, N * sizeof(int)) == cudaSuccess);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(cudaMemcpyAsync(din, pin, N * sizeof(int), cudaMemcpyHostToDevice, s) == cudaSuccess);
    cuda_emu::launch("k_add", 1, 32, 0, s, k_add)(d, din, N);
    CHECK(cudaGetLastError() == cudaSuccess);
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess && g);
    CHECK(cudaGraphInstantiate(&x, g, 0) == cudaSuccess && x);
    CHECK(cudaGraphDestroy(g) == cudaSuccess);
    CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost) == cudaSuccess);
    int ran = 0;
    for (int i = 0; i < N; i++) ran |= host[i];
    CHECK(ran == 0); /* captured, not run */
    for (int r = 1; r <= 2; r++) {
        for (int i = 0; i < N; i++) pin[i] = i * r; /* a new input for each replay */
        CHECK(cudaGraphLaunch(x, s) == cudaSuccess);
    }
    CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost) == cudaSuccess);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += host[i] != i * 1 + i * 2;
    CHECK(bad == 0);
    printf("test_cuda_emu: a graph replayed twice read its pinned input each time (%d wrong)\n", bad);
    CHECK(cudaGraphExecDestroy(x) == cudaSuccess);
    capture_refuses(s, "a synchronous copy", [&] { return cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost); });
    capture_refuses(s, "cudaMalloc", [&] { int *p; return cudaMalloc(&p, 64); });
    capture_refuses(s, "legacy-stream work", [&] { return cudaMemsetAsync(d, 0, 64, 0); });
    capture_refuses(s, "a pageable copy", [&] {
        return cudaMemcpyAsync(din, page, sizeof page, cudaMemcpyHostToDevice, s);
    });
    cudaStreamDestroy(s);
    cudaFreeHost(pin);
    cudaFree(din), cudaFree(d);
}

int main(void) {
    check_graphs();
    int *d_out = NULL;
    CHECK(cudaMalloc(&d_out, 2 * sizeof(int)) == cudaSuccess);
    if (!d_out) return 1;
    const cudaFuncAttribute attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
    runs(k_fill, d_out, 48 * 1024); /* the default limit */
    refused(k_fill, d_out, 48 * 1024 + 1);
    CHECK(cudaFuncSetAttribute(k_fill, attr, 100000) == cudaSuccess);
    runs(k_fill, d_out, 100000);
    refused(k_fill, d_out, 100001);  /* above what it raised */
    refused(k_other, d_out, 100000); /* the attribute is the kernel's own */
    CHECK(cudaFuncSetAttribute(k_fill, attr, 232449) == cudaErrorInvalidValue);
    printf("test_cuda_emu: raising to 232449 bytes refused: %s\n",
           cudaGetErrorString(cudaGetLastError()));
    CHECK(cudaFuncSetAttribute(k_fill, attr, 232448) == cudaSuccess);
    runs(k_fill, d_out, 232448); /* sm_90's most, all of it usable */
    refused(k_fill, d_out, 232449);

    /* a kernel writing past the 1000 bytes it asked for (beyond the 128-byte rounding) */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int out[2];
        run(k_fill, d_out, 1000, 1000 + 128 + 1, out);
        _exit(0);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    printf("test_cuda_emu: a write past the launch's dynamic shared memory crashed (SIGSEGV)\n");
    cudaFree(d_out);
    return tu_finish("test_cuda_emu");
}
