/*
 * kernels.h - the numerical building blocks of the transformer, forward and
 * backward. Each fast kernel (kernels/<name>.c) has a plain reference twin
 * (ref_<name> in tests/reference/reference.c: simple loops, double accumulation)
 * that the tests compare it against.
 *
 * Conventions
 * - Row-major float32. Weight matrices are (out, in), as in PyTorch's Linear:
 *   out = inp @ w^T + bias.
 * - Every *_backward ACCUMULATES (+=) into each gradient it writes, so
 *   residual branches can add into the same buffer. Callers zero them first.
 *   A NULL gradient pointer means "not needed".
 * - Results do not depend on the number of threads: every output element is
 *   summed by one thread in a fixed order.
 */
#ifndef ANDREA_KERNELS_H
#define ANDREA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "andrea.h" /* ANDREA_ACT_*, ANDREA_NORM_*, ANDREA_QUANT_* */

/* ---- the CPU's settings --------------------------------------------------------- */

/* who runs large products: AUTO, the faster per shape (matmul_tune.c) */
enum { ANDREA_MATMUL_BUILTIN = 0, ANDREA_MATMUL_BLAS = 1, ANDREA_MATMUL_AUTO = 2 };
enum { ANDREA_PRECISION_FP32 = 0, ANDREA_PRECISION_BF16 = 1 }; /* their operands */

/* How the CPU kernels run, passed to each call instead of read from globals, so two
 * models in one process can run differently (src/backend/cpu/cpu.c holds one per variant).
 * NULL anywhere an engine is taken means the default: built-in fp32, the best ISA. */
typedef struct {
    int engine;    /* ANDREA_MATMUL_BUILTIN, _BLAS or _AUTO (large products only) */
    int precision; /* ANDREA_PRECISION_FP32 or _BF16 (bf16 operands, large products only) */
    int isa;       /* cap on the tiles' instruction set: 0 baseline, 1 AVX2+FMA,
                    * 2 AVX-512; < 0: the best the CPU has */
} andrea_cpu_engine;

/* Levels: 1 is AVX2+FMA on x86-64 and NEON on AArch64 (16-32 registers of 128-256 bits:
 * the 6 x 16 tile), 2 AVX-512 (32 registers of 512 bits: the 8 x 32 tile). */
enum { ANDREA_ISA_BASELINE = 0, ANDREA_ISA_AVX2 = 1, ANDREA_ISA_NEON = 1, ANDREA_ISA_AVX512 = 2 };

/* The instruction set a cap gives on this CPU (what every kernel will run): the best the
 * CPU has, capped by the environment's ANDREA_ISA and by cap (< 0: no cap). isa.c. */
int andrea_cpu_isa(int cap);
/* The CPU's level under ANDREA_ISA alone (read once per process). */
int andrea_isa_machine(void);
/* "avx512" | "avx2" | "neon" | "baseline" -> level (neon = avx2 = 1); -1 otherwise. */
int andrea_isa_parse(const char *name);
/* The level's name on this architecture ("avx2" on x86-64, "neon" on AArch64). */
const char *andrea_isa_name(int isa);
/* 1 when this build has BLAS compiled in. */
int andrea_blas_available(void);
/* The BLAS's kernel for this CPU (OpenBLAS's core name, "Haswell", "SkylakeX", ...), or
 * "none". OpenBLAS picks it when loaded: OPENBLAS_CORETYPE=Haswell caps it as ANDREA_ISA
 * caps ours. */
const char *andrea_blas_core(void);
/* C(M, N) += op(A) @ op(B) through the BLAS (op(X) = X^T when t_x), row-major, cut into
 * slabs fixed by the shape that our OpenMP threads share, each a single-threaded sgemm
 * (matmul_blas.c says why). Only when andrea_blas_available(). */
void andrea_blas_gemm(int t_a, int t_b, int M, int N, int K, const float *a, int lda,
                      const float *b, int ldb, float *c, int ldc);

/* The products of a linear layer (M tokens, K in, N out): forward inp @ w^T, dinp, dw. */
enum { ANDREA_MM_FWD = 0, ANDREA_MM_DINP = 1, ANDREA_MM_DW = 2 };
/* One shape's choice under the auto engine: GFLOP/s of both engines as measured. */
typedef struct {
    int op, M, K, N, isa;
    double builtin, blas; /* GFLOP/s */
    int use_blas;         /* BLAS more than 10% faster */
    int cached;           /* read from the per-machine file, not measured by this process */
} andrea_mm_choice;
/* 1 when the BLAS runs product op at this shape (measured the first time, matmul_tune.c). */
int andrea_mm_tune_blas(int isa, int op, int M, int K, int N);
/* The choices made so far in this process, for reports (`andrea bench`). */
int andrea_mm_tune_count(void);
int andrea_mm_tune_get(int i, andrea_mm_choice *out);

