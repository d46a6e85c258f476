/* perf.c - measurements of the machine (sgemm, bandwidth, memory) and of the model (FLOPs). */
#include "util/perf.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu/kernels/kernels.h"
#include "util/bigalloc.h"

double andrea_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The backend's own product on its own memory (a device backend's ops read only device
 * memory), each repetition timed to its end (ops may return before the device is done). */
double andrea_perf_gemm_gflops(const andrea_backend *be, int n, double seconds) {
    size_t bytes = sizeof(float) * (size_t)n * n;
    float *h = malloc(bytes), *a = NULL, *b = NULL, *c = NULL;
    if (be && h) {
        a = be->ops.alloc(be, bytes);
        b = be->ops.alloc(be, bytes);
        c = be->ops.alloc(be, bytes);
    }
    double best = 0.0;
    if (a && b && c) {
        for (size_t i = 0; i < (size_t)n * n; i++) h[i] = (float)(i % 7) * 0.1f;
        be->ops.upload(be, a, h, bytes);
        for (size_t i = 0; i < (size_t)n * n; i++) h[i] = (float)(i % 5) * 0.1f;
        be->ops.upload(be, b, h, bytes);
        be->ops.zero(be, c, bytes);
        be->ops.synchronize(be);
        /* The best single product: a burst of other work on a shared machine slows some
         * repetitions, never speeds one up, so the fastest is the closest to the peak. At
         * least 5, so that one unlucky time slice cannot be all there is. */
        double t_end = andrea_now() + seconds;
        for (int reps = 0; andrea_now() < t_end || reps < 5; reps++) {
            double t0 = andrea_now();
            be->ops.matmul_forward(be, c, a, b, NULL, n, n, n); /* c = a @ b^T: training's shape */
            be->ops.synchronize(be);
            double g = 2.0 * n * n * (double)n / (andrea_now() - t0) / 1e9;
            if (g > best) best = g;
        }
    }
    if (a) be->ops.free(be, a);
    if (b) be->ops.free(be, b);
    if (c) be->ops.free(be, c);
    free(h);
    return best;
}

double andrea_perf_sgemm_gflops(int n, double seconds, int blas) {
    if (blas && !andrea_blas_available()) return 0.0;
    return andrea_perf_gemm_gflops(blas ? &andrea_backend_cpu_blas : &andrea_backend_cpu, n, seconds);
}

double andrea_perf_copy_gbps(size_t bytes, double seconds) {
    char *src = andrea_big_alloc(bytes), *dst = andrea_big_alloc(bytes);
    if (!src || !dst) {
        free(src), free(dst);
        return 0.0;
    }
    memset(src, 1, bytes);
    memset(dst, 2, bytes);
    double best = 0.0, t_end = andrea_now() + seconds;
    int reps = 0;
    while (andrea_now() < t_end || reps < 3) {
        double t0 = andrea_now();
        /* every thread copies its slice: one core alone cannot saturate memory */
        long chunks = 64, chunk = (long)(bytes / (size_t)chunks);
#pragma omp parallel for schedule(static)
        for (long i = 0; i < chunks; i++) memcpy(dst + i * chunk, src + i * chunk, (size_t)chunk);
        double dt = andrea_now() - t0;
        double g = 2.0 * bytes / dt / 1e9;
        if (g > best) best = g;
        reps++;
        src[reps % bytes] = (char)reps; /* keep the copy observable */
    }
    free(src), free(dst);
    return best;
}

int64_t andrea_perf_peak_rss(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (int64_t)ru.ru_maxrss * 1024; /* Linux reports kilobytes */
}

double andrea_train_flops_per_token(const andrea_config *c, int T) {
    double C = c->d_model;
    double n_matmul = 12.0 * c->n_layer * C * C + (double)c->vocab * C;
    /* attention: Q K^T and A V are 4 T C FLOPs per token and layer forward, half of it
     * under the causal mask, times 3 for forward + backward */
    return 6.0 * n_matmul + 6.0 * c->n_layer * C * T;
}

#define READ_CHUNK 4096

double andrea_perf_read_gbps(size_t bytes, double seconds) {
    float ones[READ_CHUNK];
    for (int i = 0; i < READ_CHUNK; i++) ones[i] = 1.0f;
    size_t n = bytes / sizeof(float) / READ_CHUNK * READ_CHUNK;
    float *buf = andrea_big_alloc(n * sizeof(float)); /* as the weights are allocated */
    if (!buf) return 0.0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)n; i++) buf[i] = 1.0f; /* first touch by the reading thread */
    double best = 0.0, t_end = andrea_now() + seconds;
    volatile float sink = 0.0f;
    int reps = 0;
    while (andrea_now() < t_end || reps < 3) {
        double t0 = andrea_now();
        float total = 0.0f;
        long chunks = (long)(n / READ_CHUNK);
        /* the decoding dot product itself (dot.c: the widest vectors, 4 accumulators), so
         * that the bound is what the memory gives that instruction mix, not a slower loop */
#pragma omp parallel for schedule(static) reduction(+ : total)
        for (long ch = 0; ch < chunks; ch++) total += andrea_dot_f32(buf + ch * READ_CHUNK, ones, READ_CHUNK);
        double dt = andrea_now() - t0;
        sink = total;
        double g = (double)n * sizeof(float) / dt / 1e9;
        if (g > best) best = g;
        reps++;
    }
    (void)sink;
    free(buf);
    return best;
}
