/*
 * backend.h - where a model's tensors live and its operations run. A backend instance
 * is a name, a table of operations, its own state (be->state: the CPU's engine settings,
 * a device's handles and streams) and the kind of memory its buffers are in. A model
 * holds a pointer to one (andrea_model_create_on, andrea_model_set_backend) and calls
 * every kernel through it:
 *
 *     m->be->ops.matmul_forward(m->be, out, inp, w, bias, M, K, N);
 *
 * Each compute operation has the contract of the kernel of the same name in
 * kernels/kernels.h (shapes, accumulate-or-overwrite, NULL = not needed), with the
 * backend instance as first argument.
 *
 * The pointer contract. Every float/void pointer argument of an operation is backend
 * memory (what ops.alloc returned, or an offset into it: pointer arithmetic on backend
 * pointers is allowed, dereferencing them outside the backend is not), except those named
 * host_* and these, which are host memory: token ids (embedding_*, gather_rows' ids),
 * targets (crossentropy_*), the RNG state (fill) and scalars returned by value (the loss,
 * n_valid, sum_squares, count_nonfinite, max_abs). A host backend (memory == ANDREA_MEM_HOST: the
 * CPU variants) has buffers the host may read and write directly; code outside the
 * backend still goes through model/tensor_io.h, which is zero-copy there.
 *
 * Adding a backend (a GPU, say): write src/backend/<name>.c that fills an
 * andrea_backend (every op andrea_backend_missing checks; test_backend_ops reports the
 * others as skipped) and add it to the table in registry.c. Model code does not change.
 */
#ifndef ANDREA_BACKEND_H
#define ANDREA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "andrea.h"
#include "backend/cpu/kernels/kernels.h"

typedef const andrea_backend *be_t; /* the first argument of every operation */

/* Where a backend's buffers are. */
enum {
    ANDREA_MEM_HOST = 0,  /* host-addressable: tensor_io.h hands out the pointers themselves */
    ANDREA_MEM_DEVICE = 1 /* not host-addressable: reached only through upload/download */
};


typedef struct {
    /* ---- memory ---- */
    void *(*alloc)(be_t be, size_t bytes); /* NULL when out of memory; aligned to 64 */
    void (*free)(be_t be, void *p);
    /* returns once host_src is copied; while the thread captures a graph, a copy the
     * graph makes at each replay (host_src from graph->host_alloc) */
    void (*upload)(be_t be, void *dst, const void *host_src, size_t bytes);
    void (*download)(be_t be, void *host_dst, const void *src, size_t bytes);
    void (*zero)(be_t be, void *p, size_t bytes);
    /* rows of n floats, backend to backend: dst[r * ld_dst + j] = src[r * ld_src + j] */
    void (*copy_rows)(be_t be, float *dst, size_t ld_dst, const float *src, size_t ld_src,
                      size_t n, size_t rows);
    /* returns once every operation issued so far has finished (a no-op on the CPU, whose
     * operations finish before they return; download synchronises by itself) */
    void (*synchronize)(be_t be);

    /* ---- whole-buffer passes ---- */
    /* p[0..n) from the distribution kind (ANDREA_FILL_*); rng (host) advances as n draws */
    void (*fill)(be_t be, float *p, size_t n, int kind, float a, float b, andrea_rng *rng);
    /* how many of x[0..n) are NaN or infinite (or negative, with nonneg) */
    uint64_t (*count_nonfinite)(be_t be, const float *x, size_t n, int nonneg);
    /* the largest |x[i]| of x[0..n) (0 when n is 0), +inf when one is NaN */
    float (*max_abs)(be_t be, const float *x, size_t n);
    /* rows (rows, cols) of src into format fmt: bf16 (dst uint16) or int8 (dst int8,
     * scale[r] = absmax of row r / 127, 1 for a zero row, values rounded to nearest) */
    void (*quantize)(be_t be, void *dst, float *scale, const float *src, int fmt, size_t rows,
                     size_t cols);
    /* out(n, K) = rows of w (K each, format fmt, scale per row for int8) dequantised: row
     * ids[i] (host) or, with ids NULL, row i. Decoding's (quantised) embeddings. */
    void (*gather_rows)(be_t be, float *out, const void *w, int fmt, const float *scale,
                        const int32_t *ids, int n, int K);

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
    /* a prompt's product in the weights' own blocks (fmt q8_0 or q4_0, scale per block):
     * out(M, N) = q8(inp)(M, K) w(N, K)^T + bias (+ resid (M, N)), the input rows rounded
     * to int8 blocks of 32 (llama.cpp's way; kernels.h's andrea_mm_q8_forward). -1, out
     * untouched, where the backend cannot (the caller runs matmul_forward); NULL: never.
     * M = 0 asks whether it can: 0 or -1. */
    int (*matmul_blocks)(be_t be, float *out, const float *inp, const void *w, int fmt,
                         const float *scale, const float *bias, const float *resid, int M,
                         int K, int N);

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
    /* decoding's cache write and attention at the position *pos, an int32 in backend
     * memory (so that one captured decode step serves every position: the model uploads
     * it before, which a graph replays): rows *pos of kc and vc get qkv's key and value
     * (qkv: q, k, v, C each), then out = q's attention over rows 0..*pos, the bits of
     * copy_rows twice and attention_decode; *pos outside [0, ld): out NaN. NULL: the
     * caller runs those three. */
    void (*attention_decode_kv)(be_t be, float *out, float *att, int ld, const float *qkv,
                                float *kc, float *vc, const int32_t *pos, int C, int NH);

    /* ---- loss and optimiser ---- */
    /* logits (N, V), row i at i * ld (ld >= V: a padded head's rows, vocab_multiple): the
     * forward reads and writes columns [0, V) only, the backward writes 0 in [V, ld) */
    float (*crossentropy_forward)(be_t be, float *logits_to_probs, float *losses,
                                  const int32_t *targets, int N, int V, int ld, int *n_valid);
    void (*crossentropy_backward)(be_t be, float *probs_to_dlogits, const int32_t *targets, int N,
                                  int V, int ld, float dloss);
    void (*adamw_update)(be_t be, float *p, const float *g, float *m, float *v, size_t n,
                         float lr, float b1, float b2, float eps, float wd, int t, float gscale);
    /* adamw_update over n_t tensors that lie one after another in p, g, m and v: tensor i
     * is [off[i], off[i + 1]) (off[0] = 0) and decays by wd where decay[i], else by 0;
     * off and decay are host arrays. The bits of adamw_update per tensor, in one pass (a
     * GPU's one launch instead of one a tensor). NULL: the caller runs adamw_update. */
    void (*adamw_update_many)(be_t be, float *p, const float *g, float *m, float *v,
                              const int64_t *off, const uint8_t *decay, int n_t, float lr,
                              float b1, float b2, float eps, float wd, int t, float gscale);
    double (*sum_squares)(be_t be, const float *g, size_t n); /* the same for every thread count */
} andrea_backend_ops;

