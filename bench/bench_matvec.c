/*
 * bench_matvec.c - decoding's product (andrea_matvec_rows_isa) in every weight format at
 * every ISA level, for n = 1 input (batch-1 decoding) and for n inputs at once (batched
 * decoding: one read of each weight row for n tokens), side by side in one run. A stack of
 * matrices of N rows of K = 768 (N = 3072: GPT-2-124M's MLP, 8 of them, 4 x 2.4M weights;
 * N = 50257: its LM head, one) larger than the caches in every format, so the weights
 * stream from memory as in decoding, multiplied in turn; rounds alternate the input
 * counts, formats and ISAs so load from other processes falls on all alike. Prints per
 * format, ISA and n the best and median round as G weights/s, GB/s of weights read and
 * G input-weights/s (n weights' worth of products per weight read), and the median's
 * speedup over n single-input products (n t(1) / t(n)).
 *
 *   OMP_NUM_THREADS=2 build/bench/bench_matvec [ROUNDS [INPUTS [N [ISAS]]]]
 *   INPUTS: input counts, comma-separated (default 1); N: rows per matrix (default 3072);
 *   ISAS: the levels to time (default baseline,avx2,avx512: those this CPU has)
 *   BENCH_CPU_TIME=1: time by the process's CPU clock, not the wall clock (with one thread,
 *   the time spent multiplying: a machine shared with other jobs deschedules the bench
 *   for most of a round, which the wall clock counts; memory contention still counts) 
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/kernels/kernels.h"
#include "util/perf.h"

enum { K = 768, MAX_ROUNDS = 31, NFMT = 6, NISA = 3, MAX_NS = 8, MAX_IN = 64 };
static const int FMTS[NFMT] = {ANDREA_QUANT_NONE, ANDREA_QUANT_F16,  ANDREA_QUANT_BF16,
                               ANDREA_QUANT_INT8, ANDREA_QUANT_Q8_0, ANDREA_QUANT_Q4_0};
/* bytes per weight read, scales included (one float per row or per block of 32) */
static const double BYTES[NFMT] = {4, 2, 2, 1 + 4.0 / K, 1 + 4.0 / 32, 0.5 + 4.0 / 32};

/* seconds by the clock BENCH_CPU_TIME picks */
static double now(int cpu) {
    struct timespec ts;
    if (!cpu) return andrea_now();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* "1,2,4,8" into ns; the count, or -1 when malformed */
static int parse_inputs(const char *s, int *ns) {
    int c = 0;
    for (char *end; *s; s = *end == ',' ? end + 1 : end) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > MAX_IN || c == MAX_NS || (*end && *end != ',')) return -1;
        ns[c++] = (int)v;
    }
    return c ? c : -1;
}

