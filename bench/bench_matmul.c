/*
 * bench_matmul.c - the three products of a linear layer at the shapes of training, our
 * kernels in fp32 and bf16 against OpenBLAS (when built in), and the default backend
 * ("cpu": per shape, the faster of the two, matmul_tune.c), side by side in one run:
 *   forward  out  = inp @ w^T     dinp += dout @ w     dw += dout^T @ inp
 * GFLOP/s, best of REPS (default 5) per cell, cells interleaved so that load from other
 * processes falls on all alike. Threads: OMP_NUM_THREADS. The ISA: ANDREA_ISA caps ours,
 * OPENBLAS_CORETYPE OpenBLAS's (Haswell = AVX2, Prescott = SSE3); the header says which.
 *
 *   OMP_NUM_THREADS=2 build/bench/bench_matmul [REPS] [SHAPE]   (SHAPE: names containing it)
 *   ANDREA_ISA=avx2 OPENBLAS_CORETYPE=Haswell OMP_NUM_THREADS=2 build/bench/bench_matmul
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "backend/backend.h"
#include "backend/cpu/kernels/kernels.h"
#include "util/perf.h"

typedef struct {
    const char *what;
    int M, K, N; /* tokens, inputs, outputs */
} shape;

static const shape shapes[] = {
    {"baby qkv", 768, 128, 384},          {"baby fc", 768, 128, 512},
    {"andrea-12m qkv", 1024, 384, 1152},  {"andrea-12m fc", 1024, 384, 1536},
    {"andrea-12m proj", 1024, 1536, 384}, {"andrea-12m head", 1024, 384, 2305},
    {"andrea-120m fc", 1024, 768, 3072},  {"gpt2 fc", 256, 768, 3072},
    {"gpt2 proj", 256, 3072, 768},        {"gpt2 attn out", 256, 768, 768},
    {"gpt2 head", 256, 768, 50257},
    {"square 1024", 1024, 1024, 1024},
};

enum { BUILTIN, BF16, BLAS, AUTO, N_ENGINES };
static const char *names[N_ENGINES] = {"built-in fp32", "built-in bf16", "OpenBLAS", "cpu (auto)"};

static const andrea_backend *g_be[N_ENGINES]; /* NULL: not available here */

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1) reps = 1;
    int have[N_ENGINES];
    static const char *const backend_names[N_ENGINES] = {NULL, "cpu-bf16", "cpu-blas", "cpu"};
    static andrea_backend builtin; /* the default backend with the built-in kernels only */
    static andrea_cpu_engine builtin_engine;
    builtin = andrea_backend_cpu;
    builtin_engine = *andrea_backend_cpu_engine(&andrea_backend_cpu);
    builtin_engine.engine = ANDREA_MATMUL_BUILTIN;
    builtin.state = &builtin_engine;
    g_be[BUILTIN] = &builtin;
    for (int e = 0; e < N_ENGINES; e++)
        have[e] = e == BUILTIN || (g_be[e] = andrea_backend_find(backend_names[e])) != NULL;
    if (!andrea_blas_available()) have[AUTO] = 0; /* the same as built-in */
    printf("ISA %s | BLAS core %s | %s threads\n\n", andrea_isa_name(andrea_cpu_isa(-1)),
           andrea_blas_core(), getenv("OMP_NUM_THREADS") ? getenv("OMP_NUM_THREADS") : "all");
    printf("| shape | M | K | N | engine | forward | dinp | dw |\n|---|---|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const shape *sh = &shapes[s];
        if (argc > 2 && !strstr(sh->what, argv[2])) continue;
        size_t mk = (size_t)sh->M * sh->K, nk = (size_t)sh->N * sh->K, mn = (size_t)sh->M * sh->N;
        float *inp = malloc(4 * mk), *w = malloc(4 * nk), *out = malloc(4 * mn);
        float *dout = malloc(4 * mn), *dinp = calloc(mk, 4), *dw = calloc(nk, 4);
        if (!inp || !w || !out || !dout || !dinp || !dw) {
            fprintf(stderr, "bench_matmul: out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < mk; i++) inp[i] = (float)(i % 7) * 0.1f;
        for (size_t i = 0; i < nk; i++) w[i] = (float)(i % 5) * 0.1f;
        for (size_t i = 0; i < mn; i++) dout[i] = (float)(i % 3) * 0.1f;
        double flop = 2.0 * sh->M * sh->K * sh->N, best[N_ENGINES][3] = {{0}};
        for (int r = 0; r < reps + 1; r++) /* the first round warms up, untimed */
            for (int e = 0; e < N_ENGINES; e++) {
                if (!have[e]) continue;
                const andrea_backend *be = g_be[e];
                double t0 = andrea_now();
                be->ops.matmul_forward(be, out, inp, w, NULL, sh->M, sh->K, sh->N);
                double t1 = andrea_now();
                be->ops.matmul_backward(be, dinp, NULL, NULL, dout, inp, w, sh->M, sh->K, sh->N, 0);
                double t2 = andrea_now();
                be->ops.matmul_backward(be, NULL, dw, NULL, dout, inp, w, sh->M, sh->K, sh->N, 0);
                double t3 = andrea_now(), dt[3] = {t1 - t0, t2 - t1, t3 - t2};
                for (int p = 0; p < 3 && r > 0; p++)
                    if (flop / dt[p] > best[e][p]) best[e][p] = flop / dt[p];
            }
        for (int e = 0; e < N_ENGINES; e++)
            if (have[e])
                printf("| %s | %d | %d | %d | %s | %.0f | %.0f | %.0f |\n", sh->what, sh->M, sh->K,
                       sh->N, names[e], best[e][0] * 1e-9, best[e][1] * 1e-9, best[e][2] * 1e-9);
        free(inp), free(w), free(out), free(dout), free(dinp), free(dw);
    }
    return 0;
}
