/*
 * reference.h - what the tests compare the CPU kernels against, kept out of libandrea
 * because only tests call it:
 * - the plain twins of the fast kernels (reference.c: simple loops, every sum in double;
 *   the contracts are those of src/backend/cpu/kernels/kernels.h),
 * - the products under the default engine (matmul_default.c: andrea_mm_* with a NULL
 *   engine, the shape the kernel tests are written in).
 */
#ifndef ANDREA_TEST_REFERENCE_H
#define ANDREA_TEST_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/kernels/kernels.h"

/* ---- references (reference.c): the kernels' contracts, double accumulation --------- */

void andrea_ref_matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                        int M, int K, int N);
void andrea_ref_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout,
                         const float *inp, const float *w, int M, int K, int N);
void andrea_ref_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                           const float *w, const float *b, int N, int C, float eps);
void andrea_ref_layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
                            const float *inp, const float *w, const float *mean,
                            const float *rstd, int N, int C);
void andrea_ref_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w,
                         int N, int C, float eps);
void andrea_ref_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp,
                          const float *w, const float *rstd, int N, int C);
void andrea_ref_activation_forward(float *out, const float *inp, size_t n, int act);
void andrea_ref_activation_backward(float *dinp, const float *inp, const float *dout, size_t n,
                             int act);
void andrea_ref_attention_forward(float *out, float *att, float *preatt, const float *qkv,
                           int B, int T, int C, int NH);
void andrea_ref_attention_backward(float *dqkv, const float *dout, const float *qkv,
                            const float *att, int B, int T, int C, int NH);
void andrea_ref_softmax_row(float *x, int n);
float andrea_ref_crossentropy_forward(float *logits_to_probs, float *losses, const int32_t *targets,
                               int N, int V, int *n_valid);
void andrea_ref_crossentropy_backward(float *probs_to_dlogits, const int32_t *targets, int N, int V,
                               float dloss);
void andrea_ref_adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr,
                      float b1, float b2, float eps, float wd, int t, float gscale);
/* The fused products as the reference composes them: ref matmul, then ref activation or
 * the residual added in double. */
void andrea_ref_matmul_forward_act(float *pre, float *post, const float *inp, const float *w,
                                   const float *bias, int M, int K, int N, int act);
void andrea_ref_matmul_backward_act(float *dpre, float *dw, float *dbias, const float *dout,
                                    const float *post, const float *w, const float *pre, int M,
                                    int K, int N, int act);
void andrea_ref_matmul_forward_residual(float *out, const float *inp, const float *w,
                                        const float *bias, const float *resid, int M, int K,
                                        int N);
/* out(n, N) = x(n, K) w(N, K)^T + bias with w decoded from fmt (as andrea_matvec_rows), in
 * double. */
void andrea_ref_matvec_rows(float *out, const float *x, const void *w, int fmt,
                            const float *scale, const float *bias, int K, int N, int n);
/* sum g_i^2 in long double. */
double andrea_ref_sum_squares(const float *g, size_t n);
void andrea_ref_embedding_forward(float *out, const int32_t *tokens, const float *wte,
                                  const float *wpe, int B, int T, int C);
/* the sums in double, in position order */
void andrea_ref_embedding_backward(float *dwte, float *dwpe, const float *dout,
                                   const int32_t *tokens, int B, int T, int C);
void andrea_ref_attention_decode(float *out, const float *q, const float *kc, const float *vc,
                                 int pos, int C, int NH);
/* Flash's forward as the reference sees it: out as ref attention, lse per row. */
void andrea_ref_attention_lse(float *lse, const float *qkv, int B, int T, int C, int NH);

/* ---- the default engine (matmul_default.c) ------------------------------------------ */

/* out(M, N) = inp(M, K) @ w(N, K)^T + bias(N).  bias may be NULL. */
void andrea_matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                    int M, int K, int N);
/* dinp(M, K) += dout(M, N) @ w(N, K); dw(N, K) += dout^T @ inp; dbias(N) += sum_m dout. */
void andrea_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout,
                     const float *inp, const float *w, int M, int K, int N);

/* The residual branch's projection with the residual add fused (andrea_mm_forward_residual). */
void andrea_matmul_forward_residual(float *out, const float *inp, const float *w, const float *bias,
                             const float *resid, int M, int K, int N);

/* The MLP's first matmul with its activation fused: pre = inp @ w^T + bias (M, N), post =
 * act(pre). Same values as andrea_matmul_forward + andrea_activation_forward, one pass fewer. */
void andrea_matmul_forward_act(float *pre, float *post, const float *inp, const float *w,
                        const float *bias, int M, int K, int N, int act);
/* Backward of out = post @ w^T + bias where post = act(pre): dpre = act'(pre) * (dout @ w)
 * (OVERWRITTEN, unlike the rest), dw += dout^T @ post, dbias += sum_m dout. Same values
 * as andrea_matmul_backward into zeros + andrea_activation_backward into zeros. */
void andrea_matmul_backward_act(float *dpre, float *dw, float *dbias, const float *dout,
                         const float *post, const float *w, const float *pre, int M, int K, int N,
                         int act);

/* matmul_q8.c's contract (ref_mm_q8.c): inputs quantised to int8 blocks, integer block
 * dots, fp32 block sums in order; its bits exactly */
void andrea_ref_mm_q8_forward(float *out, const float *inp, const void *w, int fmt,
                              const float *scale, const float *bias, const float *resid, int M,
                              int K, int N);

#endif
