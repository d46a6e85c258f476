/*
 * cuda_emu.cpp - the CUDA emulator's runtime (tests/cuda_emu/README.md): device memory as
 * registered host mappings the host cannot touch outside the runtime's calls, launches as
 * fibers with a real __syncthreads barrier, and the cuBLAS products the backend calls. One
 * launch runs at a time (a lock), its blocks in order on the calling thread.
 *
 * What it catches: launch configurations a GPU refuses (dynamic shared memory past 48 KiB
 * without the kernel's opt-in, past 227 KiB at all), host pointers passed to kernels or
 * mistyped copies, host code touching device memory (a SIGSEGV, as cpu-guarded gives),
 * reads of memory never written (cudaMalloc fills NaN bytes), barriers a block's threads
 * reach at different lines, and a missing barrier where one thread reads what another
 * writes (the threads between two barriers run in turn, in alternating order), accesses past
 * a launch's dynamic shared memory (a guard page). WMMA calls
 * (mma.h) are warp barriers, so a warp's lanes stay in step as on a GPU.
 * What it cannot: real concurrency within a block, the GPU's floating-point details, speed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <map>
#include <mutex>

#include "cublas_v2.h"
#include "cuda_runtime.h"

namespace cuda_emu {
uint3 thread_idx, block_idx;
dim3 block_dim, grid_dim;
} // namespace cuda_emu

/* ---- errors: the last one per host thread, as CUDA keeps it ---------------------------- */

static thread_local cudaError_t last_error = cudaSuccess;
static thread_local char last_detail[512];

cudaError_t cuda_emu::set_error(cudaError_t e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_detail, sizeof last_detail, fmt, ap);
    va_end(ap);
    last_error = e;
    return e;
}
static cudaError_t (&fail)(cudaError_t, const char *, ...) = cuda_emu::set_error; /* short */

const char *cudaGetErrorString(cudaError_t e) {
    static thread_local char buf[640];
    const char *name = e == cudaSuccess                     ? "no error"
                       : e == cudaErrorInvalidValue          ? "invalid argument"
                       : e == cudaErrorMemoryAllocation      ? "out of memory"
                       : e == cudaErrorInvalidConfiguration ? "invalid configuration argument"
                       : e == cudaErrorInvalidDevice         ? "invalid device ordinal"
                       : e == cudaErrorLaunchOutOfResources
                           ? "too many resources requested for launch"
                       : e == cudaErrorIllegalAddress
                           ? "an illegal memory access was encountered"
                       : e == cudaErrorNotReady ? "device not ready"
                       : e == cudaErrorInvalidResourceHandle ? "invalid resource handle"
                       : e == cudaErrorStreamCaptureUnsupported
                           ? "operation not permitted when stream is capturing"
                       : e == cudaErrorStreamCaptureInvalidated
                           ? "operation failed due to a previous error during capture"
                       : e == cudaErrorStreamCaptureImplicit
                           ? "operation would make the legacy stream depend on a capturing "
                             "blocking stream"
                       : e == cudaErrorStreamCaptureWrongThread
                           ? "attempt to terminate a thread-local capture sequence from "
                             "another thread"
                           : "unknown error";
    if (e == cudaSuccess || !last_detail[0]) return name;
    snprintf(buf, sizeof buf, "%s (emulator: %s)", name, last_detail);
    return buf;
}
cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return last_error; }

/* ---- the device: one, its memory registered host allocations ----------------------------- */

cudaError_t cudaGetDeviceCount(int *n) {
    *n = 1;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device) {
    if (device != 0) return fail(cudaErrorInvalidDevice, "device %d of 1", device);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "andrea CUDA emulator (CPU)");
    p->major = 9; /* what the backend is built for (sm_90) */
    p->multiProcessorCount = 1;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
    if (device != 0) return fail(cudaErrorInvalidDevice, "device %d of 1", device);
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return cuda_emu::not_capturing("cudaDeviceSynchronize"); }

static std::mutex mem_lock;
static std::map<uintptr_t, size_t> allocations; /* start -> bytes */

/* Device memory is mapped PROT_NONE outside the runtime's calls (a launch, a copy, a
 * product): host code that reads or writes it directly, as it could not on a GPU, crashes
 * there and then. open_count: the calls in progress, on any thread. Under mem_lock. */