/* ---- matmul ------------------------------------------------------------------ */

/* The products under an engine (e NULL: the default).
 * forward:  out(M, N) = inp(M, K) @ w(N, K)^T + bias(N); bias may be NULL.
 * _residual: out = resid + inp @ w^T + bias, the product summed onto resid + bias (one pass
 *   over out fewer than a product and a residual add); resid must not overlap out.
 * _act: the MLP's first product with its activation fused: pre = inp @ w^T + bias (M, N),
 *   post = act(pre); the values of the product then the activation, one pass fewer. */
void andrea_mm_forward(const andrea_cpu_engine *e, float *out, const float *inp, const float *w,
                       const float *bias, int M, int K, int N);
void andrea_mm_forward_residual(const andrea_cpu_engine *e, float *out, const float *inp,
                                const float *w, const float *bias, const float *resid, int M,
                                int K, int N);
void andrea_mm_forward_act(const andrea_cpu_engine *e, float *pre, float *post, const float *inp,
                           const float *w, const float *bias, int M, int K, int N, int act);
/* backward: dinp(M, K) += dout(M, N) @ w(N, K); dw(N, K) += dout^T @ inp; dbias(N) +=
 *   sum_m dout.
 * _act: backward of out = post @ w^T + bias where post = act(pre): dpre = act'(pre) *
 *   (dout @ w) (OVERWRITTEN, unlike the rest), dw += dout^T @ post, dbias += sum_m dout.
 * With dw_init, dw and dbias are overwritten instead of added to (the first gradient of a
 * step: no zeroing pass over the weights' gradients, and no read of them in the product). */
void andrea_mm_backward(const andrea_cpu_engine *e, float *dinp, float *dw, float *dbias,
                        const float *dout, const float *inp, const float *w, int M, int K, int N,
                        int dw_init);
void andrea_mm_backward_act(const andrea_cpu_engine *e, float *dpre, float *dw, float *dbias,
                            const float *dout, const float *post, const float *w, const float *pre,
                            int M, int K, int N, int act, int dw_init);

/* What a product does to each finished output element while it is still in cache:
 * forward, post(m, n) = act(C(m, n)); backward (post NULL), C(m, n) *= act'(pre(m, n)).
 * ld: row stride of post / pre. */
typedef struct {
    int act; /* ANDREA_ACT_* */
    float *post;
    const float *pre;
    int ld;
} matmul_epilogue;

/* andrea_gemm_nn's product with bf16 operands (rounded to nearest even while packing) and fp32
 * accumulation, on AVX512-BF16 (vdpbf16ps): C(M, N) += A @ B, A and B strided as in
 * andrea_gemm_nn. Returns -1 with andrea_error(), C untouched, when the CPU lacks AVX512-BF16
 * or packing memory cannot be had. */
int andrea_gemm_bf16(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *b, long b_rs,
              long b_cs, int M, int K, int N);
int andrea_bf16_supported(void);

/* The general engine under both: C(M, N) (+)= A(M, K) @ B(K, N), where
 * A(m, k) = a[m * a_rs + k * a_cs] and B(k, n) = b[k * b_rs + n * b_cs] (any strides:
 * transposes are read in place), C row-major with row stride ldc. accumulate = 0
 * overwrites. */
void andrea_gemm_nn(float *c, int ldc, const float *a, long a_rs, long a_cs, const float *b, long b_rs,
             long b_cs, int M, int K, int N, int accumulate);
/* The same with the tile capped at isa (andrea_cpu_engine.isa). */
void andrea_gemm_nn_isa(int isa, float *c, int ldc, const float *a, long a_rs, long a_cs,
                        const float *b, long b_rs, long b_cs, int M, int K, int N, int accumulate);

/* The products' thread split: thread t of nt gets units [u t / nt, u (t+1) / nt) of the
 * u = ceil(total / unit) units, as [*lo, *hi): slabs of whole tiles, fixed by nt alone. */
