/*
 * test_prefill_blocks.c - a prompt's products in q8_0/q4_0 blocks (matmul_q8.c, llama.cpp's
 * way: the inputs rounded to int8 blocks of 32, integer block dots):
 * - the AVX-512 VNNI and the AVX2 kernels give the plain reference's bits
 *   (tests/reference/ref_mm_q8.c) on ragged row counts, with and without bias and
 *   residual, for q8_0 and q4_0 weights, and at the integer sums' limits;
 * - the reference is within the input rounding's bound of the f32 product of the
 *   dequantised weights (|error| <= (d_b / 2) sum |w| per block, plus fp32 noise);
 * - it refuses, untouched, what it does not run (int8 weights, K or N not of 32);
 * - a model with q8_0 / q4_0 weights prefills through it where the CPU can (the logits
 *   near the exact prefill's, the next decoding steps near too), and with
 *   andrea_model_set_exact_prefill, or where it cannot, as the f32 prefill to the bit.
 * Each kernel is checked where the CPU (under ANDREA_ISA) runs it; elsewhere (ARM, the
 * baseline) the reference, the refusals and the f32 fallback are.
 */
#include <math.h>
#include <string.h>

#include "andrea.h"
#include "backend/cpu/kernels/kernels.h"
#include "reference/reference.h"
#include "test_decode.h"
#include "test_util.h"

/* w (N, K) in fmt, its scales and its dequantised f32 values */
static void quantized(int fmt, int N, int K, void **q, float **scale, float **deq) {
    float *w = tu_normal_array((size_t)N * K);
    *q = malloc(fmt == ANDREA_QUANT_Q4_0 ? (size_t)N * K / 2 : (size_t)N * K);
    *scale = tu_falloc((size_t)N * K / 32);
    *deq = tu_falloc((size_t)N * K);
    andrea_quantize_rows(*q, *scale, w, fmt, (size_t)N, (size_t)K);
    andrea_gather_rows(*deq, *q, fmt, *scale, NULL, N, K);
    free(w);
}

/* |ref - f32| within the inputs' rounding: per block half a step d_b = absmax / 127 times
 * the block's sum of |w|, plus 1e-5 of sum |x w| for the float sums */
static void check_bound(const float *got, const float *x, const float *deq, int M, int K,
                        int N, const char *what) {
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double exact = 0, bound = 0, mag = 0;
            for (int b = 0; b < K / 32; b++) {
                double amax = 0, wabs = 0;
                for (int k = b * 32; k < b * 32 + 32; k++) {
                    double xv = x[(size_t)m * K + k], wv = deq[(size_t)n * K + k];
                    exact += xv * wv;
                    mag += fabs(xv * wv);
                    amax = fmax(amax, fabs(xv));
                    wabs += fabs(wv);
                }
                bound += 0.5 * (amax / 127.0) * 1.001 * wabs;
            }
            if (fabs(got[(size_t)m * N + n] - exact) > bound + 1e-5 * mag) bad++;
        }
    if (bad) fprintf(stderr, "%s: %d outputs outside the rounding bound\n", what, bad);
    CHECK(bad == 0);
}

static void kernel_bits(const float *want, float *got, const float *x, const void *q, int fmt,
                        const float *scale, const float *b, const float *r, int M, int K, int N,
                        const char *what);

static void kernel_case(int fmt, int M, int K, int N, int with_bias, int with_resid) {
    void *q;
    float *scale, *deq;
    quantized(fmt, N, K, &q, &scale, &deq);
    float *x = tu_normal_array((size_t)M * K), *bias = tu_normal_array((size_t)N);
    float *resid = tu_normal_array((size_t)M * N);
    float *want = tu_falloc((size_t)M * N), *got = tu_falloc((size_t)M * N);
    const float *b = with_bias ? bias : NULL, *r = with_resid ? resid : NULL;
    andrea_ref_mm_q8_forward(want, x, q, fmt, scale, b, r, M, K, N);
    char what[96];
    snprintf(what, sizeof what, "%s M=%d K=%d N=%d bias %d resid %d",
             andrea_quant_name(fmt), M, K, N, with_bias, with_resid);
    if (!with_bias && !with_resid) check_bound(want, x, deq, M, K, N, what);
    kernel_bits(want, got, x, q, fmt, scale, b, r, M, K, N, what);
    free(q), free(scale), free(deq), free(x), free(bias), free(resid), free(want), free(got);
}