static int open_count;
static size_t mapped(size_t bytes) { return (bytes + 4095) / 4096 * 4096; }
static void protect_all(int prot) {
    for (auto &a : allocations) mprotect((void *)a.first, mapped(a.second), prot);
}
cuda_emu::device_access::device_access() {
    std::lock_guard<std::mutex> g(mem_lock);
    if (open_count++ == 0) protect_all(PROT_READ | PROT_WRITE);
}
cuda_emu::device_access::~device_access() {
    std::lock_guard<std::mutex> g(mem_lock);
    if (--open_count == 0) protect_all(PROT_NONE);
}
typedef cuda_emu::device_access device_open;

/* the allocation holding [p, p + bytes), or 0 */
static int device_range(const void *p, size_t bytes) {
    std::lock_guard<std::mutex> g(mem_lock);
    uintptr_t a = (uintptr_t)p;
    auto it = allocations.upper_bound(a);
    if (it == allocations.begin()) return 0;
    --it;
    return a >= it->first && a - it->first + bytes <= it->second;
}
int cuda_emu::is_device(const void *p) { return device_range(p, 0); }
int cuda_emu::is_device_span(const void *p, size_t bytes) { return p && device_range(p, bytes); }

cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = NULL;
    cudaError_t e = cuda_emu::not_capturing("cudaMalloc");
    if (e) return e;
    if (bytes == 0) return cudaSuccess; /* as CUDA: success, a null pointer */
    void *m = mmap(NULL, mapped(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0);
    if (m == MAP_FAILED) return fail(cudaErrorMemoryAllocation, "cudaMalloc of %zu bytes", bytes);
    memset(m, 0xff, bytes); /* NaNs: a read of memory never written shows */
    std::lock_guard<std::mutex> g(mem_lock);
    if (!open_count) mprotect(m, mapped(bytes), PROT_NONE);
    allocations[(uintptr_t)m] = bytes;
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    cudaError_t e = cuda_emu::not_capturing("cudaFree");
    if (e) return e;
    if (!p) return cudaSuccess;
    std::lock_guard<std::mutex> g(mem_lock);
    auto it = allocations.find((uintptr_t)p);
    if (it == allocations.end())
        return fail(cudaErrorInvalidValue, "cudaFree(%p): not the start of an allocation", p);
    munmap(p, mapped(it->second));
    allocations.erase(it);
    return cudaSuccess;
}

/* pinned host memory: plain host memory, registered (start -> bytes), under mem_lock */
static std::map<uintptr_t, size_t> pinned;

cudaError_t cudaMallocHost(void **p, size_t bytes) {
    *p = NULL;
    cudaError_t e = cuda_emu::not_capturing("cudaMallocHost");
    if (e) return e;
    void *m = malloc(bytes ? bytes : 1);
    if (!m) return fail(cudaErrorMemoryAllocation, "cudaMallocHost of %zu bytes", bytes);
    std::lock_guard<std::mutex> g(mem_lock);
    pinned[(uintptr_t)m] = bytes;
    *p = m;
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
    cudaError_t e = cuda_emu::not_capturing("cudaFreeHost");
    if (e || !p) return e;
    std::lock_guard<std::mutex> g(mem_lock);
    if (!pinned.erase((uintptr_t)p))
        return fail(cudaErrorInvalidValue, "cudaFreeHost(%p): not from cudaMallocHost", p);
    free(p);
    return cudaSuccess;
}
int cuda_emu::is_pinned(const void *p, size_t bytes) {
    std::lock_guard<std::mutex> g(mem_lock);
    uintptr_t a = (uintptr_t)p;
    auto it = pinned.upper_bound(a);
    if (!p || it == pinned.begin()) return 0;
    --it;
    return a >= it->first && a - it->first + bytes <= it->second;
}

/* kind's two sides hold the bytes they should: device memory where it says device */
static cudaError_t check_copy(const char *fn, void *dst, size_t dbytes, const void *src,
                              size_t sbytes, cudaMemcpyKind kind) {
    int dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    int sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind == cudaMemcpyDefault || kind == cudaMemcpyHostToHost)
        return fail(cudaErrorInvalidValue, "%s: kind %d is not used by the backend", fn, kind);
    if (dd != device_range(dst, dbytes) || (dd && !dst))
        return fail(cudaErrorInvalidValue, "%s: destination %p (%zu bytes) is %s device memory",
                    fn, dst, dbytes, dd ? "not" : "");
    if (sd != device_range(src, sbytes) || (sd && !src))
        return fail(cudaErrorInvalidValue, "%s: source %p (%zu bytes) is %s device memory", fn,
                    src, sbytes, sd ? "not" : "");
    return cudaSuccess;
}