static inline void gemm_split_range(int total, int unit, int t, int nt, int *lo, int *hi) {
    long units = (total + unit - 1) / unit;
    *lo = (int)(units * t / nt) * unit;
    *hi = (int)(units * (t + 1) / nt) * unit;
    if (*hi > total) *hi = total;
}

/* Rows or columns of C(M, N) = A(M, K) @ B(K, N) for thread t of nt, in tiles of mr x nr.
 * Every thread packs (reads and writes) the part of B its columns need, once per k block,
 * and reads its rows of A, packing them once per block of nc columns unless A is read in
 * place (a_packed = 0). A row split packs all of B in every thread; a column split packs
 * each part of B once but reads all of A in every thread. The split that moves fewer
 * floats per thread: columns for the LM head (its B, 50257 x 768, packed per thread was
 * 154 MB) and for a small batch's square or narrow weights (gpt2 at B x T = 256: the
 * 3072 x 768 projection), rows for a large batch with a small weight (baby's dinp, 768
 * rows by 128 columns: 226 GFLOP/s split by columns, 370 by rows, 2 threads). */
static inline int gemm_split_by_cols(int M, int K, int N, int a_packed, int mr, int nr, int nc,
                                     int nt) {
    double blocks_all = (N + nc - 1) / nc, blocks_part = ((N + nt - 1) / nt + nc - 1) / nc;
    double by_rows = 2.0 * K * N + (double)M / nt * K * (a_packed ? 2 * blocks_all : 1);
    double by_cols = 2.0 * K * N / nt + (double)M * K * (a_packed ? 2 * blocks_part : 1);
    return N >= 2 * nr * nt && (M < 2 * mr * nt || by_cols < by_rows);
}
static inline void gemm_split(int M, int K, int N, int a_packed, int mr, int nr, int nc, int t,
                              int nt, int *m0, int *m1, int *n0, int *n1) {
    *m0 = 0, *m1 = M, *n0 = 0, *n1 = N;
    if (nt <= 1) return;
    if (gemm_split_by_cols(M, K, N, a_packed, mr, nr, nc, nt)) gemm_split_range(N, nr, t, nt, n0, n1);
    else gemm_split_range(M, mr, t, nt, m0, m1);
}

/* A column split handed out dynamically: chunks of whole nr tiles, at most nc wide, about
 * GEMM_CHUNKS_PER_THREAD per thread, so that a thread the OS takes away for a while (a
 * loaded machine) leaves its share to the others instead of stalling the product (a
 * 128-token gpt2-124m prefill beside one busy process, Xeon, 2 threads: best of 5 421-526
 * -> 488-627 tok/s; docs/performance.md). Only for products of at most GEMM_DYNAMIC_MAX_M rows (prompts, small
 * batches), whose A slab stays in L2 whatever the chunk: narrower chunks re-read a tall A
 * once per chunk, which cost sgemm 1024^3 6% (265 -> 248 GFLOP/s). Which thread computes a
 * column never changes its bits: each C element is one thread's sum in k order either way. */
#define GEMM_CHUNKS_PER_THREAD 4
#define GEMM_DYNAMIC_MAX_M 256
static inline int gemm_col_chunk(int N, int nr, int nc, int nt) {
    int want = (N + GEMM_CHUNKS_PER_THREAD * nt - 1) / (GEMM_CHUNKS_PER_THREAD * nt);
    int chunk = (want + nr - 1) / nr * nr;
    return chunk > nc ? nc / nr * nr : chunk;
}

/* ---- decoding dot products (dot.c) ------------------------------------------------------ */

/* sum_k w[k] x[k] for one weight row in fp32, bf16 (top 16 bits of an fp32) or int8 (the
 * row's scale applied by the caller); 4 accumulators on AVX-512, AVX2 and NEON, the best
 * the CPU has under ANDREA_ISA. */
float andrea_dot_f32(const float *w, const float *x, int K);
float andrea_dot_bf16(const uint16_t *w, const float *x, int K);
float andrea_dot_i8(const int8_t *w, const float *x, int K);

