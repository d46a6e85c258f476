/*
 * cuda_ops.h - the CUDA backend's operations, one per entry of andrea_backend_ops (same
 * contracts, backend/backend.h), defined across this folder and gathered into the
 * andrea_backend_cuda instance by cuda_ops.cu.
 */
#ifndef ANDREA_BACKEND_CUDA_OPS_H
#define ANDREA_BACKEND_CUDA_OPS_H

#include "backend/cuda/cuda_internal.h"

/* cuda_backend.cu: the instance and memory */
int cuda_available(be_t be);
const char *cuda_why(be_t be);
void *cuda_alloc(be_t be, size_t bytes);
void cuda_free(be_t be, void *p);
void cuda_upload(be_t be, void *dst, const void *src, size_t bytes);
void cuda_download(be_t be, void *dst, const void *src, size_t bytes);
void cuda_zero(be_t be, void *p, size_t bytes);
void cuda_copy_rows(be_t be, float *dst, size_t ld_dst, const float *src, size_t ld_src, size_t n,
                    size_t rows);
void cuda_synchronize(be_t be);
void cuda_fill(be_t be, float *p, size_t n, int kind, float a, float b, andrea_rng *rng);

/* cuda_nccl.cu: the device collectives, when built with NCCL (else the instances' comm
 * is NULL) */
#ifdef ANDREA_HAVE_NCCL
extern const andrea_backend_comm_ops cuda_nccl_ops;
#define CUDA_COMM_OPS (&cuda_nccl_ops)
#else
#define CUDA_COMM_OPS nullptr
#endif
/* cuda_graph.cu: CUDA graphs (capture on a blocking stream of the thread, replay there) */
extern const andrea_backend_graph_ops cuda_graph_ops;

/* cuda_elementwise.cu */
uint64_t cuda_count_nonfinite(be_t be, const float *x, size_t n, int nonneg);
float cuda_max_abs(be_t be, const float *x, size_t n);
void cuda_embedding_forward(be_t be, float *out, const int32_t *tokens, const float *wte,
                            const float *wpe, int B, int T, int C);
void cuda_embedding_backward(be_t be, float *dwte, float *dwpe, const float *dout,
                             const int32_t *tokens, int B, int T, int C);
void cuda_residual_forward(be_t be, float *out, const float *a, const float *b, size_t n);
void cuda_activation_forward(be_t be, float *out, const float *inp, size_t n, int act);
void cuda_adamw_update(be_t be, float *p, const float *g, float *m, float *v, size_t n, float lr,
                       float b1, float b2, float eps, float wd, int t, float gscale);
void cuda_adamw_update_many(be_t be, float *p, const float *g, float *m, float *v,
                            const int64_t *off, const uint8_t *decay, int n_t, float lr, float b1,
                            float b2, float eps, float wd, int t, float gscale);
double cuda_sum_squares(be_t be, const float *g, size_t n);
/* post = act(pre) (grad 0) or post *= act'(pre) (grad 1) over n; -1 when the launch failed */
int cuda_act_launch(float *post, const float *pre, size_t n, int act, int grad);

/* cuda_quant.cu; cuda_to_bf16: dst = src rounded to bf16 (nearest even), 0 or -1 when the
 * launch failed (cuda-bf16's product operands) */
int cuda_to_bf16(uint16_t *dst, const float *src, size_t n);
void cuda_quantize(be_t be, void *dst, float *scale, const float *src, int fmt, size_t rows,
                   size_t cols);
void cuda_gather_rows(be_t be, float *out, const void *w, int fmt, const float *scale,
                      const int32_t *ids, int n, int K);

/* cuda_dense.cu */
void cuda_matmul_forward(be_t be, float *out, const float *inp, const float *w, const float *bias,
                         int M, int K, int N);
void cuda_matmul_forward_residual(be_t be, float *out, const float *inp, const float *w,
                                  const float *bias, const float *resid, int M, int K, int N);