/* A copy on stream s (0: the legacy stream): checked now, run now or captured. The host side
 * of a captured copy must be pinned (it is read, or written, at each replay). */
static cudaError_t copy_on(cudaStream_t s, const char *fn, void *dst, size_t dbytes,
                           const void *src, size_t sbytes, cudaMemcpyKind kind,
                           std::function<void()> work) {
    cudaError_t e = check_copy(fn, dst, dbytes, src, sbytes, kind);
    if (!e && kind == cudaMemcpyHostToDevice)
        e = cuda_emu::capture_check_host(s, fn, src, sbytes);
    if (!e && kind == cudaMemcpyDeviceToHost)
        e = cuda_emu::capture_check_host(s, fn, dst, dbytes);
    return e ? e : cuda_emu::enqueue(s, fn, [work]() {
        device_open open;
        work();
    });
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s) {
    return copy_on(s, "cudaMemcpyAsync", dst, bytes, src, bytes, kind, [=]() {
        if (bytes) memmove(dst, src, bytes);
    });
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    cudaError_t e = cuda_emu::not_capturing("cudaMemcpy");
    return e ? e : cudaMemcpyAsync(dst, src, bytes, kind, 0);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t s) {
    if (width > dpitch || width > spitch)
        return fail(cudaErrorInvalidValue, "cudaMemcpy2D: width %zu above a pitch (%zu, %zu)",
                    width, dpitch, spitch);
    if (!height || !width) return cuda_emu::stream_valid("cudaMemcpy2DAsync", s);
    size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
    return copy_on(s, "cudaMemcpy2D", dst, dspan, src, sspan, kind, [=]() {
        for (size_t r = 0; r < height; r++)
            memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    });
}
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind) {
    cudaError_t e = cuda_emu::not_capturing("cudaMemcpy2D");
    return e ? e : cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, 0);
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
    if (!device_range(p, bytes) || !p)
        return fail(cudaErrorInvalidValue, "cudaMemset(%p, %zu bytes): not device memory", p,
                    bytes);
    return cuda_emu::enqueue(s, "cudaMemsetAsync", [=]() {
        device_open open;
        memset(p, value, bytes);
    });
}
cudaError_t cudaMemset(void *p, int value, size_t bytes) {
    cudaError_t e = cuda_emu::not_capturing("cudaMemset");
    return e ? e : cudaMemsetAsync(p, value, bytes, 0);
}

/* ---- launches ------------------------------------------------------------------------ */

/* dynamic shared memory per block: 48 KiB unless the kernel opted in to more, up to sm_90's
 * 227 KiB (cudaFuncSetAttribute; the static part is not known here, README.md) */
enum {
    MAX_THREADS = 1024,
    MAX_SHARED = 48 * 1024,
    MAX_SHARED_OPTIN = 232448,
    STACK = 256 * 1024
};

static std::mutex attr_lock;
static std::map<cuda_emu::kernel_key, int> max_dynamic_shared; /* the kernels that set it */

cudaError_t cuda_emu::set_attribute(kernel_key k, cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize)
        return fail(cudaErrorInvalidValue, "cudaFuncSetAttribute: attribute %d", (int)attr);
    if (value < 0 || value > MAX_SHARED_OPTIN)
        return fail(cudaErrorInvalidValue, "cudaFuncSetAttribute: %d bytes of dynamic shared "
                    "memory (a block may have at most %d)", value, (int)MAX_SHARED_OPTIN);
    std::lock_guard<std::mutex> g(attr_lock);
    max_dynamic_shared[k] = value;
    return cudaSuccess;
}

/* the dynamic shared memory c's kernel may ask for */
static size_t shared_limit(const cuda_emu::config &c) {
    std::lock_guard<std::mutex> g(attr_lock);
    auto it = max_dynamic_shared.find(c.kernel);
    return it == max_dynamic_shared.end() ? (size_t)MAX_SHARED : (size_t)it->second;
}