/* Decoding's product for n inputs: out(n, N) = x(n, K) w(N, K)^T + bias, w's rows in format
 * fmt (ANDREA_QUANT_NONE: float, _BF16: uint16_t, _INT8: int8_t times scale[r], _Q8_0:
 * int8_t times scale[(r K + k) / 32], K % 32 == 0; _Q4_0: andrea_q4_0_block's bytes, K / 2
 * per row, the same scales). q8_0 and q4_0 decode each weight exactly, so the result is
 * the fp32 product with the dequantised weights, to the bit at AVX2, AVX-512 and NEON
 * (the baseline's simd reduction may sum in another order). Each weight
 * row is read once for all n inputs (batched decoding: n sequences for the price of about
 * one read of the weights) and each vector of it decoded once per group of up to 2 (AVX2)
 * or 4 (AVX-512, NEON) inputs; every output is one dot in k order, the same bits for any n (the
 * fp32 rows are andrea_matmul_forward's at M = 1, to the bit). */
void andrea_matvec_rows(float *out, const float *x, const void *w, int fmt, const float *scale,
                        const float *bias, int K, int N, int n);
/* The same with the dot products capped at isa (andrea_cpu_isa; the ones above: -1). */
void andrea_matvec_rows_isa(int isa, float *out, const float *x, const void *w, int fmt,
                            const float *scale, const float *bias, int K, int N, int n);

/* A prompt's product against q8_0 or q4_0 weights (w, scale as andrea_matvec_rows'),
 * llama.cpp's way (matmul_q8.c): inp's rows quantised to int8 blocks of 32, exact integer
 * block dots, out(M, N) = sum_b fmaf(isum, da * dw, .) + bias (+ resid, (M, N)); bias and
 * resid may be NULL. AVX-512 VNNI and AVX2 (andrea_mm_q8_supported): otherwise, or when K
 * or N is not a multiple of 32 or memory runs out, -1 with out untouched; M = 0: 0 where
 * it would run. */
int andrea_mm_q8_forward(int isa, float *out, const float *inp, const void *w, int fmt,
                         const float *scale, const float *bias, const float *resid, int M,
                         int K, int N);
int andrea_mm_q8_supported(int isa);

/* ---- normalisation --------------------------------------------------------------- */

/* LayerNorm over the last dim: out = (x - mean) * rstd * w + b, rstd = 1/sqrt(var + eps),
 * biased variance. mean and rstd (N) are saved for backward. b may be NULL. */
void andrea_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *w, const float *b, int N, int C, float eps);
void andrea_layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
                        const float *inp, const float *w, const float *mean,
                        const float *rstd, int N, int C);
/* RMSNorm: out = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps). rstd (N) saved. */
void andrea_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w,
                     int N, int C, float eps);
void andrea_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp,
                      const float *w, const float *rstd, int N, int C);

/* The one norm dispatch: kind is an andrea_norm; RMSNorm ignores mean and b. */
void andrea_norm_forward(int kind, float *out, float *mean, float *rstd, const float *inp,
                         const float *w, const float *b, int N, int C, float eps);
void andrea_norm_backward(int kind, float *dinp, float *dw, float *db, const float *dout,
                          const float *inp, const float *w, const float *mean, const float *rstd,
                          int N, int C);
/* The same capped at isa (andrea_cpu_isa; the ones above: -1): one copy of the loops per
 * ISA, its vectors and FMAs (the bits differ between ISAs, not between thread counts). */
void andrea_norm_forward_isa(int isa, int kind, float *out, float *mean, float *rstd,
                             const float *inp, const float *w, const float *b, int N, int C,
                             float eps);
void andrea_norm_backward_isa(int isa, int kind, float *dinp, float *dw, float *db,
                              const float *dout, const float *inp, const float *w,
                              const float *mean, const float *rstd, int N, int C);

/* ---- activations (act is an andrea_act) -------------------------------------------- */

/* gelu-tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));  relu; relu2 = relu(x)^2 */
void andrea_activation_forward(float *out, const float *inp, size_t n, int act);
/* The same at an ISA cap (andrea_cpu_engine.isa; the one above: -1): GELU in the matmul
 * epilogue's vector code (act_simd.h), the values andrea_matmul_forward_act's post has. */
void andrea_activation_forward_isa(int isa, float *out, const float *inp, size_t n, int act);
/* dinp += f'(inp) * dout */
void andrea_activation_backward(float *dinp, const float *inp, const float *dout, size_t n, int act);

/* ---- embeddings (embedding.c) ------------------------------------------------------- */

/* out (B, T, C) = wte[tokens[b, t]] + wpe[t]. tokens (B, T) are host memory, checked by
 * the caller to lie in [0, V). */
void andrea_embedding_forward(float *out, const int32_t *tokens, const float *wte,
                              const float *wpe, int B, int T, int C);