/* Collectives over device memory (NCCL on cuda), for data-parallel runs whose gradients
 * live on a device: the sums run where the buffers are, without staging through the host.
 * src/parallel/dist_device.c drives them (bootstrap over the host ranks, deadlines). Each
 * start is ordered after the work already queued on the backend, runs beside the work
 * queued later, and must not be touched by the backend's ops until poll says done. */
typedef struct andrea_backend_comm andrea_backend_comm;
typedef struct {
    const char *name;   /* "nccl" */
    size_t id_bytes;    /* the bootstrap id rank 0 makes and every rank opens with */
    /* A key naming this process's device on its machine ("host/pci bus id"): two ranks
     * on one device cannot share a communicator. 0 or -1 with andrea_error(). */
    int (*device_key)(be_t be, char *key, size_t cap);
    int (*make_id)(be_t be, void *id); /* rank 0, before open */
    /* Starts joining the communicator of nranks (collective); poll says when it is done.
     * timeout_s bounds any wait inside the backend's own calls. */
    andrea_backend_comm *(*open)(be_t be, const void *id, int nranks, int rank,
                                 double timeout_s);
    /* In place: sum over the ranks of n floats; rank r's part buf[displs[r], +counts[r])
     * to every rank. 0 or -1 with andrea_error(). */
    int (*allreduce_start)(andrea_backend_comm *c, float *buf, size_t n);
    int (*allgather_start)(andrea_backend_comm *c, float *buf, const int *counts,
                           const int *displs);
    /* 1: everything started is done; 0: still running; -1: failed (andrea_error()). */
    int (*poll)(andrea_backend_comm *c);
    /* abort: give up on what is in flight (a peer is gone), then free; close: free. */
    void (*abort)(andrea_backend_comm *c);
    void (*close)(andrea_backend_comm *c);
} andrea_backend_comm_ops;

/* Graphs (CUDA graphs on cuda): one thread's op calls recorded once and replayed whole, so
 * that a small model's step is not bound by the host's launches. While a thread captures
 * (begin .. end), its ops are recorded, not run: none may read a result back, wait or
 * allocate (an op returning a host value reports it through results instead), and a host
 * array an op receives must come from host_alloc (a replay reads it again, at the same
 * address). src/model/graph_step.c drives them. */
typedef struct andrea_backend_graph andrea_backend_graph;
typedef struct {
    int (*begin)(be_t be);                  /* 0, or -1 with andrea_error() */
    /* the recording; NULL with andrea_error(): the caller then runs the ops as usual (a
     * backend may turn its graphs off, begin -1 from then on, while its ops go on) */
    andrea_backend_graph *(*end)(be_t be);
    int (*launch)(be_t be, andrea_backend_graph *g); /* replay, by the capturing thread */
    /* after a launch: the host values its ops produced, in the order of the calls
     * (crossentropy_forward: the valid rows' loss sum, then their count); their number or
     * -1 with andrea_error() */
    int (*results)(be_t be, andrea_backend_graph *g, double *out, int cap);
    void (*destroy)(be_t be, andrea_backend_graph *g);
    void *(*host_alloc)(be_t be, size_t bytes); /* NULL with andrea_error() */
    void (*host_free)(be_t be, void *p);
} andrea_backend_graph_ops;

