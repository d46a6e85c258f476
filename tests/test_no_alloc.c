/*
 * test_no_alloc.c - the steady state allocates nothing: after warm-up steps, a
 * training step (zero_grad, forward, backward, gradient norm, AdamW on every
 * tensor: what the trainer does) and a KV-cache decoding step make no call to
 * malloc, calloc, realloc or posix_memalign, with fp32 and bf16 matmuls and 1 or 2 threads.
 *
 * How: this executable defines malloc and friends, which the dynamic linker binds
 * before glibc's for the whole process; they count and forward to glibc's __libc_*
 * entry points. Calls made by the OpenMP runtime itself (libgomp allocates a team
 * for every serialised parallel region, e.g. all of them with 1 thread) are not
 * ours to remove: they are counted apart, by the caller's address, and reported. Sanitizer builds replace malloc themselves, so
 * there the test is skipped. To find an offender: ANDREA_ALLOC_TRAP=1 under gdb stops
 * at the first allocator call inside a measured region; `bt` names it.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "andrea.h"
#include "backend/cpu/kernels/kernels.h"
#include "model/model.h"
#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NO_INTERPOSE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NO_INTERPOSE 1
#endif
#endif

#if defined(__GLIBC__) && !defined(NO_INTERPOSE)
static volatile long g_allocs, g_runtime_allocs;
static int g_armed, g_trap; /* inside a measured region; trap there (debugging aid) */
static uintptr_t g_gomp_lo, g_gomp_hi; /* libgomp's code, once found */

static int find_gomp(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size, (void)data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libgomp")) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        g_gomp_lo = info->dlpi_addr + ph->p_vaddr;
        g_gomp_hi = g_gomp_lo + ph->p_memsz;
    }
    return 1;
}

#define COUNT() count((uintptr_t)__builtin_return_address(0))
static void count(uintptr_t caller) {
    if (caller >= g_gomp_lo && caller < g_gomp_hi) {
        __atomic_add_fetch(&g_runtime_allocs, 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_add_fetch(&g_allocs, 1, __ATOMIC_RELAXED);
    if (g_trap && __atomic_load_n(&g_armed, __ATOMIC_RELAXED)) __builtin_trap();
}

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t n) {
    COUNT();
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    COUNT();
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    COUNT();
    return __libc_realloc(p, n);
}
int posix_memalign(void **p, size_t align, size_t n) { /* the tensors' (util/bigalloc.c) */
    COUNT();
    *p = __libc_memalign(align, n);
    return *p ? 0 : 12; /* ENOMEM */
}

/* Not counted: every free pairs with an allocation, which is, and libgomp ends its
 * parallel regions with a tail call to free that hides it as the caller. */
void free(void *p) { __libc_free(p); }

/* Allocator calls so far; arm = 1 opens a measured region, 0 closes it. */
static long allocs(int arm) {
    __atomic_store_n(&g_armed, arm, __ATOMIC_RELAXED);
    return __atomic_load_n(&g_allocs, __ATOMIC_RELAXED);
}

static void train_step(andrea_model *m, float *am, float *av, const int32_t *x, const int32_t *y,
                       int B, int T, int t) {
    andrea_model_zero_grad(m);
    andrea_model_forward(m, x, y, B, T);
    andrea_model_backward(m);
    float gnorm = (float)__builtin_sqrt(andrea_grad_sum_squares(m->grads, (size_t)m->layout.total));
    float gscale = gnorm > 1.0f ? 1.0f / gnorm : 1.0f;
    for (int i = 0; i < m->layout.n; i++) {
        const andrea_tensor_info *ti = &m->layout.t[i];
        andrea_adamw_update(m->params + ti->offset, m->grads + ti->offset, am + ti->offset,
                     av + ti->offset, (size_t)ti->size, 1e-3f, 0.9f, 0.95f, 1e-8f,
                     ti->decay ? 0.1f : 0.0f, t, gscale);
    }
}

static void check_steady(const char *preset, int precision, int threads, int flash) {
    andrea_config cfg;
    CHECK(andrea_config_preset(preset, &cfg) == 0);
    cfg.vocab = 300; /* a BPE-sized vocabulary: the LM head goes through the packed path */
    andrea_model *m = andrea_model_create(&cfg, 5);
    CHECK(m != NULL);
    if (!m) return;
    andrea_model_set_flash_attention(m, flash);
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    CHECK(andrea_model_set_backend(m, precision == ANDREA_PRECISION_BF16 ? "cpu-bf16" : "cpu") == 0);
    int B = 2, T = 64;
    int64_t n = m->layout.total;
    float *am = calloc((size_t)n, sizeof(float)), *av = calloc((size_t)n, sizeof(float));
    int32_t *x = malloc(sizeof(int32_t) * (size_t)B * T * 2), *y = x + B * T;
    for (int i = 0; i < 2 * B * T; i++) x[i] = (i * 7919) % cfg.vocab;
    for (int t = 1; t <= 2; t++) train_step(m, am, av, x, y, B, T, t); /* warm-up */
    long rt_before = g_runtime_allocs, before = allocs(1);
    for (int t = 3; t <= 6; t++) train_step(m, am, av, x, y, B, T, t);
    long during = allocs(0) - before;
    printf("%s %s %s attention, %d thread(s): 4 training steps, %ld allocator calls (OpenMP "
           "runtime: %ld)\n", preset, precision ? "bf16" : "fp32", flash ? "flash" : "explicit",
           threads, during, g_runtime_allocs - rt_before);
    if (during != 0)
        fprintf(stderr, "%s precision %d threads %d: %ld allocator calls in 4 training steps\n",
                preset, precision, threads, during);
    CHECK(during == 0);

    andrea_kv *kv = andrea_kv_create(m);
    CHECK(kv != NULL);
    if (kv) {
        andrea_kv_step(m, kv, 1);
        andrea_kv_step(m, kv, 2);
        rt_before = g_runtime_allocs, before = allocs(1);
        for (int i = 0; i < 20; i++) andrea_kv_step(m, kv, (i * 31) % cfg.vocab);
        during = allocs(0) - before;
        printf("%s, %d thread(s): 20 decoding steps, %ld allocator calls (OpenMP runtime: %ld)\n",
               preset, threads, during, g_runtime_allocs - rt_before);
        if (during != 0)
            fprintf(stderr, "%s threads %d: %ld allocator calls in 20 decoding steps\n", preset,
                    threads, during);
        CHECK(during == 0);
        andrea_kv_free(kv);
    }
    free(am), free(av), free(x);
    andrea_model_free(m);
}

int main(void) {
    g_trap = getenv("ANDREA_ALLOC_TRAP") != NULL;
#ifdef _OPENMP
#pragma omp parallel
    { /* load and start the runtime, then find its code */
    }
#endif
    dl_iterate_phdr(find_gomp, NULL);
    for (int threads = 1; threads <= 2; threads++) {
        check_steady("baby", ANDREA_PRECISION_FP32, threads, 1);
        check_steady("baby", ANDREA_PRECISION_FP32, threads, 0);
        if (andrea_bf16_supported()) check_steady("baby", ANDREA_PRECISION_BF16, threads, 1);
    }
    return tu_finish("test_no_alloc");
}
#else
int main(void) {
    printf("skip: allocator interposition needs glibc and no sanitizer\n");
    return 77;
}
#endif