/* every ISA's kernel this CPU runs (VNNI at avx512, vpmaddubsw at avx2) gives want's bits */
static void kernel_bits(const float *want, float *got, const float *x, const void *q, int fmt,
                        const float *scale, const float *b, const float *r, int M, int K, int N,
                        const char *what) {
    int isas[] = {ANDREA_ISA_AVX512, ANDREA_ISA_AVX2};
    for (int i = 0; i < 2; i++) {
        if (andrea_cpu_isa(isas[i]) != isas[i] || !andrea_mm_q8_supported(isas[i])) continue;
        memset(got, 0, sizeof(float) * (size_t)M * N);
        CHECK(andrea_mm_q8_forward(isas[i], got, x, q, fmt, scale, b, r, M, K, N) == 0);
        if (memcmp(got, want, sizeof(float) * (size_t)M * N) != 0) {
            fprintf(stderr, "%s at %s: the kernel's bits differ from the reference's\n", what,
                    andrea_isa_name(isas[i]));
            CHECK(0);
        }
    }
}

/* the integer sums at their limits: q8_0 weights of -128 and 127 (a file may hold -128)
 * and q4_0's 0 and 15 nibbles against inputs rounded to +-127, where a 16-bit lane of
 * vpmaddubsw would saturate if the kernel added more than it may; and blocks whose inputs
 * are 0, subnormal or NaN (quantised to 0 and 127, never undefined) */
static void extremes(int fmt) {
    int M = 5, K = 128, N = 32, KB = K / 32;
    void *q = malloc((size_t)N * K);
    float *scale = tu_falloc((size_t)N * KB), *x = tu_falloc((size_t)M * K);
    float *want = tu_falloc((size_t)M * N), *got = tu_falloc((size_t)M * N);
    for (int i = 0; i < N * K; i++) {
        int hi = (i * 7 + i / 13) % 3 != 0;
        if (fmt == ANDREA_QUANT_Q8_0) ((int8_t *)q)[i] = (int8_t)(hi ? -128 : 127);
        else if (i < N * K / 2) ((uint8_t *)q)[i] = hi ? 0xF0 : 0x0F;
    }
    for (int i = 0; i < N * KB; i++) scale[i] = 1.0f / (float)(1 + i % 5);
    /* block 3: absmax 127 (d = 1), so x / d are the values themselves: ties, which round
     * away from 0, and the floats just below them, which do not */
    const float ties[] = {127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 1.4999999f, 0.49999997f, -126.5f};
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) /* block 0: +-1 (all q +-127); 1: zeros; 2: subnormal */
            x[m * K + k] = k < 32 ? ((k + m) % 2 ? 1.0f : -1.0f) : k < 64 ? 0.0f
                         : k < 96 ? 1e-41f * (float)(k % 3) : (k == 100 && m == 2 ? NAN : ties[(k + m) % 8]);
    andrea_ref_mm_q8_forward(want, x, q, fmt, scale, NULL, NULL, M, K, N);
    int finite = 1;
    for (int i = 0; i < M * N; i++) finite &= isfinite(want[i]) != 0;
    CHECK(finite);
    kernel_bits(want, got, x, q, fmt, scale, NULL, NULL, M, K, N,
                fmt == ANDREA_QUANT_Q8_0 ? "q8_0 extremes" : "q4_0 extremes");
    free(q), free(scale), free(x), free(want), free(got);
}

static void refusals(void) {
    float out[64 * 48] = {0}, x[64 * 40] = {0}, sc[64 * 2] = {1};
    int8_t w[64 * 64] = {0};
    CHECK(andrea_mm_q8_forward(-1, out, x, w, ANDREA_QUANT_INT8, sc, NULL, NULL, 2, 32, 32) == -1);
    CHECK(andrea_mm_q8_forward(-1, out, x, w, ANDREA_QUANT_Q8_0, sc, NULL, NULL, 2, 40, 32) == -1);
    CHECK(andrea_mm_q8_forward(-1, out, x, w, ANDREA_QUANT_Q8_0, sc, NULL, NULL, 2, 32, 48) == -1);
    CHECK(andrea_mm_q8_forward(-1, out, x, w, ANDREA_QUANT_Q8_0, sc, NULL, NULL, 2, 32, 32) ==
          (andrea_mm_q8_supported(-1) ? 0 : -1));
    CHECK(andrea_mm_q8_forward(ANDREA_ISA_BASELINE, out, x, w, ANDREA_QUANT_Q8_0, sc, NULL, NULL, 2,
                               32, 32) == -1); /* capped below AVX2 */
    CHECK(tu_max_abs(out, 64) == 0.0 || andrea_mm_q8_supported(-1)); /* refused: untouched */
}