int cuda_emu::launch_check(const config &c) {
    unsigned long long threads = (unsigned long long)c.block.x * c.block.y * c.block.z;
    if (!threads || threads > MAX_THREADS || c.block.x > 1024 || c.block.y > 1024 ||
        c.block.z > 64)
        return fail(cudaErrorInvalidConfiguration, "%s: block (%u, %u, %u)", c.name, c.block.x,
                    c.block.y, c.block.z), -1;
    if (!c.grid.x || !c.grid.y || !c.grid.z || c.grid.x > 2147483647u || c.grid.y > 65535 ||
        c.grid.z > 65535)
        return fail(cudaErrorInvalidConfiguration, "%s: grid (%u, %u, %u)", c.name, c.grid.x,
                    c.grid.y, c.grid.z), -1;
    size_t limit = shared_limit(c);
    if (c.shared > limit)
        return fail(cudaErrorLaunchOutOfResources, "%s: %zu bytes of dynamic shared memory, "
                    "above its limit of %zu (past 48 KiB only after cudaFuncSetAttribute("
                    "cudaFuncAttributeMaxDynamicSharedMemorySize))", c.name, c.shared, limit),
               -1;
    return 0;
}

void cuda_emu::bad_pointer(const config &c, int index, const void *p) {
    fail(cudaErrorIllegalAddress, "%s: argument %d (%p) is not device memory", c.name, index, p);
}

/* The block's threads as fibers: each runs until its next barrier or its end, in turn.
 * On x86-64 a switch is six pushes, a stack swap and six pops (emu_switch below: ucontext's
 * swapcontext makes a system call per switch, 50x slower); elsewhere, ucontext. */
struct fiber {
#if defined(__x86_64__)
    void *sp;
#else
    ucontext_t ctx;
#endif
    char *stack;
    int done, wait, line; /* wait: WAIT_BLOCK (at __syncthreads line) or WAIT_WARP */
};
enum { RUNNABLE = 0, WAIT_BLOCK = 1, WAIT_WARP = 2 };

static std::mutex launch_lock;
static fiber *fibers, *current;
static int n_fibers_made;
static unsigned char *shared_bytes; /* the running launch's dynamic shared memory */
static unsigned char *shared_guard; /* a PROT_NONE page right after the largest buffer */
static int barriers_hit, in_fiber;
static const cuda_emu::config *running;
static void (*body_fn)(void *);
static void *body_ctx;

#if defined(__x86_64__)
/* saves the callee-saved registers on this stack, stores its pointer in *from, and resumes
 * the stack to (which was saved the same way, or made by fiber_start) */
extern "C" void cuda_emu_switch(void **from, void *to);
asm(".text\n"
    ".globl cuda_emu_switch\n"
    ".type cuda_emu_switch,@function\n"
    "cuda_emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size cuda_emu_switch, .-cuda_emu_switch\n");
static void *scheduler_sp;

static void fiber_main(void);
/* a fresh stack that cuda_emu_switch "returns" into fiber_main on, aligned as after a call */
static void fiber_start(fiber *f) {
    uintptr_t top = ((uintptr_t)(f->stack + STACK)) & ~(uintptr_t)15;
    void **sp = (void **)(top - 16);
    sp[0] = (void *)fiber_main; /* the return address the six pops lead to */
    sp -= 6;
    memset(sp, 0, 6 * sizeof(void *));
    f->sp = sp;
}
static void to_scheduler(void) { cuda_emu_switch(&current->sp, scheduler_sp); }
static void to_fiber(fiber *f) { cuda_emu_switch(&scheduler_sp, f->sp); }
#else
static ucontext_t scheduler;
static void fiber_main(void);
static void fiber_start(fiber *f) {
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = STACK;
    f->ctx.uc_link = &scheduler;
    makecontext(&f->ctx, fiber_main, 0);
}
static void to_scheduler(void) { swapcontext(&current->ctx, &scheduler); }
static void to_fiber(fiber *f) { swapcontext(&scheduler, &f->ctx); }
#endif

void *cuda_emu::dynamic_shared(void) { return shared_bytes; }

void cuda_emu::syncthreads(int line) {
    if (!in_fiber) {
        /* a block after the first ran its threads as calls: the first never synced */
        fprintf(stderr, "cuda_emu: %s: __syncthreads (line %d) in a block whose first block "
                "never reached one: the emulator cannot run this kernel\n", running->name, line);
        abort();
    }
    barriers_hit++;
    current->wait = WAIT_BLOCK, current->line = line;
    to_scheduler();
}

void cuda_emu::syncwarp(void) {
    if (!in_fiber) {
        fprintf(stderr, "cuda_emu: %s: a warp barrier in a block whose first block never "
                "reached one: the emulator cannot run this kernel\n", running->name);
        abort();
    }
    barriers_hit++;
    current->wait = WAIT_WARP;
    to_scheduler();
}

