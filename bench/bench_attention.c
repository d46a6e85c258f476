/* bench_attention.c - causal attention forward + backward: the explicit-matrix
 * kernels (andrea_attention_forward/backward, which store the (B, NH, T, T) probabilities)
 * against the fused flash kernels (andrea_attention_flash_forward/backward, which keep
 * only lse (B, NH, T) and recompute the probabilities in the backward pass).
 *
 *   bench_attention [REPS]        (default 5 timed repetitions per cell)
 *
 * The flash kernels run twice: with the CPU's best instruction set (as in
 * training) and capped to the x86-64 baseline (SSE2, no FMA: what attention.c
 * is compiled for), which separates the gain of the algorithm from the ISA's.
 * Shapes are the attention layers of the bench/README.md models: baby
 * (12, 64, 128, 4), andrea-12m (4, 256, 384, 12) and gpt2-124m at T = 1024
 * (1, 1024, 768, 12). For each shape and thread count the paths run
 * interleaved (explicit, flash, flash-baseline, explicit, ...) after one untimed
 * run of each, so load from other processes falls on all alike; each cell is
 * the median of REPS. Timed: forward + backward, not the zeroing of the
 * gradient. max diff is max |out_flash - out_explicit| over both ISAs, a sanity
 * check (the tests hold the accuracy). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/kernels/kernels.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static float *falloc(size_t n, const char *what) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "bench_attention: out of memory for %s (%zu floats)\n", what, n);
        exit(1);
    }
    return p;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

typedef struct {
    int B, T, C, NH;
} shape;

/* One forward + backward of a path (0 explicit, 1 flash, 2 flash on the baseline
 * ISA); returns milliseconds. */
static double run_once(int path, const shape *s, float *out, float *att, float *lse,
                       float *dqkv, const float *dout, const float *qkv) {
    memset(dqkv, 0, (size_t)s->B * s->T * 3 * s->C * sizeof(float));
    andrea_cpu_engine e = {ANDREA_MATMUL_BUILTIN, ANDREA_PRECISION_FP32, path == 2 ? 0 : -1};
    double t0 = now_ms();
    if (path) {
        andrea_attention_flash_forward(&e, out, lse, qkv, s->B, s->T, s->C, s->NH);
        andrea_attention_flash_backward(&e, dqkv, dout, qkv, out, lse, s->B, s->T, s->C, s->NH);
    } else {
        andrea_attention_forward(out, att, NULL, qkv, s->B, s->T, s->C, s->NH);
        andrea_attention_backward(dqkv, dout, qkv, att, s->B, s->T, s->C, s->NH);
    }
    return now_ms() - t0;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1 || reps > 1000) {
        fprintf(stderr, "bench_attention: REPS must be 1..1000, got '%s'\n", argv[1]);
        return 1;
    }
    static const shape shapes[] = {{12, 64, 128, 4}, {4, 256, 384, 12}, {1, 1024, 768, 12}};
    static const int threads[] = {1, 2};
    const char *wait = getenv("OMP_WAIT_POLICY");
    static const char *isa_names[] = {"baseline", "AVX2+FMA", "AVX-512"};
    int isa = andrea_cpu_isa(-1);
    printf("# attention forward+backward, explicit (T x T matrix) vs flash (fused), median of %d;"
           " flash ISA: %s\n", reps, isa_names[isa]);
    printf("# reproduce: OMP_WAIT_POLICY=%s %s %d   (build: cmake -S . -B build && cmake --build build -j2)\n",
           wait ? wait : "<unset>", argv[0], reps);
    printf("| B | T | C | NH | threads | explicit ms | flash ms | explicit/flash | flash baseline ms |"
           " explicit/flash baseline | att MiB | max diff |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    double *tx = malloc((size_t)reps * sizeof(double)), *tf = malloc((size_t)reps * sizeof(double));
    double *tb = malloc((size_t)reps * sizeof(double));
    if (!tx || !tf || !tb) return 1;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const shape *s = &shapes[si];
        size_t nqkv = (size_t)s->B * s->T * 3 * s->C, nout = (size_t)s->B * s->T * s->C;
        size_t natt = (size_t)s->B * s->NH * s->T * s->T, nlse = (size_t)s->B * s->NH * s->T;
        float *qkv = falloc(nqkv, "qkv"), *dout = falloc(nout, "dout"), *dqkv = falloc(nqkv, "dqkv");
        float *out = falloc(nout, "out"), *outf = falloc(nout, "out"), *outb = falloc(nout, "out");
        float *att = falloc(natt, "att");
        float *lse = falloc(nlse, "lse");
        unsigned x = 12345u;
        for (size_t i = 0; i < nqkv; i++) { /* uniform in [-1, 1): O(1) scores */
            x = x * 1664525u + 1013904223u;
            qkv[i] = (float)(x >> 8) / 8388608.0f - 1.0f;
        }
        for (size_t i = 0; i < nout; i++) {
            x = x * 1664525u + 1013904223u;
            dout[i] = (float)(x >> 8) / 8388608.0f - 1.0f;
        }
        for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
#ifdef _OPENMP
            omp_set_num_threads(threads[ti]);
#else
            if (threads[ti] > 1) continue;
#endif
            run_once(0, s, out, att, lse, dqkv, dout, qkv); /* untimed: page faults, caches */
            run_once(1, s, outf, att, lse, dqkv, dout, qkv);
            run_once(2, s, outb, att, lse, dqkv, dout, qkv);
            for (int r = 0; r < reps; r++) {
                tx[r] = run_once(0, s, out, att, lse, dqkv, dout, qkv);
                tf[r] = run_once(1, s, outf, att, lse, dqkv, dout, qkv);
                tb[r] = run_once(2, s, outb, att, lse, dqkv, dout, qkv);
            }
            double diff = 0.0;
            for (size_t i = 0; i < nout; i++) {
                diff = fmax(diff, fabs((double)out[i] - outf[i]));
                diff = fmax(diff, fabs((double)out[i] - outb[i]));
            }
            double mx = median(tx, reps), mf = median(tf, reps), mb = median(tb, reps);
            printf("| %d | %d | %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1e |\n",
                   s->B, s->T, s->C, s->NH, threads[ti], mx, mf, mx / mf, mb, mx / mb,
                   (double)natt * sizeof(float) / (1024.0 * 1024.0), diff);
            fflush(stdout);
        }
        free(qkv); free(dout); free(dqkv); free(out); free(outf); free(outb); free(att); free(lse);
    }
    free(tx);
    free(tf);
    free(tb);
    return 0;
}