/* a prompt through a model with fmt weights: blocks where they run, else bit-exact f32 */
static void model_case(int fmt) {
    andrea_config c = td_gpt2_tiny();
    andrea_model *m = andrea_model_create(&c, 11);
    /* the f32 weights rounded to fmt's values first, as a q8_0/q4_0 GGUF loads: then the
     * exact prefill computes with the very weights the blocks hold */
    CHECK(m && andrea_model_fake_quantize(m, fmt) == 0 && andrea_model_quantize(m, fmt) == 0);
    int V = c.vocab, n = 21;
    int32_t prompt[21];
    for (int i = 0; i < n; i++) prompt[i] = (int32_t)((i * 37 + 3) % V);
    andrea_kv *k1 = andrea_kv_create(m), *k2 = andrea_kv_create(m);
    CHECK(k1 && k2);
    int blocks = andrea_model_prefill_blocks(m);
    CHECK(blocks == andrea_mm_q8_supported(-1));
    float *fast = tu_dup(andrea_kv_prefill(m, k1, prompt, n), (size_t)V);
    andrea_model_set_exact_prefill(m, 1);
    CHECK(andrea_model_prefill_blocks(m) == 0);
    float *exact = tu_dup(andrea_kv_prefill(m, k2, prompt, n), (size_t)V);
    andrea_model_quantize(m, ANDREA_QUANT_NONE); /* the f32 prefill of the same weights */
    andrea_kv_reset(k2);
    andrea_model_set_exact_prefill(m, 0);
    CHECK(andrea_model_prefill_blocks(m) == 0); /* f32 weights: never blocks */
    float *f32 = tu_dup(andrea_kv_prefill(m, k2, prompt, n), (size_t)V);
    CHECK(memcmp(exact, f32, sizeof(float) * V) == 0); /* exact prefill = f32's, whatever fmt */
    if (blocks) {
        CHECK(memcmp(fast, exact, sizeof(float) * V) != 0); /* it did run */
        CHECK(tu_check_rel("blocks prefill vs exact", fast, exact, (size_t)V, 3e-2));
    } else {
        CHECK(memcmp(fast, exact, sizeof(float) * V) == 0);
    }
    /* the caches they filled decode alike: one step from each */
    CHECK(andrea_model_quantize(m, fmt) == 0);
    andrea_kv_reset(k2);
    andrea_model_set_exact_prefill(m, 1);
    CHECK(andrea_kv_prefill(m, k2, prompt, n) != NULL);
    float *s1 = tu_dup(andrea_kv_step(m, k1, 5), (size_t)V);
    const float *s2 = andrea_kv_step(m, k2, 5);
    CHECK(s2 && tu_check_rel("the step after each prefill", s1, s2, (size_t)V, blocks ? 3e-2 : 0.0));
    free(fast), free(exact), free(f32), free(s1);
    andrea_kv_free(k1), andrea_kv_free(k2);
    andrea_model_free(m);
}

int main(void) {
    tu_rng_seed(42);
    if (!andrea_mm_q8_supported(-1))
        printf("test_prefill_blocks: no AVX2 here (or ANDREA_ISA caps it): the kernels' bits "
               "are not checked, the reference and the fallbacks are\n");
    int fmts[] = {ANDREA_QUANT_Q8_0, ANDREA_QUANT_Q4_0};
    int rows[] = {1, 3, 4, 5, 8, 13, 14, 33}; /* every remainder of the tiles' 4 and 6 rows */
    for (int f = 0; f < 2; f++) {
        for (int i = 0; i < 8; i++) kernel_case(fmts[f], rows[i], 96, 64, 0, 0);
        kernel_case(fmts[f], 7, 768, 96, 1, 0);
        kernel_case(fmts[f], 6, 256, 32, 1, 1);
        kernel_case(fmts[f], 9, 32, 128, 0, 1);
        extremes(fmts[f]);
        model_case(fmts[f]);
    }
    refusals();
    return tu_finish("test_prefill_blocks");
}