/* a fiber's whole life: the thread's kernel, then back to the scheduler for good */
static void fiber_main(void) {
    body_fn(body_ctx);
    current->done = 1;
    to_scheduler();
    abort(); /* never resumed */
}

static void set_thread(unsigned t) {
    const dim3 &b = cuda_emu::block_dim;
    cuda_emu::thread_idx = uint3{t % b.x, t / b.x % b.y, t / (b.x * b.y)};
}

/* runs one block with every thread a fiber; 0, or -1 when its threads diverged */
/* the block's error: its threads wait where no barrier can release them */
static int stuck(const char *why, int a, int b) {
    fail(cudaErrorLaunchOutOfResources, "%s: block (%u, %u, %u) %s (%d, %d)", running->name,
         cuda_emu::block_idx.x, cuda_emu::block_idx.y, cuda_emu::block_idx.z, why, a, b);
    in_fiber = 0;
    return -1;
}

/* Releases the warps whose live threads all wait at a warp barrier; 1 if any was. */
static int release_warps(unsigned nt) {
    int released = 0;
    for (unsigned w0 = 0; w0 < nt; w0 += 32) {
        unsigned end = w0 + 32 < nt ? w0 + 32 : nt;
        int all = 1, any = 0;
        for (unsigned t = w0; t < end; t++)
            if (!fibers[t].done) fibers[t].wait == WAIT_WARP ? any = 1 : all = 0;
        if (!all || !any) continue;
        for (unsigned t = w0; t < end; t++) fibers[t].wait = RUNNABLE;
        released = 1;
    }
    return released;
}

/* runs one block with every thread a fiber; 0, or -1 when its threads diverged */
static int run_fibers(unsigned nt) {
    if ((int)nt > n_fibers_made) {
        fibers = (fiber *)realloc(fibers, sizeof(fiber) * nt);
        for (unsigned t = (unsigned)n_fibers_made; t < nt; t++)
            fibers[t].stack = (char *)malloc(STACK);
        n_fibers_made = (int)nt;
    }
    for (unsigned t = 0; t < nt; t++) {
        fiber_start(&fibers[t]);
        fibers[t].done = 0, fibers[t].wait = RUNNABLE, fibers[t].line = -1;
    }
    in_fiber = 1;
    int alive = (int)nt;
    for (int round = 0; alive; round++) {
        for (unsigned i = 0; i < nt; i++) { /* every runnable thread to its next barrier */
            unsigned t = round & 1 ? nt - 1 - i : i; /* odd rounds backwards */
            fiber *f = &fibers[t];
            if (f->done || f->wait != RUNNABLE) continue;
            current = f;
            set_thread(t);
            to_fiber(f);
            if (f->done) alive--;
        }
        if (!alive || release_warps(nt)) continue;
        int line = -1; /* else every live thread must wait at one __syncthreads */
        for (unsigned t = 0; t < nt; t++) {
            fiber *f = &fibers[t];
            if (f->done) continue;
            if (f->wait != WAIT_BLOCK)
                return stuck("waits at a warp barrier and at __syncthreads (thread, line)",
                             (int)t, f->line);
            if (line >= 0 && f->line != line)
                return stuck("threads wait at barriers on two lines", line, f->line);
            line = f->line;
        }
        for (unsigned t = 0; t < nt; t++) fibers[t].wait = RUNNABLE;
    }
    in_fiber = 0;
    return 0;
}

/* The dynamic shared memory of a launch of n bytes: the last bytes before a PROT_NONE page,
 * starting 128-byte aligned (a GPU's is at least that), so that an access past what the
 * launch asked for (rounded up to 128) is a SIGSEGV. One mapping, of the largest size a
 * block may have, made at the first launch; NULL if it cannot be. Under launch_lock. */
static unsigned char *dynamic_buffer(size_t n) {
    if (!shared_guard) {
        size_t span = mapped(MAX_SHARED_OPTIN) + 4096;
        void *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return NULL;
        shared_guard = (unsigned char *)m + span - 4096;
        mprotect(shared_guard, 4096, PROT_NONE);
    }
    return shared_guard - (n + 127) / 128 * 128;
}

