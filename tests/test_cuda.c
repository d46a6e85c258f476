/*
 * test_cuda.c - the CUDA backend as a whole, on the device: it is complete (every op of
 * the ops table), memory round trips, and a tiny model created on cuda gives cpu's loss
 * and gradients (fp32: within 1e-5 relative) with no CUDA error recorded. Per-op checks are
 * test_backend_ops / test_backend_memory / test_backend_parity, which run every backend
 * this machine lists, cuda included once it is there.
 *
 * Without a device (or a build without -DANDREA_CUDA=ON) it checks that asking for cuda
 * fails with a message saying why, and exits 77 with that one line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "andrea.h"
#include "backend/backend.h"
#include "test_cuda_util.h"

#ifdef ANDREA_HAVE_CUDA
#include "backend/cuda/cuda_api.h"
#endif

/* ||ga - gb|| / ||ga|| (b is moved to cpu to read its gradients) */
static float grad_rel_diff(andrea_model *a, andrea_model *b) {
    int64_t n = andrea_model_num_params(a);
    float *ga = malloc(sizeof(float) * (size_t)n), *gb = malloc(sizeof(float) * (size_t)n);
    double num = 0.0, den = 0.0;
    memcpy(ga, andrea_model_grads(a), sizeof(float) * (size_t)n); /* a is on cpu */
    andrea_model_set_backend(b, "cpu"); /* moves b's gradients home */
    memcpy(gb, andrea_model_grads(b), sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        num += ((double)ga[i] - gb[i]) * ((double)ga[i] - gb[i]);
        den += (double)ga[i] * ga[i];
    }
    free(ga), free(gb);
    return (float)sqrt(num / (den > 0 ? den : 1));
}

#ifdef ANDREA_CUDA_EMU
/* The emulator's device memory is the host's, so it must be closed to host code outside
 * the runtime's calls, or a host access the GPU would refuse passes unseen: a child that
 * reads a device buffer directly must die of SIGSEGV. */
static void check_emulator_guard(const andrea_backend *be) {
    float *d = be->ops.alloc(be, 4096);
    CHECK(d != NULL);
    if (!d) return;
    be->ops.zero(be, d, 4096);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        volatile float x = d[1]; /* a host read of device memory */
        (void)x;
        _exit(0);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    printf("test_cuda: emulator: a host read of device memory crashed (SIGSEGV), as it must\n");
    be->ops.free(be, d);
}
#endif

#ifdef ANDREA_HAVE_CUDA
/* A forward and backward on cuda-bf16 takes the fused cuBLASLt path for some products (the
 * tiny model's are 16-byte aligned) and is refused none after the heuristic chose: on a
 * GPU this is the check that cuBLASLt accepts what the emulator accepts. */
static void check_bf16_fused(const andrea_config *cfg) {
    andrea_model *m = andrea_model_create_on(cfg, 42, "cuda-bf16");
    CHECK(m != NULL);
    if (!m) return;
    enum { B = 2, T = 16 };
    int32_t x[B * T], y[B * T];
    for (int i = 0; i < B * T; i++) x[i] = (i * 3 + 1) % cfg->vocab, y[i] = (i * 11 + 2) % cfg->vocab;
    long f0, u0, r0, f1, u1, r1;
    andrea_cuda_lt_counts(&f0, &u0, &r0);
    float loss = andrea_model_forward(m, x, y, B, T);
    andrea_model_zero_grad(m);
    CHECK(isfinite(loss) && andrea_model_backward(m) == 0);
    andrea_cuda_lt_counts(&f1, &u1, &r1);
    printf("test_cuda: cuda-bf16 forward+backward: loss %.5f; products through cuBLASLt %ld, "
           "unfused %ld, refused by cublasLtMatmul %ld\n", loss, f1 - f0, u1 - u0, r1 - r0);
    CHECK(f1 - f0 > 0 && r1 - r0 == 0);
    andrea_model_free(m);
}
#endif

int main(void) {
#ifndef ANDREA_HAVE_CUDA
    printf("test_cuda: skipped: built without the CUDA backend (cmake -DANDREA_CUDA=ON)\n");
    return 77;
#endif
    const andrea_backend *be = andrea_backend_find("cuda");
    if (!be) {
        const char *why = andrea_error();
        CHECK(why && strstr(why, "cuda"));
        if (tu_failures) return tu_finish("test_cuda");
        printf("test_cuda: skipped: %s\n", why);
        return 77;
    }
    CHECK(andrea_backend_missing(be) == NULL);
#ifdef ANDREA_HAVE_CUDA
    const char *device = andrea_cuda_device_name();
    CHECK(device && *device);
    printf("test_cuda: device %s\n", device ? device : "(none)");
#endif

    float host[1000], back[1000];
    for (int i = 0; i < 1000; i++) host[i] = (float)i * 0.25f - 7.0f;
    float *d = be->ops.alloc(be, sizeof host);
    CHECK(d != NULL);
    if (d) {
        be->ops.upload(be, d, host, sizeof host);
        be->ops.download(be, back, d, sizeof back);
        CHECK(memcmp(host, back, sizeof host) == 0);
        be->ops.free(be, d);
    }

    andrea_config cfg;
    CHECK(andrea_config_preset("tiny", &cfg) == 0);
    andrea_model *cpu = andrea_model_create_on(&cfg, 42, "cpu");
    andrea_model *gpu = andrea_model_create_on(&cfg, 42, "cuda");
    CHECK(cpu && gpu);
    if (cpu && gpu) {
        enum { B = 2, T = 16 };
        int32_t x[B * T], y[B * T];
        for (int i = 0; i < B * T; i++) x[i] = (i * 7 + 3) % cfg.vocab, y[i] = (i * 5 + 1) % cfg.vocab;
        float lc = andrea_model_forward(cpu, x, y, B, T), lg = andrea_model_forward(gpu, x, y, B, T);
        printf("test_cuda: loss cpu %.7f cuda %.7f\n", lc, lg);
        CHECK(isfinite(lg) && fabsf(lc - lg) <= 1e-5f * fabsf(lc));
        andrea_model_zero_grad(cpu), andrea_model_zero_grad(gpu);
        CHECK(andrea_model_backward(cpu) == 0 && andrea_model_backward(gpu) == 0);
        float r = grad_rel_diff(cpu, gpu);
        printf("test_cuda: gradients' relative difference %.3g\n", r);
        CHECK(r <= 1e-5f);
    }
    andrea_model_free(cpu), andrea_model_free(gpu);
#ifdef ANDREA_CUDA_EMU
    check_emulator_guard(be);
#endif
#ifdef ANDREA_HAVE_CUDA
    check_bf16_fused(&cfg);
    tu_check_no_cuda_error("test_cuda");
#endif
    return tu_finish("test_cuda");
}
