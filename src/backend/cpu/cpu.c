/*
 * cpu.c - the "cpu" backend: today's kernels (src/backend/cpu/kernels), each operation
 * forwarding to its kernel with the instance's engine (andrea_cpu_engine: BLAS or
 * built-in, fp32 or bf16 operands, the ISA cap). Memory is host memory.
 *
 * Variants, one instance each, same operations, different settings:
 *   cpu           fp32, the best ISA the CPU has, each product shape on the faster of the
 *                 built-in kernels and the BLAS (kernels/matmul_tune.c; the default)
 *   cpu-avx512, cpu-avx2, cpu-baseline   every kernel capped at that ISA (the matmul and
 *                 flash attention tiles, decoding's dot products; ANDREA_ISA caps them all)
 *   cpu-blas      large products through the BLAS compiled in (cmake/optional.cmake)
 *   cpu-bf16      large products with bf16 operands (AVX512-BF16 CPUs)
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "util/bigalloc.h"

#define E(be) ((const andrea_cpu_engine *)(be)->state)

static void *cpu_alloc(be_t be, size_t bytes) {
    (void)be;
    return andrea_big_alloc(bytes ? bytes : 1);
}
static void cpu_free(be_t be, void *p) {
    (void)be;
    free(p);
}
static void cpu_copy(be_t be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes) memcpy(dst, src, bytes);
}

static void cpu_zero(be_t be, void *p, size_t bytes) {
    (void)be;
    if (bytes) memset(p, 0, bytes);
}
static void cpu_copy_rows(be_t be, float *dst, size_t ld_dst, const float *src, size_t ld_src,
                          size_t n, size_t rows) {
    (void)be;
    andrea_copy_rows(dst, ld_dst, src, ld_src, n, rows);
}
static void cpu_synchronize(be_t be) { (void)be; }

static void cpu_fill(be_t be, float *p, size_t n, int kind, float a, float b, andrea_rng *rng) {
    (void)be;
    andrea_fill(p, n, kind, a, b, rng);
}
static uint64_t cpu_count_nonfinite(be_t be, const float *x, size_t n, int nonneg) {
    (void)be;
    return andrea_count_nonfinite(x, n, nonneg);
}
static float cpu_max_abs(be_t be, const float *x, size_t n) {
    (void)be;
    return andrea_max_abs(x, n);
}
static void cpu_quantize(be_t be, void *dst, float *scale, const float *src, int fmt,
                         size_t rows, size_t cols) {
    (void)be;
    andrea_quantize_rows(dst, scale, src, fmt, rows, cols);
}
static void cpu_gather_rows(be_t be, float *out, const void *w, int fmt, const float *scale,
                            const int32_t *ids, int n, int K) {
    (void)be;
    andrea_gather_rows(out, w, fmt, scale, ids, n, K);
}

static void cpu_embedding_forward(be_t be, float *out, const int32_t *tokens, const float *wte,
                                  const float *wpe, int B, int T, int C) {
    (void)be;
    andrea_embedding_forward(out, tokens, wte, wpe, B, T, C);
}
static void cpu_embedding_backward(be_t be, float *dwte, float *dwpe, const float *dout,
                                   const int32_t *tokens, int B, int T, int C) {
    (void)be;
    andrea_embedding_backward(dwte, dwpe, dout, tokens, B, T, C);
}
static void cpu_residual_forward(be_t be, float *out, const float *a, const float *b, size_t n) {
    (void)be;
    andrea_residual_forward(out, a, b, n);
}

static void cpu_matmul_forward(be_t be, float *out, const float *inp, const float *w,
                               const float *bias, int M, int K, int N) {
    andrea_mm_forward(E(be), out, inp, w, bias, M, K, N);
}
static void cpu_matmul_forward_residual(be_t be, float *out, const float *inp, const float *w,
                                        const float *bias, const float *resid, int M, int K,
                                        int N) {
    andrea_mm_forward_residual(E(be), out, inp, w, bias, resid, M, K, N);
}
static void cpu_matmul_forward_act(be_t be, float *pre, float *post, const float *inp,
                                   const float *w, const float *bias, int M, int K, int N,
                                   int act) {
    andrea_mm_forward_act(E(be), pre, post, inp, w, bias, M, K, N, act);
}
static void cpu_matmul_backward(be_t be, float *dinp, float *dw, float *dbias, const float *dout,
                                const float *inp, const float *w, int M, int K, int N,
                                int dw_init) {
    andrea_mm_backward(E(be), dinp, dw, dbias, dout, inp, w, M, K, N, dw_init);
}
static void cpu_matmul_backward_act(be_t be, float *dpre, float *dw, float *dbias,
                                    const float *dout, const float *post, const float *w,
                                    const float *pre, int M, int K, int N, int act, int dw_init) {
    andrea_mm_backward_act(E(be), dpre, dw, dbias, dout, post, w, pre, M, K, N, act, dw_init);
}
static void cpu_matvec(be_t be, float *out, const float *x, const void *w, int fmt,
                       const float *scale, const float *bias, int K, int N, int n) {
    andrea_matvec_rows_isa(E(be)->isa, out, x, w, fmt, scale, bias, K, N, n);
}

static int cpu_matmul_blocks(be_t be, float *out, const float *inp, const void *w, int fmt,
                             const float *scale, const float *bias, const float *resid, int M,
                             int K, int N) {
    if (E(be)->precision != ANDREA_PRECISION_FP32) return -1;
    return andrea_mm_q8_forward(E(be)->isa, out, inp, w, fmt, scale, bias, resid, M, K, N);
}

static void cpu_norm_forward(be_t be, int kind, float *out, float *mean, float *rstd,
                             const float *inp, const float *w, const float *b, int N, int C,
                             float eps) {
    andrea_norm_forward_isa(E(be)->isa, kind, out, mean, rstd, inp, w, b, N, C, eps);
}
static void cpu_norm_backward(be_t be, int kind, float *dinp, float *dw, float *db,
                              const float *dout, const float *inp, const float *w,
                              const float *mean, const float *rstd, int N, int C) {
    andrea_norm_backward_isa(E(be)->isa, kind, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
static void cpu_activation_forward(be_t be, float *out, const float *inp, size_t n, int act) {
    andrea_activation_forward_isa(E(be)->isa, out, inp, n, act);
}

static void cpu_attention_forward(be_t be, float *out, float *att, float *preatt,
                                  const float *qkv, int B, int T, int C, int NH) {
    (void)be;
    andrea_attention_forward(out, att, preatt, qkv, B, T, C, NH);
}
static void cpu_attention_backward(be_t be, float *dqkv, const float *dout, const float *qkv,
                                   const float *att, int B, int T, int C, int NH) {
    (void)be;
    andrea_attention_backward(dqkv, dout, qkv, att, B, T, C, NH);
}
static void cpu_attention_flash_forward(be_t be, float *out, float *lse, const float *qkv, int B,
                                        int T, int C, int NH) {
    andrea_attention_flash_forward(E(be), out, lse, qkv, B, T, C, NH);
}
static void cpu_attention_flash_backward(be_t be, float *dqkv, const float *dout,
                                         const float *qkv, const float *out, const float *lse,
                                         int B, int T, int C, int NH) {
    andrea_attention_flash_backward(E(be), dqkv, dout, qkv, out, lse, B, T, C, NH);
}
static void cpu_attention_decode(be_t be, float *out, float *att, int ld, const float *q,
                                 const float *kc, const float *vc, int pos, int C, int NH) {
    (void)be;
    andrea_attention_decode(out, att, ld, q, kc, vc, pos, C, NH);
}

static float cpu_crossentropy_forward(be_t be, float *logits_to_probs, float *losses,
                                      const int32_t *targets, int N, int V, int ld, int *n_valid) {
    (void)be;
    return andrea_crossentropy_forward(logits_to_probs, losses, targets, N, V, ld, n_valid);
}
static void cpu_crossentropy_backward(be_t be, float *probs_to_dlogits, const int32_t *targets,
                                      int N, int V, int ld, float dloss) {
    (void)be;
    andrea_crossentropy_backward(probs_to_dlogits, targets, N, V, ld, dloss);
}
/* The cap the ranks of a data-parallel run agreed on for the kernels that write the
 * weights (src/parallel/consistency.c); -1: none. Process-wide: one process trains one
 * run at a time, and the agreement sets it again at every run's start. */
