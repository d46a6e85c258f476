/*
 * model.h - the inside of andrea_model: parameter layout, tensor views and the
 * activations of one forward pass. Internal to the library (tests may use it).
 */
#ifndef ANDREA_MODEL_H
#define ANDREA_MODEL_H

#include <stdint.h>

#include "andrea.h"
#include "backend/backend.h"

typedef enum { GROUP_EMBED, GROUP_ATTN, GROUP_MLP, GROUP_HEAD, GROUP_NORM } andrea_tensor_group;

/* The flat parameter vector, tensor by tensor, in file order. */
typedef struct {
    andrea_tensor_info *t;
    andrea_tensor_group *group;
    char (*names)[48];
    int n;
    int64_t total;
} andrea_layout;

int andrea_layout_build(const andrea_config *c, andrea_layout *lay);
void andrea_layout_free(andrea_layout *lay);

/* V rounded up to a multiple (0 or 1: V itself): the LM head's N on a backend that asks
 * for it (backend.h's vocab_multiple; 8449 -> 8512, 50257 -> 50304 with 64). */
int andrea_vocab_padded(int V, int multiple);

/* The LM head's products run over Vp = andrea_vocab_padded(V) rows of weights, in
 * memory only: the layout, and every pass over the flat vector params[0, total) (files,
 * hashes, counts, AdamW, the gradient norm, ZeRO-1's shards, the ranks' gradient sums),
 * see exactly what they see unpadded, and no copy of the head is made per step (a 50304 x
 * 768 copy each step would cost a GPU more than the padding gains). The Vp - V rows after
 * the head's V are whatever follows them in memory: an untied lm_head is the layout's last
 * tensor, and `after` zero floats are allocated past params[total] (and past grads[total])
 * for them; a tied head is wte, the first tensor, and its extra rows are the parameters
 * that follow it (wpe, ...; zeros past total where the model is shorter). Their logits
 * (columns V..Vp-1 of each row) are never read: crossentropy_forward skips them, the
 * logits handed out are closed up to V columns, and crossentropy_backward writes 0 there,
 * so the head's backward adds exactly 0 to its input's gradient and writes (or adds)
 * exact zeros into the rows after the head's gradients. Why not zero rows after wte:
 * wpe lives there, and a hole in the flat vector would make every flat pass skip it (and
 * a gradient norm summed in two pieces is not bit-identical to one sum); why not zero
 * rows before wte: the CPU's products sum their reduction in 256-long blocks from row 0,
 * so leading zeros regroup the input gradient's sum and cpu-guarded would no longer give
 * cpu's training to the bit (test_guarded_cli.sh). */
typedef struct {
    int V, Vp;     /* the vocabulary; the head products' N and the logits' row stride */
    int64_t after; /* zero floats allocated after params[total] and grads[total] */
} andrea_head_pad;

/* The padding of cfg's head for a backend whose vocab_multiple is `multiple`. */
void andrea_head_pad_plan(const andrea_config *c, int multiple, andrea_head_pad *hp);
/* An allocation on be of n floats (the flat vector; not initialised) followed by hp's
 * zero floats. NULL when out of memory. */
float *andrea_padded_alloc(const andrea_backend *be, const andrea_head_pad *hp, size_t n);

/* Views into a flat vector (parameters or gradients). NULL = absent tensor. */
typedef struct {
    float *ln1w, *ln1b;   /* (C), (C) */
    float *wqkv, *bqkv;   /* (3C, C): rows q then k then v; (3C) */
    float *wo, *bo;       /* (C, C), (C) */
    float *ln2w, *ln2b;   /* (C), (C) */
    float *wfc, *bfc;     /* (4C, C), (4C) */
    float *wproj, *bproj; /* (C, 4C), (C) */
} andrea_layer_view;

typedef struct {
    float *wte;             /* (V, C) */
    float *wpe;             /* (T, C) */
    andrea_layer_view *h;   /* L layers */
    float *lnfw, *lnfb;     /* (C), (C) */
    float *lm_head;         /* (V, C); == wte when tied */
} andrea_view;

/* Activation sizes in floats for a (B, T) batch, in allocation order. */
typedef struct {
    int64_t encoded;                       /* (B, T, C) */
    int64_t ln1, ln1_mean, ln1_rstd;       /* (L, B, T, C), (L, B, T) x2 */
    int64_t qkv;                           /* (L, B, T, 3C) */
    int64_t att;                           /* (L, B, NH, T, T) */
    int64_t atty;                          /* (L, B, T, C) */
    int64_t res2;                          /* (L, B, T, C) residual after attention */
    int64_t ln2, ln2_mean, ln2_rstd;       /* (L, B, T, C), (L, B, T) x2 */
    int64_t fch, fch_act;                  /* (L, B, T, 4C) x2 */
    int64_t res3;                          /* (L, B, T, C) block output */
    int64_t lnf, lnf_mean, lnf_rstd;       /* (B, T, C), (B, T) x2 */
    int64_t logits;                        /* (B, T, V) logits -> probs -> dlogits (rows of
                                            * Vp on a padding backend: ensure_acts) */
    int64_t losses;                        /* (B, T) */
    int64_t dres, dln, dqkv, datty, dfch; /* backward scratch */
} andrea_act_sizes;

