/*
 * backend.h - where a model's operations run. A backend is a name, a table of
 * operations and its own settings; a model holds a pointer to one
 * (andrea_model_set_backend) and calls every kernel through it:
 *
 *     m->be->ops.matmul_forward(m->be, out, inp, w, bias, M, K, N);
 *
 * Each operation has the contract of the kernel of the same name in
 * kernels/kernels.h (shapes, accumulate-or-overwrite, NULL = not needed), with the
 * backend instance as first argument. Pointers are the backend's memory: what
 * ops.alloc returned, filled by ops.upload (the CPU's are host memory and upload
 * is a copy; a GPU backend's are device memory).
 *
 * Adding a backend (a GPU, say): write src/backend/<name>.c that fills an
 * andrea_backend (NULL for what it lacks: test_backend_ops reports those as
 * skipped) and add it to the table in registry.c. Model code does not change.
 */
#ifndef ANDREA_BACKEND_H
#define ANDREA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "andrea.h"
#include "kernels/kernels.h"

typedef const andrea_backend *be_t; /* the first argument of every operation */

typedef struct {
    /* ---- memory ---- */
    void *(*alloc)(be_t be, size_t bytes); /* NULL when out of memory */
    void (*free)(be_t be, void *p);
    void (*upload)(be_t be, void *dst, const void *src, size_t bytes);   /* host -> backend */
    void (*download)(be_t be, void *dst, const void *src, size_t bytes); /* backend -> host */
    void (*zero)(be_t be, void *p, size_t bytes);

    /* ---- embeddings (tokens are host memory) and the residual stream ---- */
    void (*embedding_forward)(be_t be, float *out, const int32_t *tokens, const float *wte,
                              const float *wpe, int B, int T, int C);
    void (*embedding_backward)(be_t be, float *dwte, float *dwpe, const float *dout,
                               const int32_t *tokens, int B, int T, int C);
    void (*residual_forward)(be_t be, float *out, const float *a, const float *b, size_t n);

    /* ---- products: out(M, N) = inp(M, K) @ w(N, K)^T + bias ---- */
    void (*matmul_forward)(be_t be, float *out, const float *inp, const float *w,
                           const float *bias, int M, int K, int N);
    void (*matmul_forward_residual)(be_t be, float *out, const float *inp, const float *w,
                                    const float *bias, const float *resid, int M, int K, int N);
    void (*matmul_forward_act)(be_t be, float *pre, float *post, const float *inp, const float *w,
                               const float *bias, int M, int K, int N, int act);
    /* dinp += dout @ w (dpre = act'(pre) * (dout @ w), overwritten); dw += dout^T @ inp,
     * dbias += column sums of dout, or with dw_init overwritten (a step's first gradient) */
    void (*matmul_backward)(be_t be, float *dinp, float *dw, float *dbias, const float *dout,
                            const float *inp, const float *w, int M, int K, int N, int dw_init);
    void (*matmul_backward_act)(be_t be, float *dpre, float *dw, float *dbias, const float *dout,
                                const float *post, const float *w, const float *pre, int M, int K,
                                int N, int act, int dw_init);
    /* decoding, n inputs (n sequences batched): out(n, N) = x(n, K) w(N, K)^T + bias, w in
     * format fmt (ANDREA_QUANT_*), scale (N) for int8 */
    void (*matvec)(be_t be, float *out, const float *x, const void *w, int fmt,
                   const float *scale, const float *bias, int K, int N, int n);

    /* ---- norms (kind: andrea_norm) and activations ---- */
    void (*norm_forward)(be_t be, int kind, float *out, float *mean, float *rstd,
                         const float *inp, const float *w, const float *b, int N, int C,
                         float eps);
    void (*norm_backward)(be_t be, int kind, float *dinp, float *dw, float *db,
                          const float *dout, const float *inp, const float *w, const float *mean,
                          const float *rstd, int N, int C);
    void (*activation_forward)(be_t be, float *out, const float *inp, size_t n, int act);

    /* ---- attention: explicit (T x T probabilities kept), flash (log-sum-exps kept), and
     * decoding's one position over a KV cache ---- */
    void (*attention_forward)(be_t be, float *out, float *att, float *preatt, const float *qkv,
                              int B, int T, int C, int NH);
    void (*attention_backward)(be_t be, float *dqkv, const float *dout, const float *qkv,
                               const float *att, int B, int T, int C, int NH);
    void (*attention_flash_forward)(be_t be, float *out, float *lse, const float *qkv, int B,
                                    int T, int C, int NH);
    void (*attention_flash_backward)(be_t be, float *dqkv, const float *dout, const float *qkv,
                                     const float *out, const float *lse, int B, int T, int C,
                                     int NH);
    void (*attention_decode)(be_t be, float *out, float *att, int ld, const float *q,
                             const float *kc, const float *vc, int pos, int C, int NH);

    /* ---- loss and optimiser ---- */
    float (*crossentropy_forward)(be_t be, float *logits_to_probs, float *losses,
                                  const int32_t *targets, int N, int V, int *n_valid);
    void (*crossentropy_backward)(be_t be, float *probs_to_dlogits, const int32_t *targets, int N,
                                  int V, float dloss);
    void (*adamw_update)(be_t be, float *p, const float *g, float *m, float *v, size_t n,
                         float lr, float b1, float b2, float eps, float wd, int t, float gscale);
    double (*sum_squares)(be_t be, const float *g, size_t n); /* the same for every thread count */
} andrea_backend_ops;

struct andrea_backend {
    const char *name;        /* "cpu", "cpu-avx2", "cpu-blas", ... (andrea_backend_find) */
    const char *description; /* one line for listings */
    andrea_backend_ops ops;
    andrea_cpu_engine cpu;   /* the CPU variants' settings (ignored by other backends) */
    int (*available)(be_t be); /* 1 when this machine and build can run it */
};

/* The backend new models start with: "cpu". */
const andrea_backend *andrea_backend_default(void);

/* The CPU backend's variants (cpu.c), for the registry. */
extern const andrea_backend andrea_backend_cpu, andrea_backend_cpu_avx512,
    andrea_backend_cpu_avx2, andrea_backend_cpu_baseline, andrea_backend_cpu_blas,
    andrea_backend_cpu_bf16;

#endif /* ANDREA_BACKEND_H */