/* dwte[tokens[b, t]] += dout[b, t]; dwpe[t] += dout[b, t]. Same result for any thread
 * count (each row is summed over positions in order). */
void andrea_embedding_backward(float *dwte, float *dwpe, const float *dout,
                               const int32_t *tokens, int B, int T, int C);

/* ---- residual ------------------------------------------------------------------- */

/* out = a + b (n floats) */
void andrea_residual_forward(float *out, const float *a, const float *b, size_t n);

/* ---- causal multi-head attention --------------------------------------------------- */

/* qkv (B, T, 3C): per position q (C) then k (C) then v (C); head h owns
 * channels h*HS .. h*HS+HS-1 of each. For every (b, h, i):
 *   scaled[j] = (q_i . k_j) * (1/sqrt(HS))     for j <= i
 *   att[i][j] = softmax_j(scaled)              (max subtracted), 0 for j > i
 *   out_i     = sum_j att[i][j] v_j
 * att (B, NH, T, T) keeps the probabilities, exactly 0 above the diagonal.
 * preatt (B, NH, T, T), if not NULL, receives the scaled scores with -INFINITY
 * above the diagonal (the masked scores the softmax saw). out (B, T, C). */
void andrea_attention_forward(float *out, float *att, float *preatt, const float *qkv,
                       int B, int T, int C, int NH);
/* q . k over one head: the one loop every attention score comes from (the kernel, the
 * KV cache and `andrea attention`'s raw view), so they agree to the bit. The simd
 * reduction sums in vector partial sums, a fixed order for a given build. */
static inline float attn_dot(const float *q, const float *k, int HS) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int d = 0; d < HS; d++) s += q[d] * k[d];
    return s;
}
/* Decoding: one new position pos attends over the cached keys kc and values vc (pos + 1
 * rows of C each, head h in channels h*HS..); q (C) is its query, out (C) its output,
 * att (NH, ld) scratch for one row of probabilities per head. The same scores
 * (attn_dot, one multiply by the scale) and softmax as andrea_attention_forward's row pos. */
void andrea_attention_decode(float *out, float *att, int ld, const float *q, const float *kc,
                             const float *vc, int pos, int C, int NH);
/* dqkv (B, T, 3C) += gradient through the attention, given dout (B, T, C). */
void andrea_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                        int B, int T, int C, int NH);

/* ---- softmax and cross-entropy ------------------------------------------------------- */

/* In place, one row of n: x = exp(x - max) / sum. */
void andrea_softmax_row(float *x, int n);
/* logits (N, V), row i at i * ld (ld >= V: the columns after V, a padded head's, are
 * neither read nor written) -> probabilities in place; losses[i] = -log p[target]; targets
 * < 0 are ignored (loss 0). Returns the mean over valid targets (0 if none) and the count. */
float andrea_crossentropy_forward(float *logits_to_probs, float *losses, const int32_t *targets,
                           int N, int V, int ld, int *n_valid);
/* probs (N, V), rows at ld -> dlogits in place: (p - onehot(target)) * dloss; rows with
 * target < 0 become 0. dloss is usually 1 / n_valid. The columns V..ld-1 (a padded head's,
 * never read) become 0: the head's backward then adds nothing through its padded rows. */
void andrea_crossentropy_backward(float *probs_to_dlogits, const int32_t *targets, int N, int V,
                           int ld, float dloss);

/* ---- optimiser ------------------------------------------------------------------------ */

/* One AdamW step (t >= 1 for bias correction), decoupled weight decay, on the gradient
 * scaled by gscale (gradient clipping folded in: no separate pass over the gradients):
 *   g' = gscale g;  m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2
 *   p -= lr * (m / (1-b1^t) / (sqrt(v / (1-b2^t)) + eps) + wd * p) */
void andrea_adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr,
                  float b1, float b2, float eps, float wd, int t, float gscale);
/* sum g_i^2 in double, in parallel over 256 parts fixed by n, added in part order: the
 * same value for every thread count (the clipping norm is part of the results). */
double andrea_grad_sum_squares(const float *g, size_t n);
/* The same capped at isa (andrea_cpu_isa; the ones above: -1). Each ISA's copy runs FMAs
 * where it has them, so the bits differ between ISAs (not between thread counts). */
void andrea_adamw_update_isa(int isa, float *p, const float *g, float *m, float *v, size_t n,
                             float lr, float b1, float b2, float eps, float wd, int t,
                             float gscale);
double andrea_grad_sum_squares_isa(int isa, const float *g, size_t n);

