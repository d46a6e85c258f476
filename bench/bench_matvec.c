/*
 * bench_matvec.c - decoding's product (andrea_matvec_rows_isa, n = 1) in every weight
 * format at every ISA level, side by side in one run: a stack of MATS (768 x 3072)
 * matrices (GPT-2-124M's MLP shape, 4 x 2.4M weights: larger than the caches in every
 * format, so the weights stream from memory as in decoding) multiplied in turn, rounds
 * alternating the formats and ISAs so load from other processes falls on all alike. Prints
 * per format and ISA the best and median round as G weights/s and GB/s of weights read.
 *
 *   OMP_NUM_THREADS=2 build/bench/bench_matvec [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/kernels.h"
#include "util/perf.h"

enum { K = 768, N = 3072, MATS = 8, MAX_ROUNDS = 31, NFMT = 5, NISA = 3 };
static const int FMTS[NFMT] = {ANDREA_QUANT_NONE, ANDREA_QUANT_BF16, ANDREA_QUANT_INT8,
                               ANDREA_QUANT_Q8_0, ANDREA_QUANT_Q4_0};
/* bytes per weight read, scales included (one float per row or per block of 32) */
static const double BYTES[NFMT] = {4, 2, 1 + 4.0 / K, 1 + 4.0 / 32, 0.5 + 4.0 / 32};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "bench_matvec: ROUNDS must be 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    size_t n = (size_t)MATS * N * K;
    float *w = malloc(sizeof(float) * n), *x = malloc(sizeof(float) * K), *out = malloc(sizeof(float) * N);
    void *q[NFMT];
    float *scale[NFMT];
    if (!w || !x || !out) return 1;
    andrea_rng rng;
    andrea_rng_seed(&rng, 1);
    andrea_fill(w, n, ANDREA_FILL_NORMAL, 0.0f, 0.02f, &rng);
    andrea_fill(x, K, ANDREA_FILL_NORMAL, 0.0f, 1.0f, &rng);
    for (int f = 0; f < NFMT; f++) {
        q[f] = f == 0 ? (void *)w : malloc((size_t)(n * 2));
        scale[f] = malloc(sizeof(float) * (n / 32 + (size_t)MATS * N));
        if (!q[f] || !scale[f]) return 1;
        if (f) andrea_quantize_rows(q[f], scale[f], w, FMTS[f], (size_t)MATS * N, K);
    }
    static double t[NFMT][NISA][MAX_ROUNDS];
    const int isas[NISA] = {ANDREA_ISA_BASELINE, ANDREA_ISA_AVX2, ANDREA_ISA_AVX512};
    for (int r = 0; r < rounds; r++)
        for (int f = 0; f < NFMT; f++)
            for (int i = 0; i < NISA; i++) {
                double t0 = andrea_now();
                for (int m = 0; m < MATS; m++) {
                    size_t off = (size_t)m * N * K; /* weights; per-row or per-32 scales */
                    const void *wm = FMTS[f] == ANDREA_QUANT_NONE ? (const void *)(w + off)
                                     : FMTS[f] == ANDREA_QUANT_BF16 ? (const void *)((uint16_t *)q[f] + off)
                                     : FMTS[f] == ANDREA_QUANT_Q4_0 ? (const void *)((uint8_t *)q[f] + off / 2)
                                                                    : (const void *)((int8_t *)q[f] + off);
                    const float *sm = FMTS[f] == ANDREA_QUANT_INT8 ? scale[f] + (size_t)m * N : scale[f] + off / 32;
                    andrea_matvec_rows_isa(isas[i], out, x, wm, FMTS[f], sm, NULL, K, N, 1);
                }
                t[f][i][r] = andrea_now() - t0;
            }
    printf("bench_matvec: %d x (%d x %d), n = 1, %d rounds: best / median\n", MATS, N, K, rounds);
    for (int f = 0; f < NFMT; f++)
        for (int i = 0; i < NISA; i++) {
            if (andrea_cpu_isa(isas[i]) != isas[i]) continue; /* this CPU does not have it */
            qsort(t[f][i], (size_t)rounds, sizeof(double), cmp_double);
            double best = t[f][i][0], med = t[f][i][rounds / 2], gw = (double)n / 1e9;
            printf("%-5s %-8s %6.2f / %6.2f G weights/s  %6.2f / %6.2f GB/s\n",
                   andrea_quant_name(FMTS[f]), andrea_isa_name(isas[i]), gw / best, gw / med,
                   gw * BYTES[f] / best, gw * BYTES[f] / med);
        }
    for (int f = 1; f < NFMT; f++) free(q[f]);
    for (int f = 0; f < NFMT; f++) free(scale[f]);
    free(w), free(x), free(out);
    return 0;
}