struct andrea_backend {
    const char *name;        /* "cpu", "cpu-avx2", "cpu-blas", ... (andrea_backend_find) */
    const char *description; /* one line for listings */
    andrea_backend_ops ops;
    void *state;             /* the instance's own: the CPU's andrea_cpu_engine, a guarded
                              * arena, a device's handles; only its ops read it */
    int memory;              /* ANDREA_MEM_*: where every buffer of this backend is */
    int (*available)(be_t be); /* 1 when this machine and build can run it */
    /* why it cannot run here (for andrea_backend_find's message); NULL: "not here" */
    const char *(*why_unavailable)(be_t be);
    /* a device backend's products' operands: ANDREA_PRECISION_FP32 (0, the default of an
     * instance that leaves it out) or _BF16; a CPU variant's is in its engine */
    int precision;
    /* device collectives for its memory (NCCL), NULL: data-parallel sums go through host
     * memory (src/parallel/dist_train.c stages them) */
    const andrea_backend_comm_ops *comm;
    /* the multiple the LM head's products want their N (the vocabulary) rounded up to:
     * 1, never (the CPU variants); 64 for cuda (a GPU's tiles: 8449 -> 8512, 50257 ->
     * 50304, as llm.c's Vp); 0, only when ANDREA_VOCAB_MULTIPLE asks (cpu-guarded: padded
     * in test_vocab_pad, not in the suites that compare its bits with cpu's, since a BLAS
     * product's columns do depend on how many there are). Read through
     * andrea_backend_vocab_multiple. The model keeps the Vp - V rows next to the head's
     * weights in memory only (model.h's andrea_head_pad); no loss, softmax, sample, logit
     * handed out or file sees them. */
    int vocab_multiple;
    /* graph capture and replay, NULL: ops always run as they are called */
    const andrea_backend_graph_ops *graph;
};

/* be's vocab_multiple, where it is not 1 overridden by ANDREA_VOCAB_MULTIPLE (a whole
 * number >= 1: 1 turns a GPU's padding off, to measure what it gains); 1: no padding. */
int andrea_backend_vocab_multiple(be_t be);

/* The backend new models start with: "cpu", or the one named by ANDREA_BACKEND (so that a
 * whole test suite runs on another backend, e.g. cpu-guarded). */
const andrea_backend *andrea_backend_default(void);

/* 1 when be has graphs and they are not turned off (ANDREA_CUDA_GRAPHS=0: every op run
 * as it is called, to compare or to time them). */
int andrea_backend_graphs_on(be_t be);

/* n int32 of host memory for ids or positions an op reads (its host arrays): pinned
 * (graph->host_alloc) on a backend with graphs, since a captured op's copy reads them
 * again at each replay; else malloc. NULL with andrea_error(). Freed by _free, with the
 * same be. */
void *andrea_backend_host_ids(be_t be, size_t n);
void andrea_backend_host_ids_free(be_t be, void *p);

/* The CPU settings of a CPU variant (its state), NULL for any other backend. */
const andrea_cpu_engine *andrea_backend_cpu_engine(be_t be);
/* The precision of be's products' operands (ANDREA_PRECISION_FP32 or _BF16), CPU or device. */
int andrea_backend_precision(be_t be);

/* The ISA level (ANDREA_ISA_*) at which a CPU backend (a cpu variant, cpu-guarded) runs
 * the kernels that write the weights: AdamW and the gradient norm that scales it; -1 for
 * any other backend. andrea_backend_cap_updates caps it for every CPU backend of this
 * process (-1: no cap): the data-parallel ranks agree on one (src/parallel/consistency.c). */
int andrea_backend_update_isa(be_t be);
void andrea_backend_cap_updates(int isa);

/* The name of the first operation the model needs that be lacks, or NULL when it has
 * them all (a model refuses an incomplete backend at creation, never a NULL call later). */
const char *andrea_backend_missing(be_t be);

/* The CPU backend's variants (cpu.c) and the guarded-memory backend (guarded.c). */
extern const andrea_backend andrea_backend_cpu, andrea_backend_cpu_avx512,
    andrea_backend_cpu_avx2, andrea_backend_cpu_baseline, andrea_backend_cpu_blas,
    andrea_backend_cpu_bf16, andrea_backend_cpu_guarded;

/* 1 while host code may not touch cpu-guarded's buffers (outside its operations). For
 * the test that proves the guard crashes a stray access. */
int andrea_guarded_is_locked(void);

#endif /* ANDREA_BACKEND_H */