/* flash: the fused attention keeps (L, B, NH, T) log-sum-exps instead of the
 * (L, B, NH, T, T) probabilities in the att slot. */
int64_t andrea_activation_floats(const andrea_config *c, int B, int T, int flash,
                                 andrea_act_sizes *s);

typedef struct {
    float *encoded, *ln1, *ln1_mean, *ln1_rstd, *qkv, *att, *atty, *res2, *ln2, *ln2_mean,
        *ln2_rstd, *fch, *fch_act, *res3, *lnf, *lnf_mean, *lnf_rstd, *logits, *losses, *dres,
        *dln, *dqkv, *datty, *dfch;
} andrea_acts;

/* Per-call state of full forward passes: the activations of one (B, T) batch, kept for
 * backward and inspection. A model's weights are read-only to a forward pass, so any number
 * of contexts share one model (one per thread or request); the model keeps one of its own
 * for andrea_model_forward/backward (training). */
struct andrea_context {
    andrea_config cfg;   /* the shapes of the model it was created for */
    const andrea_backend *be; /* whose memory the activations are in: the model's then */
    float *act_mem;      /* one allocation, carved into a */
    andrea_acts a;
    int act_B, act_T, act_flash;
    int logits_ld;       /* the row stride of a.logits: the model's Vp (andrea_head_pad) */
    int flash;           /* 1: fused attention (training); 0: explicit matrix (inspection) */
    int32_t *inputs, *targets; /* (B, T) copies */
    float *host_logits, *host_att, *host_hidden; /* host copies handed out by the accessors
                                                  * (a backend with its own memory) */
    size_t host_logits_n, host_att_n, host_hidden_n;
    int B, T;            /* shape of the last forward */
    int tail_rows;       /* 0, or the rows at the end of each sequence that the last forward's
                          * final norm and LM head ran over (andrea_context_forward_last):
                          * the other rows of lnf and logits are stale */
    int has_targets;
    float *pf_mem;       /* the prefill's scratch (prefill.c): one layer's rows, grown to */
    int pf_T;            /* the longest prompt so far */
    int n_valid;         /* valid targets in the last forward */
    float loss;
};

struct andrea_model {
    andrea_config cfg;
    const andrea_backend *be; /* where every operation runs (src/backend/backend.h) */
    andrea_layout layout;
    float *params;       /* layout.total floats; read-only to forward passes */
    float *grads;        /* allocated on first zero_grad/backward */
    andrea_head_pad pad; /* the head's padded rows (m->be's vocab_multiple) */
    andrea_view p, g;
    andrea_context *ctx; /* the model's own context: andrea_model_forward/backward */
    /* weight-only quantised copies for generation (quant.c) */
    int quant;           /* ANDREA_QUANT_* */
    uint16_t *q16;       /* bf16 of every parameter */
    int8_t *q8;          /* int8 of every matrix entry */
    float *qscale;       /* int8 scale of each matrix row (q8_0: of each block of 32) */
    int64_t *qrow_base;  /* per tensor: the index of its first scale in qscale */
    int native_quant;    /* the file's own precision, when exact (andrea_model_native_quant) */
    int exact_prefill;   /* 1: a prompt's products in f32 even with q8_0/q4_0 weights */
    /* Called by backward as each stretch grads[lo, hi) becomes final, in backward's order:
     * the final norm and an untied head, each layer from the last, the embeddings (last:
     * a tied head adds into wte). A data-parallel run starts summing a stretch over the
     * ranks while the rest of the backward runs (dist_train.c). NULL: not called. */
    void (*grad_ready)(void *user, int64_t lo, int64_t hi);
    void *grad_ready_user;
    int grads_stale;     /* andrea_model_discard_grads: the next backward overwrites them */
    struct andrea_step_graphs *graphs; /* captured micro-batch steps (graph_step.c) */
};

/* andrea_context_forward without targets, whose final norm and LM head run only over the
 * last few rows of each sequence (a prefill's: sampling reads the last position's logits
 * alone). Row b*T + T-1 of ctx's logits and lnf equals that of andrea_context_forward to
 * the bit (the same products); the others are not computed, so andrea_context_logits and
 * andrea_context_hidden return NULL until the next full forward. 0, or NAN with an error. */
