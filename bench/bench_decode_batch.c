/*
 * bench_decode_batch.c - batched decoding against sequential decoding, side by side in one
 * run: 4 sequences of different lengths (prompts 8, 40, 100 and 200 tokens) advance STEPS
 * tokens each, either in one andrea_kv_batch_step per step or by 4 andrea_kv_step calls
 * one after the other. Rounds alternate the two so load from other processes falls on
 * both; the best and median round of each are printed, and the ratio of the medians.
 * Random weights (the speed does not depend on their values).
 *
 *   OMP_NUM_THREADS=2 build/bench/bench_decode_batch [PRESET [WEIGHTS [ROUNDS]]]
 *   PRESET: andrea-12m (default), andrea-120m, baby, ...; WEIGHTS: f32 (default), bf16, int8
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "util/perf.h"

enum { NSEQ = 4, STEPS = 32, MAX_ROUNDS = 15 };
static const int prompt_len[NSEQ] = {8, 40, 100, 200};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Fresh caches holding the prompts (not timed). */
static int fill(andrea_model *m, andrea_kv **kv) {
    for (int s = 0; s < NSEQ; s++) {
        int32_t prompt[256];
        for (int i = 0; i < prompt_len[s]; i++) prompt[i] = (int32_t)((i * 31 + s * 7) % 200);
        andrea_kv_reset(kv[s]);
        if (!andrea_kv_prefill(m, kv[s], prompt, prompt_len[s])) return -1;
    }
    return 0;
}

/* Seconds for STEPS tokens of every sequence, batched or one sequence after another. */
static double run(andrea_model *m, andrea_kv **kv, andrea_kv_batch *b, int batched) {
    if (fill(m, kv)) return -1;
    int32_t tok[NSEQ] = {1, 2, 3, 4};
    double t0 = andrea_now();
    for (int i = 0; i < STEPS; i++) {
        if (batched) {
            if (!andrea_kv_batch_step(m, b, kv, tok, NSEQ)) return -1;
        } else {
            for (int s = 0; s < NSEQ; s++)
                if (!andrea_kv_step(m, kv[s], tok[s])) return -1;
        }
    }
    return andrea_now() - t0;
}

int main(int argc, char **argv) {
    const char *preset = argc > 1 ? argv[1] : "andrea-12m";
    const char *weights = argc > 2 ? argv[2] : "f32";
    int rounds = argc > 3 ? atoi(argv[3]) : 7;
    if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 7;
    andrea_config cfg;
    int quant;
    if (andrea_config_preset(preset, &cfg) || andrea_quant_parse(weights, &quant))
        return fprintf(stderr, "bench_decode_batch: %s\n", andrea_error()), 2;
    andrea_model *m = andrea_model_create(&cfg, 1);
    andrea_kv_batch *b = m ? andrea_kv_batch_create(m, NSEQ) : NULL;
    andrea_kv *kv[NSEQ] = {0};
    for (int s = 0; m && s < NSEQ; s++) kv[s] = andrea_kv_create(m);
    if (!b || !kv[NSEQ - 1] || andrea_model_quantize(m, quant))
        return fprintf(stderr, "bench_decode_batch: %s\n", andrea_error()), 1;
    run(m, kv, b, 1); /* warm-up: pages, caches, threads */
    run(m, kv, b, 0);
    double t[2][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
        for (int batched = 0; batched < 2; batched++)
            if ((t[batched][r] = run(m, kv, b, batched)) < 0)
                return fprintf(stderr, "bench_decode_batch: %s\n", andrea_error()), 1;
    printf("%s, %s weights, %d sequences (prompts %d %d %d %d), %d tokens each, %d rounds\n",
           preset, weights, NSEQ, prompt_len[0], prompt_len[1], prompt_len[2], prompt_len[3],
           STEPS, rounds);
    double med[2];
    for (int batched = 0; batched < 2; batched++) {
        qsort(t[batched], (size_t)rounds, sizeof(double), cmp_double);
        med[batched] = t[batched][rounds / 2];
        double toks = (double)NSEQ * STEPS;
        printf("  %-10s best %7.1f tok/s  median %7.1f tok/s\n",
               batched ? "batched" : "sequential", toks / t[batched][0], toks / med[batched]);
    }
    printf("  batched / sequential throughput (medians): %.2fx\n", med[0] / med[1]);
    for (int s = 0; s < NSEQ; s++) andrea_kv_free(kv[s]);
    andrea_kv_batch_free(b);
    andrea_model_free(m);
    return 0;
}