static int g_update_cap = -1;

void andrea_backend_cap_updates(int isa) { g_update_cap = isa; }

static int update_isa(be_t be) {
    int e = E(be)->isa, cap = e < 0 || (g_update_cap >= 0 && g_update_cap < e) ? g_update_cap : e;
    return andrea_cpu_isa(cap);
}

static void cpu_adamw_update(be_t be, float *p, const float *g, float *m, float *v, size_t n,
                             float lr, float b1, float b2, float eps, float wd, int t,
                             float gscale) {
    andrea_adamw_update_isa(update_isa(be), p, g, m, v, n, lr, b1, b2, eps, wd, t, gscale);
}
static double cpu_sum_squares(be_t be, const float *g, size_t n) {
    return andrea_grad_sum_squares_isa(update_isa(be), g, n);
}

/* ---- which variants this machine and build can run ---------------------------------- */

static int always(be_t be) {
    (void)be;
    return 1;
}
static int has_isa(be_t be) { return andrea_cpu_isa(E(be)->isa) == E(be)->isa; }
static int has_blas(be_t be) {
    (void)be;
    return andrea_blas_available();
}
static int has_bf16(be_t be) {
    (void)be;
    return andrea_bf16_supported();
}
static const char *why_not(be_t be) {
    if (E(be)->engine == ANDREA_MATMUL_BLAS)
        return "this build has no BLAS; install libopenblas-dev and rebuild";
    return getenv("ANDREA_ISA") ? "this CPU lacks the instructions, or ANDREA_ISA caps them"
                                : "this CPU lacks the instructions";
}