void cuda_matmul_forward_act(be_t be, float *pre, float *post, const float *inp, const float *w,
                             const float *bias, int M, int K, int N, int act);
void cuda_matmul_backward(be_t be, float *dinp, float *dw, float *dbias, const float *dout,
                          const float *inp, const float *w, int M, int K, int N, int dw_init);
void cuda_matmul_backward_act(be_t be, float *dpre, float *dw, float *dbias, const float *dout,
                              const float *post, const float *w, const float *pre, int M, int K,
                              int N, int act, int dw_init);
void cuda_matvec(be_t be, float *out, const float *x, const void *w, int fmt, const float *scale,
                 const float *bias, int K, int N, int n);

/* cuda_rows.cu */
void cuda_norm_forward(be_t be, int kind, float *out, float *mean, float *rstd, const float *inp,
                       const float *w, const float *b, int N, int C, float eps);
void cuda_norm_backward(be_t be, int kind, float *dinp, float *dw, float *db, const float *dout,
                        const float *inp, const float *w, const float *mean, const float *rstd,
                        int N, int C);
float cuda_crossentropy_forward(be_t be, float *logits_to_probs, float *losses,
                                const int32_t *targets, int N, int V, int ld, int *n_valid);
void cuda_crossentropy_backward(be_t be, float *probs_to_dlogits, const int32_t *targets, int N,
                                int V, int ld, float dloss);

/* cuda_colsum.cu: dst (+)= the column sums of src (M, N), deterministic (fixed row chunks);
 * cuda_colsum_finish adds chunks rows of per-chunk partials (chunks, N) into dst; 0 or -1 */
int cuda_colsum_chunks(int M);
int cuda_column_sums(float *dst, const float *src, int M, int N, int accumulate,
                     const char *op);
int cuda_colsum_finish(float *dst, const float *parts, int chunks, int N, int accumulate,
                       const char *op);

/* cuda_flash.cu: tiled flash attention (head size <= 128: cuda_flash_fits); 0, or -1 with
 * the failure recorded */
int cuda_flash_fits(int C, int NH);
int cuda_flash_forward(const char *op, float *out, float *lse, const float *qkv, int B, int T,
                       int C, int NH);
int cuda_flash_backward(const char *op, float *dqkv, const float *dout, const float *qkv,
                        const float *out, const float *lse, int B, int T, int C, int NH,
                        int tensor_cores);

/* cuda_flash_tc.cu: cuda-bf16's flash forward and backward on tensor cores (head size a
 * multiple of 16, at most 128: cuda_flash_tc_fits; above 64 the backward's tiles take 58-76
 * KiB of dynamic shared memory), the backward given D = dout . out per row */
int cuda_flash_tc_fits(int C, int NH);
int cuda_flash_forward_tc(const char *op, float *out, float *lse, const float *qkv, int B, int T,
                          int C, int NH);
int cuda_flash_backward_tc(const char *op, float *dqkv, const float *dout, const float *qkv,
                           const float *lse, const float *D, int B, int T, int C, int NH);

/* cuda_attention.cu */
void cuda_attention_forward(be_t be, float *out, float *att, float *preatt, const float *qkv,
                            int B, int T, int C, int NH);
void cuda_attention_backward(be_t be, float *dqkv, const float *dout, const float *qkv,
                             const float *att, int B, int T, int C, int NH);
void cuda_attention_flash_forward(be_t be, float *out, float *lse, const float *qkv, int B, int T,
                                  int C, int NH);
void cuda_attention_flash_backward(be_t be, float *dqkv, const float *dout, const float *qkv,
                                   const float *out, const float *lse, int B, int T, int C,
                                   int NH);
void cuda_attention_decode(be_t be, float *out, float *att, int ld, const float *q,
                           const float *kc, const float *vc, int pos, int C, int NH);
void cuda_attention_decode_kv(be_t be, float *out, float *att, int ld, const float *qkv,
                              float *kc, float *vc, const int32_t *pos, int C, int NH);

#endif