/* "avx2,avx512" into the flags of the ISA levels to time; 0 when malformed */
static int parse_isas(const char *s) {
    int on = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int isa = andrea_isa_parse(tok);
        if (isa < 0) return 0;
        on |= 1 << isa;
    }
    return on;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 7, ns[MAX_NS] = {1}, nns = 1;
    int N = argc > 3 ? atoi(argv[3]) : 3072, on = argc > 4 ? parse_isas(argv[4]) : 7;
    if (rounds < 1 || rounds > MAX_ROUNDS || (argc > 2 && (nns = parse_inputs(argv[2], ns)) < 0) ||
        N < 32 || !on) {
        fprintf(stderr, "usage: bench_matvec [ROUNDS 1..%d [INPUTS 1,2,4,8 [N >= 32 [ISAS]]]]\n",
                MAX_ROUNDS);
        return 2;
    }
    int mats = (8 * 3072 + N - 1) / N; /* at least 8 MLP matrices' worth of weights */
    size_t n = (size_t)mats * N * K;
    float *w = malloc(sizeof(float) * n), *x = malloc(sizeof(float) * K * MAX_IN);
    float *out = malloc(sizeof(float) * (size_t)N * MAX_IN);
    void *q[NFMT];
    float *scale[NFMT];
    if (!w || !x || !out) return 1;
    andrea_rng rng;
    andrea_rng_seed(&rng, 1);
    andrea_fill(w, n, ANDREA_FILL_NORMAL, 0.0f, 0.02f, &rng);
    andrea_fill(x, (size_t)K * MAX_IN, ANDREA_FILL_NORMAL, 0.0f, 1.0f, &rng);
    for (int f = 0; f < NFMT; f++) {
        q[f] = f == 0 ? (void *)w : malloc((size_t)(n * 2));
        scale[f] = malloc(sizeof(float) * (n / 32 + (size_t)mats * N));
        if (!q[f] || !scale[f]) return 1;
        if (f) andrea_quantize_rows(q[f], scale[f], w, FMTS[f], (size_t)mats * N, K);
    }
    const char *cpu_env = getenv("BENCH_CPU_TIME");
    int cpu = cpu_env && *cpu_env == '1';
    static double t[MAX_NS][NFMT][NISA][MAX_ROUNDS];
    const int isas[NISA] = {ANDREA_ISA_BASELINE, ANDREA_ISA_AVX2, ANDREA_ISA_AVX512};
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < nns; c++)
            for (int f = 0; f < NFMT; f++)
                for (int i = 0; i < NISA; i++) {
                    if (!(on >> isas[i] & 1) || andrea_cpu_isa(isas[i]) != isas[i]) continue;
                    double t0 = now(cpu);
                    for (int m = 0; m < mats; m++) {
                        size_t off = (size_t)m * N * K; /* weights; per-row or per-32 scales */
                        const void *wm = FMTS[f] == ANDREA_QUANT_NONE ? (const void *)(w + off)
                                         : FMTS[f] == ANDREA_QUANT_BF16 || FMTS[f] == ANDREA_QUANT_F16
                                             ? (const void *)((uint16_t *)q[f] + off)
                                         : FMTS[f] == ANDREA_QUANT_Q4_0 ? (const void *)((uint8_t *)q[f] + off / 2)
                                                                        : (const void *)((int8_t *)q[f] + off);
                        const float *sm = FMTS[f] == ANDREA_QUANT_INT8 ? scale[f] + (size_t)m * N : scale[f] + off / 32;
                        andrea_matvec_rows_isa(isas[i], out, x, wm, FMTS[f], sm, NULL, K, N, ns[c]);
                    }
                    t[c][f][i][r] = now(cpu) - t0;
                }
    printf("bench_matvec: %d x (%d x %d), %d rounds, %s time: best / median; x1 = n single-input times / median\n",
           mats, N, K, rounds, cpu ? "CPU" : "wall");
    for (int f = 0; f < NFMT; f++)
        for (int i = 0; i < NISA; i++) {
            if (!(on >> isas[i] & 1) || andrea_cpu_isa(isas[i]) != isas[i]) continue; /* not timed */
            double med1 = 0;
            for (int c = 0; c < nns; c++) {
                qsort(t[c][f][i], (size_t)rounds, sizeof(double), cmp_double);
                double best = t[c][f][i][0], med = t[c][f][i][rounds / 2], gw = (double)n / 1e9;
                if (ns[c] == 1) med1 = med;
                printf("%-5s %-8s n=%-2d %6.2f / %6.2f G weights/s  %6.2f / %6.2f GB/s  %6.2f G input-weights/s",
                       andrea_quant_name(FMTS[f]), andrea_isa_name(isas[i]), ns[c], gw / best, gw / med,
                       gw * BYTES[f] / best, gw * BYTES[f] / med, gw * ns[c] / med);
                if (med1 > 0) printf("  %5.2fx", ns[c] * med1 / med);
                printf("\n");
            }
        }
    for (int f = 1; f < NFMT; f++) free(q[f]);
    for (int f = 0; f < NFMT; f++) free(scale[f]);
    free(w), free(x), free(out);
    return 0;
}