#define CPU_OPS                                                                               \
    {                                                                                         \
        .alloc = cpu_alloc, .free = cpu_free, .upload = cpu_copy, .download = cpu_copy,       \
        .zero = cpu_zero, .copy_rows = cpu_copy_rows, .synchronize = cpu_synchronize,         \
        .fill = cpu_fill, .count_nonfinite = cpu_count_nonfinite, .quantize = cpu_quantize,   \
        .max_abs = cpu_max_abs,                                                               \
        .gather_rows = cpu_gather_rows, .embedding_forward = cpu_embedding_forward,           \
        .embedding_backward = cpu_embedding_backward,                                         \
        .residual_forward = cpu_residual_forward, .matmul_forward = cpu_matmul_forward,       \
        .matmul_forward_residual = cpu_matmul_forward_residual,                               \
        .matmul_forward_act = cpu_matmul_forward_act,                                         \
        .matmul_backward = cpu_matmul_backward,                                               \
        .matmul_backward_act = cpu_matmul_backward_act, .matvec = cpu_matvec,                 \
        .matmul_blocks = cpu_matmul_blocks,                                                   \
        .norm_forward = cpu_norm_forward, .norm_backward = cpu_norm_backward,                 \
        .activation_forward = cpu_activation_forward,                                         \
        .attention_forward = cpu_attention_forward,                                           \
        .attention_backward = cpu_attention_backward,                                         \
        .attention_flash_forward = cpu_attention_flash_forward,                               \
        .attention_flash_backward = cpu_attention_flash_backward,                             \
        .attention_decode = cpu_attention_decode,                                             \
        .crossentropy_forward = cpu_crossentropy_forward,                                     \
        .crossentropy_backward = cpu_crossentropy_backward,                                   \
        .adamw_update = cpu_adamw_update, .sum_squares = cpu_sum_squares                      \
    }

/* each variant's settings: its state */
static andrea_cpu_engine e_cpu = {ANDREA_MATMUL_AUTO, ANDREA_PRECISION_FP32, -1},
    e_avx512 = {ANDREA_MATMUL_BUILTIN, ANDREA_PRECISION_FP32, ANDREA_ISA_AVX512},
    e_avx2 = {ANDREA_MATMUL_BUILTIN, ANDREA_PRECISION_FP32, ANDREA_ISA_AVX2},
    e_baseline = {ANDREA_MATMUL_BUILTIN, ANDREA_PRECISION_FP32, ANDREA_ISA_BASELINE},
    e_blas = {ANDREA_MATMUL_BLAS, ANDREA_PRECISION_FP32, -1},
    e_bf16 = {ANDREA_MATMUL_BUILTIN, ANDREA_PRECISION_BF16, -1};

/* (the precision field is a device backend's: a variant's is its engine's). No vocabulary
 * padding (vocab_multiple 1): no gain from it has been measured on a CPU, whose products
 * pack a ragged last panel with zeros themselves, so the extra columns would be pure work. */
#define CPU_VARIANT(var, name, desc, engine, avail)                                           \
    const andrea_backend var = {name,  desc,    CPU_OPS, &engine, ANDREA_MEM_HOST,            \
                                avail, why_not, ANDREA_PRECISION_FP32, NULL, 1, NULL}

CPU_VARIANT(andrea_backend_cpu, "cpu",
            "CPU, fp32, the best ISA here; each product shape on the faster of the built-in "
            "kernels and the BLAS (measured once per machine)",
            e_cpu, always);
CPU_VARIANT(andrea_backend_cpu_avx512, "cpu-avx512", "CPU, built-in kernels, fp32, AVX-512 tiles",
            e_avx512, has_isa);
CPU_VARIANT(andrea_backend_cpu_avx2, "cpu-avx2", "CPU, built-in kernels, fp32, AVX2+FMA tiles",
            e_avx2, has_isa);
CPU_VARIANT(andrea_backend_cpu_baseline, "cpu-baseline",
            "CPU, built-in kernels, fp32, baseline vectors (SSE2/NEON)", e_baseline, always);
CPU_VARIANT(andrea_backend_cpu_blas, "cpu-blas",
            "CPU, large products through BLAS (OpenBLAS), fp32",
            e_blas, has_blas);
CPU_VARIANT(andrea_backend_cpu_bf16, "cpu-bf16",
            "CPU, large products with bf16 operands, fp32 accumulation (AVX512-BF16)", e_bf16,
            has_bf16);

int andrea_backend_update_isa(be_t be) {
    if (be == &andrea_backend_cpu_guarded) be = &andrea_backend_cpu; /* it runs cpu's kernels */
    return andrea_backend_cpu_engine(be) ? update_isa(be) : -1;
}

const andrea_cpu_engine *andrea_backend_cpu_engine(be_t be) {
    const andrea_backend *cpus[] = {&andrea_backend_cpu,      &andrea_backend_cpu_avx512,
                                    &andrea_backend_cpu_avx2, &andrea_backend_cpu_baseline,
                                    &andrea_backend_cpu_blas, &andrea_backend_cpu_bf16};
    for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++)
        if (be == cpus[i]) return E(be);
    return NULL;
}
