/*
 * matmul_q8.c - a prompt's products against q8_0 or q4_0 weights in integer arithmetic,
 * as llama.cpp runs such files: each input row is quantised to int8 blocks of 32 (ggml's
 * q8_0: d = absmax / 127, q = round(x / d) half away from 0, d kept in fp32 here), each
 * block's dot with the weights' block is an exact integer sum, and the blocks add up in
 * fp32:
 *
 *   out[m][n] = (sum over b, in order, of fmaf(isum(m, n, b), da[m][b] * dw[n][b], .) + bias[n]) + resid[m][n]
 *
 * Integer products do 2-4x the multiply-adds of f32 FMAs per instruction (VNNI's 64 per
 * vpdpbusd, AVX2's 32 per vpmaddubsw + vpmaddwd), so a prompt's products run up to 2x the
 * f32 forward's. The cost is the input's rounding: about q8_0's own error on every
 * product, which is what llama.cpp users get from these files (--exact-prefill keeps the
 * f32 products).
 *
 * This file is the driver: it quantises the inputs once (matmul_q8_avx2.c), then each thread packs a panel
 * of output rows in its kernel's order right before using it, in its own buffer (99 KB
 * for K = 3072: no second copy of the model is kept), and runs every input row over it.
 * The kernels: matmul_q8_vnni.c (AVX-512 VNNI), matmul_q8_avx2.c (AVX2). Every step is
 * exact or one rounding in a fixed order, so each gives tests/reference/ref_mm_q8.c's bits.
 */
#include <stdint.h>
#include <stdlib.h>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/matmul_q8.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define QB Q8_BLOCK

#ifdef _OPENMP
static int max_threads(void) { return omp_get_max_threads(); }
static int thread_num(void) { return omp_get_thread_num(); }
#else
static int max_threads(void) { return 1; }
static int thread_num(void) { return 0; }
#endif

/* the best kernel isa allows on this CPU, or NULL (no int8 kernel: the f32 product runs) */
static const andrea_q8_kernel *kernel_for(int isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    int level = andrea_cpu_isa(isa);
    if (level == ANDREA_ISA_AVX512 && __builtin_cpu_supports("avx512vnni") &&
        __builtin_cpu_supports("avx512bw") && andrea_q8_kernel_vnni())
        return andrea_q8_kernel_vnni();
    if (level >= ANDREA_ISA_AVX2) return andrea_q8_kernel_avx2();
#else
    (void)isa;
#endif
    return NULL;
}

int andrea_mm_q8_supported(int isa) { return kernel_for(isa) != NULL; }

int andrea_mm_q8_forward(int isa, float *out, const float *inp, const void *w, int fmt,
                         const float *scale, const float *bias, const float *resid, int M,
                         int K, int N) {
    const andrea_q8_kernel *kern = kernel_for(isa);
    if ((fmt != ANDREA_QUANT_Q8_0 && fmt != ANDREA_QUANT_Q4_0) || M < 0 || K <= 0 || K % QB ||
        N % 32 || !kern || N % kern->panel) /* one rule at every ISA: 32 | N */
        return -1;
    if (M == 0) return 0; /* the question whether it can */
    int KB = K / QB, threads = max_threads(), P = kern->panel;
    size_t pack = (size_t)KB * P * (QB + sizeof(float));
    int8_t *aq = malloc((size_t)M * K);
    float *ad = malloc(sizeof(float) * (size_t)M * KB);
    int32_t *as = malloc(sizeof(int32_t) * (size_t)M * KB);
    char *packs = malloc(pack * (size_t)threads);
    if (!aq || !ad || !as || !packs) {
        free(aq), free(ad), free(as), free(packs);
        return -1;
    }
    andrea_q8_quantize_avx2(aq, ad, as, fmt == ANDREA_QUANT_Q8_0 ? kern->offset_q8_0 : kern->offset_q4_0,
                            inp, M, K);
#pragma omp parallel num_threads(threads)
    {
        uint8_t *pw = (uint8_t *)(packs + pack * (size_t)thread_num());
        float *pd = (float *)(pw + (size_t)KB * P * QB);
        /* panels handed out as threads come free: a thread the OS takes away on a loaded
         * machine leaves its panels to the others (each panel's outputs are one thread's
         * sums, so the bits do not depend on who computes them) */
#pragma omp for schedule(dynamic, 1) nowait /* the region's end is the barrier */
        for (int p = 0; p < N / P; p++) {
            kern->pack(pw, pd, w, fmt, scale, K, p * P);
            kern->rows(out, aq, ad, as, pw, pd, bias, resid, fmt, M, K, N, p * P);
        }
    }
    free(aq), free(ad), free(as), free(packs);
    return 0;
}