/* ---- fused causal attention (kernels/attention_flash.c) ------------------------------ */

/* The same attention as andrea_attention_forward/backward without the (B, NH, T, T)
 * matrix: keys in blocks with an online softmax (FlashAttention-2). Same qkv
 * layout, same scale (one multiply by 1/sqrt(HS) per score), out (B, T, C).
 * lse (B, NH, T) receives each row's log-sum-exp of the scaled scores,
 * max_j s_j + log(sum_j exp(s_j - max)), which is all the backward keeps: it
 * recomputes att[i][j] = exp(s_ij - lse_i) from q and k. O(T) memory, no heap
 * (fixed ~48 KiB stack tiles per thread). Agrees with andrea_attention_forward/backward
 * to float rounding, not bitwise (different summation order). */
void andrea_attention_flash_forward(const andrea_cpu_engine *e, float *out, float *lse,
                                    const float *qkv, int B, int T, int C, int NH);
/* dqkv (B, T, 3C) += gradient, given dout (B, T, C) and the forward's out and lse. */
void andrea_attention_flash_backward(const andrea_cpu_engine *e, float *dqkv, const float *dout,
                                     const float *qkv, const float *out, const float *lse, int B,
                                     int T, int C, int NH);
/* The flash kernels are compiled for AVX-512, AVX2+FMA and the baseline and pick
 * the best the CPU has under the engine's cap e->isa (x86-64; elsewhere the baseline),
 * so tests and benchmarks can run each one. Results differ between these in the last
 * bits (FMA), never between runs or thread counts. */

/* ---- whole-buffer passes (buffer.c): the CPU backend's memory operations ----------- */

/* fill's distributions, each value drawn from the host RNG in index order (the same bits
 * on every backend: the draws are the engine's, only the stores are the backend's) */
enum {
    ANDREA_FILL_CONST = 0,  /* p[i] = a */
    ANDREA_FILL_NORMAL = 1, /* p[i] = b * andrea_rng_normal(rng) + a */
    ANDREA_FILL_UNIFORM = 2 /* p[i] = a + (b - a) * andrea_rng_uniform(rng) */
};

void andrea_copy_rows(float *dst, size_t ld_dst, const float *src, size_t ld_src, size_t n,
                      size_t rows);
void andrea_fill(float *p, size_t n, int kind, float a, float b, andrea_rng *rng);
uint64_t andrea_count_nonfinite(const float *x, size_t n, int nonneg);
float andrea_max_abs(const float *x, size_t n); /* NaN counts as +inf */
/* bf16 or f16 (dst uint16), int8 (dst int8, scale per row), q8_0 (dst int8, scale per 32
 * entries of a row, cols % 32 == 0: andrea_q8_0_block's rule) or q4_0 (dst: rows cols / 2
 * bytes, andrea_q4_0_block's) of src (rows, cols) */
void andrea_quantize_rows(void *dst, float *scale, const float *src, int fmt, size_t rows,
                          size_t cols);
/* IEEE half precision, round to nearest even (src/formats/fmt_num.c: the GGUF codec; not
 * its header, whose bf16 helper clashes with fastmath.h's inline one) */
uint16_t andrea_f32_to_f16(float f);
float andrea_f16_to_f32(uint16_t h);
/* ggml's quantize_row_q8_0_ref for 32 values: d = max|x| / 127, q = round(x / d) (half
 * away from 0, by the reciprocal of d as ggml does); returns d rounded to f16 (as a float),
 * the scale the block decodes with. Blocks that are already q8_0 values requantize to
 * themselves when their largest |q| is 127 (what ggml's and andrea's writers make). */
float andrea_q8_0_block(const float *x, int8_t *q);
/* ggml's quantize_row_q4_0_ref for 32 values: d = the value of largest |x| / -8, q =
 * min(15, trunc(x / d + 8.5)), element j's q in the low nibble of qs[j], element 16 + j's
 * in its high nibble; returns d rounded to f16 (NaN if a value or d is not finite: no
 * such block). The value is (q - 8) d; a block's own values requantize to themselves. */
float andrea_q4_0_block(const float *x, uint8_t *qs);
/* out(n, K) = rows ids[i] (or i, ids NULL) of w in format fmt, dequantised */
void andrea_gather_rows(float *out, const void *w, int fmt, const float *scale,
                        const int32_t *ids, int n, int K);

#endif /* ANDREA_KERNELS_H */