float andrea_context_forward_last(const andrea_model *m, andrea_context *ctx,
                                  const int32_t *inputs, int B, int T);
/* Backward of ctx's last forward (with targets) into m's gradients, the loss scaled by
 * `scale`. */
int andrea_context_backward(andrea_model *m, andrea_context *ctx, float scale);
/* The checks a forward makes before it runs (the context's model and backend, the shape,
 * every token id); 0, or -1 with andrea_error(). */
int andrea_context_check_batch(const andrea_model *m, const andrea_context *ctx,
                               const int32_t *inputs, const int32_t *targets, int B, int T);

/* One training micro-batch on m's own context: forward with targets, then backward with
 * the loss scaled by `scale`; the loss, or NAN with andrea_error(). The same bits as
 * andrea_model_forward + andrea_model_backward_scaled. On a backend with graphs (cuda) a
 * micro-batch of a shape seen before is captured once and then replayed whole, one launch
 * instead of a few hundred (graph_step.c; ANDREA_CUDA_GRAPHS=0 turns it off). */
float andrea_model_train_micro(andrea_model *m, const int32_t *inputs, const int32_t *targets,
                               int B, int T, float scale);
/* Frees m's captured steps (the model's memory or backend is about to change). */
void andrea_model_drop_graphs(andrea_model *m);
/* How many micro-batches andrea_model_train_micro replayed and captured so far. */
void andrea_model_graph_counts(const andrea_model *m, long *replayed, long *captured);

/* out(N) = w(N, K) x + bias with w in the model's quantised format (kv.c's matvecs). */
void andrea_matvec(const andrea_model *m, float *out, const float *x, const float *w,
                   const float *bias, int K, int N);
/* The same for n inputs x (n, K) -> out (n, N), each weight row read once for all n. */
void andrea_matvec_batch(const andrea_model *m, float *out, const float *x, const float *w,
                         const float *bias, int K, int N, int n);
/* out(M, N) = inp(M, K) w(N, K)^T + bias (+ resid) in the weights' q8_0/q4_0 blocks
 * (andrea_model_prefill_blocks); -1, out untouched, where they do not run. */
int andrea_matmul_blocks(const andrea_model *m, float *out, const float *inp, const float *w,
                         const float *bias, const float *resid, int M, int K, int N);
/* out(n, K) = rows ids[i] (host ids) of the weight matrix w (K columns) as the quantised
 * format stores them, on the model's backend: decoding's embeddings. */
void andrea_gather_weight_rows(const andrea_model *m, float *out, const float *w,
                               const int32_t *ids, int n, int K);

/* Builds views of a flat vector under the layout. */
void andrea_view_build(const andrea_model *m, float *base, andrea_view *v);
/* Re-initialises the weights like GPT-2: N(0, std), residual projections
 * N(0, std / sqrt(2 L)), norm gains 1, biases 0. */
void andrea_model_init_weights(andrea_model *m, uint64_t seed);
/* The gradients' values are not needed any more (a new step begins): the next backward
 * overwrites them instead of adding to them. The result is that of zero_grad + backward
 * (bit for bit) without the pass that writes zeros over every gradient, and the products
 * do not read the old values either. Read nothing from m->grads until that backward. */
void andrea_model_discard_grads(andrea_model *m);
/* Backward with the loss scaled by `scale` (1 / grad_accum when accumulating). */
int andrea_model_backward_scaled(andrea_model *m, float scale);
/* An empty model of this config (weights uninitialised), on the default backend or on be
 * (refused, with the missing op named, when be lacks one the model needs). */
andrea_model *andrea_model_alloc(const andrea_config *cfg);
andrea_model *andrea_model_alloc_on(const andrea_config *cfg, const andrea_backend *be);
/* Allocates m->grads (zeroed) when not yet there; 0 or -1. */
int andrea_model_ensure_grads(andrea_model *m);
/* AdamW moments (num_params floats, zeroed) in the model's backend memory, and their free. */
float *andrea_model_moments_alloc(const andrea_model *m);
void andrea_model_moments_free(const andrea_model *m, float *p);
/* andrea_model_set_backend, carrying the moments (when given) along. */
int andrea_model_move(andrea_model *m, const char *backend, float **adam_m, float **adam_v);
/* m moved to the default backend (readers build models on the host, in place); NULL, m
 * freed, when that fails. */
andrea_model *andrea_model_to_default(andrea_model *m);
/* 1 when buffers of a may be used by b's operations: the same backend, or both host
 * backends (the CPU variants share host memory and one allocator). */
int andrea_backend_same_memory(const andrea_backend *a, const andrea_backend *b);
/* 0 when be has every operation a model needs, else -1 naming the first it lacks. */
int andrea_backend_check_complete(const andrea_backend *be);

#endif