void cuda_emu::run_grid(const config &c, void (*body)(void *), void *ctx) {
    std::lock_guard<std::mutex> g(launch_lock);
    shared_bytes = dynamic_buffer(c.shared);
    if (!shared_bytes) {
        fail(cudaErrorMemoryAllocation, "%s: no memory for the emulator's shared memory", c.name);
        return;
    }
    device_open open;
    running = &c;
    body_fn = body, body_ctx = ctx;
    block_dim = c.block, grid_dim = c.grid;
    unsigned nt = c.block.x * c.block.y * c.block.z;
    int fibered = 1;
    for (unsigned z = 0; z < c.grid.z; z++)
        for (unsigned y = 0; y < c.grid.y; y++)
            for (unsigned x = 0; x < c.grid.x; x++) {
                block_idx = uint3{x, y, z};
                if (c.shared) memset(shared_bytes, 0xff, c.shared);
                if (fibered) {
                    barriers_hit = 0;
                    if (run_fibers(nt)) return;
                    /* a kernel with no barrier in its first block runs its threads as calls */
                    fibered = barriers_hit > 0;
                    continue;
                }
                for (unsigned t = 0; t < nt; t++) {
                    set_thread(t);
                    body(ctx);
                }
            }
}

/* ---- cuBLAS: column-major products in plain loops ----------------------------------------- */

struct cuda_emu_blas {
    cublasMath_t math;
    cudaStream_t stream; /* cublasSetStream's: where its products run (or are captured) */
};

cublasStatus_t cublasCreate(cublasHandle_t *h) {
    *h = (cublasHandle_t)calloc(1, sizeof(cuda_emu_blas));
    return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (cuda_emu::stream_valid("cublasSetStream", s)) return CUBLAS_STATUS_INVALID_VALUE;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

static float load(const void *p, cudaDataType t, size_t i) {
    if (t == CUDA_R_32F) return ((const float *)p)[i];
    uint16_t b = ((const uint16_t *)p)[i];
    if (t == CUDA_R_16BF) return __uint_as_float((unsigned)b << 16);
    _Float16 h;
    memcpy(&h, &b, sizeof h);
    return (float)h;
}

static size_t elem_size(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

static void gemm_run(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                     float alpha, const void *A, cudaDataType at, int lda, const void *B,
                     cudaDataType bt, int ldb, float beta, float *C, int ldc);

/* the checks cuBLAS documents for gemm, then C = alpha op(A) op(B) + beta C (C not read
 * when beta is 0), on the handle's stream */
static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, float alpha, const void *A, cudaDataType at, int lda,
                           const void *B, cudaDataType bt, int ldb, float beta, float *C,
                           int ldc) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
    int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
    if (m < 0 || n < 0 || k < 0 || lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) ||
        ldc < (m > 1 ? m : 1) || ta == CUBLAS_OP_C || tb == CUBLAS_OP_C)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!m || !n) return CUBLAS_STATUS_SUCCESS;
    size_t abytes = ((size_t)lda * (ac - 1) + ar) * elem_size(at);
    size_t bbytes = ((size_t)ldb * (bc - 1) + br) * elem_size(bt);
    size_t cbytes = ((size_t)ldc * (n - 1) + m) * sizeof(float);
    if ((k && (!device_range(A, abytes) || !device_range(B, bbytes))) ||
        !device_range(C, cbytes))
        return CUBLAS_STATUS_INVALID_VALUE; /* a GPU would fault: say so here */
    cudaError_t e = cuda_emu::enqueue(h->stream, "cublas gemm", [=]() {
        device_open open;
        gemm_run(ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ldc);
    });
    return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

static void gemm_run(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                     float alpha, const void *A, cudaDataType at, int lda, const void *B,
                     cudaDataType bt, int ldb, float beta, float *C, int ldc) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0.0;
            for (int p = 0; p < k; p++) {
                size_t ai = ta == CUBLAS_OP_N ? (size_t)p * lda + i : (size_t)i * lda + p;
                size_t bi = tb == CUBLAS_OP_N ? (size_t)j * ldb + p : (size_t)p * ldb + j;
                s += (double)load(A, at, ai) * load(B, bt, bi);
            }
            float *c = &C[(size_t)j * ldc + i];
            *c = beta == 0.0f ? (float)(alpha * s) : (float)(alpha * s + (double)beta * *c);
        }
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc) {
    return gemm(h, ta, tb, m, n, k, *alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, *beta, C,
                ldc);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType at,
                            int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo) {
    (void)algo;
    /* the combinations the backend uses: fp32 out, fp32 compute, alpha/beta fp32 */
    if (ct != CUDA_R_32F || at != bt ||
        (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_PEDANTIC))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    return gemm(h, ta, tb, m, n, k, *(const float *)alpha, A, at, lda, B, bt, ldb,
                *(const float *)beta, (float *)C, ldc);
}
