/*
 * andrea.h - the public front door of libandrea: grow, run and explain
 * GPT-style language models of the ANDREA family.
 *
 * Usage (error handling elided; every call that can fail returns non-zero
 * or NULL and leaves a one-line message in andrea_error()):
 *
 *     andrea_config cfg;
 *     andrea_config_preset("tiny", &cfg);
 *     andrea_model *m = andrea_model_create(&cfg, 1337);
 *     float loss = andrea_model_forward(m, inputs, targets, B, T);
 *     andrea_model_zero_grad(m);
 *     andrea_model_backward(m);
 *     ...
 *     andrea_model_free(m);
 *
 * Training, generation and checkpoints are driven by andrea_train(),
 * andrea_generate() and andrea_checkpoint_load(); see below.
 *
 * Ownership: every *_create / *_load returns an object the caller frees with
 * the matching *_free. Pointers returned by accessors (logits, params) are
 * owned by the object and valid until the next call that mutates it.
 *
 * Letters used in shape comments: B batch, T time, C channels (d_model),
 * NH heads, HS head size (d_k = C / NH), L layers, V vocabulary.
 */
#ifndef ANDREA_H
#define ANDREA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ANDREA_VERSION "0.1.0"

/* ---- errors -------------------------------------------------------------- */

/* The message of the last failed call on this thread ("" if none). A call whose failure
 * value is also a legitimate result (andrea_model_forward's NaN) is told apart by clearing
 * the message before it; the library's own callers do (andrea_eval_tokens, training). */
const char *andrea_error(void);

/* ---- configuration --------------------------------------------------------- */

typedef enum { ANDREA_NORM_LAYER = 0, ANDREA_NORM_RMS = 1 } andrea_norm;
typedef enum { ANDREA_ACT_GELU = 0, ANDREA_ACT_RELU = 1, ANDREA_ACT_RELU2 = 2 } andrea_act;

typedef struct {
    int32_t n_layer;   /* L */
    int32_t n_head;    /* NH */
    int32_t d_model;   /* C, must be divisible by n_head */
    int32_t ctx;       /* T, context length (rows of the position table) */
    int32_t vocab;     /* V */
    int32_t norm;      /* andrea_norm */
    int32_t act;       /* andrea_act (MLP activation; MLP width is 4 C) */
    int32_t bias;      /* 1: biases on every linear layer (and LayerNorm) */
    int32_t tied;      /* 1: LM head shares the token embedding */
    float norm_eps;
    float init_std;    /* std of matrix init; residual projections get / sqrt(2 L) */
} andrea_config;

/* Presets: "tiny", "baby", "andrea-12m", "andrea-120m", "andrea-480m", "gpt2-124m". */
int andrea_config_preset(const char *name, andrea_config *out);
const char *const *andrea_config_preset_names(void); /* NULL-terminated */
/* 0 if the config is usable, else non-zero with the reason in andrea_error(). */
int andrea_config_validate(const andrea_config *cfg);
const char *andrea_norm_name(int norm);
const char *andrea_act_name(int act);
int andrea_norm_parse(const char *s, int *out);
int andrea_act_parse(const char *s, int *out);

/* ---- backends ---------------------------------------------------------------------- */

/* Where a model's operations run (src/backend): "cpu" (the default: built-in kernels,
 * fp32, the best instruction set here) and its variants "cpu-avx512", "cpu-avx2",
 * "cpu-baseline" (tiles capped at that ISA), "cpu-blas" (large products through the
 * BLAS of the build), "cpu-bf16" (bf16 operands, fp32 accumulation, AVX512-BF16) and
 * "cpu-guarded" (cpu's kernels on memory the host cannot touch outside the backend: a test
 * backend that behaves like a device). Only those this machine and build can run are
 * listed. ANDREA_BACKEND in the environment names the default. The objects are static:
 * never freed. Every pointer the API hands out (logits, attention maps, parameters) is host
 * memory, whatever the backend. */
typedef struct andrea_backend andrea_backend;
int andrea_backend_count(void);
const andrea_backend *andrea_backend_get(int i); /* 0 <= i < count, else NULL */
/* NULL (with andrea_error() naming the ones available) when unknown or not runnable
 * here; NULL or "" gives the default. */
const andrea_backend *andrea_backend_find(const char *name);
const char *andrea_backend_name(const andrea_backend *be);
const char *andrea_backend_description(const andrea_backend *be);


/* ---- model ----------------------------------------------------------------- */

typedef struct andrea_model andrea_model;

/* A model with freshly initialised weights (deterministic in seed: the same bits on every
 * backend), on the default backend, or directly on the named one (its tensors never
 * exist elsewhere). */
andrea_model *andrea_model_create(const andrea_config *cfg, uint64_t seed);
andrea_model *andrea_model_create_on(const andrea_config *cfg, uint64_t seed,
                                     const char *backend);
void andrea_model_free(andrea_model *m);
const andrea_config *andrea_model_config(const andrea_model *m);
/* Moves m to the backend of that name (NULL: the default): its tensors are copied into the
 * new backend's memory (weights, gradients, quantised copies, its own context) and every
 * operation runs there from the next call on. Contexts and KV caches created before
 * belong to the old backend: create new ones. 0, or -1 with andrea_error() (unknown, not
 * runnable here, or out of memory; m unchanged). */
int andrea_model_set_backend(andrea_model *m, const char *name);
const andrea_backend *andrea_model_backend(const andrea_model *m);

/* Parameter count of a config, and its split into groups. */
typedef struct {
    int64_t embeddings; /* wte + wpe */
    int64_t attention;  /* q, k, v, o matrices (+ biases) */
    int64_t mlp;        /* fc1, fc2 (+ biases) */
    int64_t head;       /* untied lm_head (0 if tied) */
    int64_t norms;      /* norm gains / biases */
    int64_t total;
} andrea_param_counts;
andrea_param_counts andrea_config_param_counts(const andrea_config *cfg);

/* Named parameter tensors, in file order. */
typedef struct {
    const char *name;   /* e.g. "h.3.attn.wqkv" */
    int64_t offset;     /* floats from the start of the flat parameter vector */
    int64_t size;       /* number of floats */
    int32_t rows, cols; /* cols == 0 for vectors */
    int32_t decay;      /* 1 if weight decay applies (2-D matrices) */
} andrea_tensor_info;
int andrea_model_num_tensors(const andrea_model *m);
const andrea_tensor_info *andrea_model_tensor(const andrea_model *m, int i);
int64_t andrea_model_num_params(const andrea_model *m);
/* The flat parameters and gradients (num_params floats each) as host pointers, when the
 * backend keeps them in host memory (every cpu variant); NULL (andrea_error) on a backend
 * with its own memory: use read/write_params, which work on every backend. */
float *andrea_model_params(andrea_model *m);
float *andrea_model_grads(andrea_model *m);
/* Copies parameters [off, off + n) to / from host memory. 0, or -1 outside the model. */
int andrea_model_read_params(const andrea_model *m, int64_t off, int64_t n, float *dst);
int andrea_model_write_params(andrea_model *m, int64_t off, int64_t n, const float *src);

/* Forward over a (B, T) batch of token ids. With targets (entries < 0 are
 * ignored) returns the mean cross-entropy, else returns 0 and fills logits.
 * T <= ctx. Returns NAN and sets andrea_error() on bad arguments. */
float andrea_model_forward(andrea_model *m, const int32_t *inputs, const int32_t *targets,
                           int B, int T);
/* Logits (B, T, V) of the last forward without targets. */
const float *andrea_model_logits(const andrea_model *m);
/* Attention probabilities (B, NH, T, T) of layer l from the last forward:
 * the very numbers the engine used. NULL when that forward used flash attention. */
const float *andrea_model_attention(const andrea_model *m, int layer);
/* 1: fused flash attention (O(T) memory, what training uses); 0: the explicit
 * T x T matrix, kept for inspection (the default of a new or loaded model). */
void andrea_model_set_flash_attention(andrea_model *m, int on);
void andrea_model_zero_grad(andrea_model *m);
/* Accumulates d(loss)/d(params) into the gradients; needs a forward with targets. */
int andrea_model_backward(andrea_model *m);

/* ---- contexts: per-call state over shared weights ------------------------------------
 *
 * A model's weights are read-only to forward passes and decoding; the state of a call lives
 * in a context (activations of a (B, T) batch) or a KV cache (one sequence). Any number of
 * them share one model, so one loaded model serves many threads or requests at once (each
 * context used by one thread at a time). andrea_model_forward is andrea_context_forward on
 * the model's own context. */
typedef struct andrea_context andrea_context;
andrea_context *andrea_context_create(const andrea_model *m);
void andrea_context_free(andrea_context *c);
/* The same contract as andrea_model_forward, with the activations kept in c. */
float andrea_context_forward(const andrea_model *m, andrea_context *c, const int32_t *inputs,
                             const int32_t *targets, int B, int T);
/* (B, T, V); NULL after a pass that computed only the last positions' logits (a prefill
 * through andrea_kv_prefill_ctx: andrea_kv_prefill_all keeps every position's). */
const float *andrea_context_logits(const andrea_context *c);
/* The final hidden states, after the last norm (what the LM head reads): (B, T, C); NULL
 * when andrea_context_logits is. */
const float *andrea_context_hidden(const andrea_context *c);
const float *andrea_context_attention(const andrea_context *c, int layer); /* (B, NH, T, T) */
void andrea_context_set_flash_attention(andrea_context *c, int on);
/* The context andrea_model_forward/backward use (owned by the model). */
andrea_context *andrea_model_context(andrea_model *m);

/* The check every loaded or saved model passes: no |weight| over 1e6 (no trained model's
 * lies there), and a forward over a fixed probe batch (16 tokens) whose logits must all be
 * finite. andrea_model_param_max_abs: the largest |weight| (Inf when one is NaN). name says what
 * the model is in the message ("'run/ckpt.bin'"). 0, or -1 with andrea_error(). */
int andrea_model_probe(const andrea_model *m, const char *name);
double andrea_model_param_max_abs(const andrea_model *m);

/* Bytes needed for weights, grads, AdamW moments and activations at (B, T). */
typedef struct {
    int64_t weights, grads, optimizer, activations;
} andrea_memory;
andrea_memory andrea_config_memory(const andrea_config *cfg, int B, int T);

/* The optimiser's two passes, on the model's backend (src/model/optim.c): the squared
 * norm of the gradients (the same for every thread count), and one AdamW step of every
 * tensor (decay applied to the tensors whose decay flag is set, andrea_tensor_info),
 * with the gradients scaled by gscale (clipping) and t >= 1 for bias correction.
 * adam_m and adam_v: num_params floats each, zero before the first step. */
double andrea_model_grad_sum_squares(andrea_model *m);
void andrea_model_adamw_step(andrea_model *m, float *adam_m, float *adam_v, float lr, float b1,
                             float b2, float eps, float wd, int t, float gscale);

/* Weight-only quantisation for generation: KV-cached decoding then reads bf16
 * (half the bytes), int8 with a per-row scale (a quarter) or ggml's q8_0 (int8 with
 * one f16 scale per 32 consecutive entries of a row: a q8_0 GGUF's own blocks) or ggml's
 * q4_0 (4-bit (q - 8) d, an f16 d per 32, two to a byte: an eighth of fp32). The
 * fp32 weights stay (training and full forward passes use them). _AUTO (a request, not
 * a format): the precision the model's file stores, andrea_model_native_quant. */
enum { ANDREA_QUANT_AUTO = -1, ANDREA_QUANT_NONE = 0, ANDREA_QUANT_BF16 = 1,
       ANDREA_QUANT_INT8 = 2, ANDREA_QUANT_Q8_0 = 3, ANDREA_QUANT_Q4_0 = 4,
       ANDREA_QUANT_F16 = 5 };
int andrea_model_quantize(andrea_model *m, int kind);
/* The format the weights the model was read from are stored in, when decoding in it is
 * exact (ANDREA_QUANT_Q8_0 for a GGUF whose matrices are all q8_0 blocks that requantize
 * to themselves); ANDREA_QUANT_NONE otherwise (f32, f16, mixed, and every model andrea
 * made itself). */
int andrea_model_native_quant(const andrea_model *m);
const char *andrea_quant_name(int kind); /* "f32", "bf16", "int8", "q8_0", "q4_0" */
/* With q8_0 or q4_0 weights a prompt's products run in their blocks, as llama.cpp's do:
 * each input row rounded to int8 blocks of 32, integer block dots (x86 with AVX2 or
 * AVX-512 VNNI; about q8_0's error on each product, 1.1-3x the f32 products' speed). 1
 * when they do (the weights,
 * the backend and the CPU allow it); set_exact_prefill(m, 1) keeps the f32 products of
 * the dequantised weights instead (the decoding steps are those always). */
int andrea_model_prefill_blocks(const andrea_model *m);
void andrea_model_set_exact_prefill(andrea_model *m, int on);
/* Rounds the fp32 weight matrices to the format's values (to measure its accuracy). */
int andrea_model_fake_quantize(andrea_model *m, int kind);
/* "f32", "bf16", "int8", "q8_0", "q4_0"; _auto also takes "auto" (ANDREA_QUANT_AUTO) */
int andrea_quant_parse(const char *s, int *out);
int andrea_quant_parse_auto(const char *s, int *out);

/* ---- KV-cached inference ------------------------------------------------------ */

typedef struct andrea_kv andrea_kv;
andrea_kv *andrea_kv_create(const andrea_model *m);
void andrea_kv_free(andrea_kv *kv);
void andrea_kv_reset(andrea_kv *kv);
int andrea_kv_pos(const andrea_kv *kv);
/* Keeps the first n positions (0 <= n <= pos), as if only those tokens had been fed: a
 * prompt that starts with them goes on from there (a server's prompt cache). The logits
 * are stale until the next token is fed. 0, or -1 with andrea_error(). */
int andrea_kv_truncate(andrea_kv *kv, int n);
/* Feeds one token at the next position; returns the logits (V) for the next
 * token, or NULL (with andrea_error()) when the context is full. */
const float *andrea_kv_step(const andrea_model *m, andrea_kv *kv, int32_t token);
/* Feeds n tokens; from an empty cache this is one batched forward pass. Returns
 * the logits after the last one, or NULL when they do not fit the context. The pass
 * runs flash attention (whatever the context's setting: it keeps no attention maps) and
 * computes the final norm and LM head for the last positions only (the logits returned
 * are those of a full flash-attention pass to the bit). */
const float *andrea_kv_prefill(andrea_model *m, andrea_kv *kv, const int32_t *tokens, int n);
/* Sizes (and writes once, so that its pages are mapped) the buffers a fresh prompt of up
 * to n tokens needs in m's context, as llama.cpp sizes its compute buffers when it creates
 * a context: the first andrea_kv_prefill then costs its computation only (a fresh
 * allocation's first writes cost gpt2-124m's 128-token prefill 16 ms of 53 on a VM). 0, or
 * -1 with andrea_error() (n outside 1..ctx, out of memory). */
int andrea_prefill_reserve(andrea_model *m, int n);
/* The same, its batched forward pass run in the caller's context c (the model untouched). */
const float *andrea_kv_prefill_ctx(const andrea_model *m, andrea_context *c, andrea_kv *kv,
                                   const int32_t *tokens, int n);
/* andrea_kv_prefill_ctx for a caller that scores the prompt itself (echo, the prompt's
 * log-probabilities): from an empty cache and n >= 2, c keeps the logits of every
 * position, andrea_context_logits(c) (n, V); otherwise (positions fed one at a time) c
 * is not used. The LM head over every position costs n x V x C multiply-adds more. */
const float *andrea_kv_prefill_all(const andrea_model *m, andrea_context *c, andrea_kv *kv,
                                   const int32_t *tokens, int n);
/* The logits (V) after the last token fed to kv (NULL before the first). */
const float *andrea_kv_logits(const andrea_kv *kv);

/* Batched decoding: n sequences, each with its own KV cache at its own position, advance
 * one token each in one forward step. Every weight row is read once for all n (decoding
 * is bound by reading the weights), and each sequence's logits equal those of
 * andrea_kv_step on its cache alone. */
typedef struct andrea_kv_batch andrea_kv_batch;
/* Scratch for up to max_seqs sequences of model m. */
andrea_kv_batch *andrea_kv_batch_create(const andrea_model *m, int max_seqs);
void andrea_kv_batch_free(andrea_kv_batch *b);
/* Feeds tokens[s] to kvs[s] (distinct caches) for s < n; returns the logits (n, V), row s
 * for sequence s (also kept as andrea_kv_logits(kvs[s])), or NULL with andrea_error()
 * naming the sequence when a token is invalid or a cache is full (no cache advances). */
const float *andrea_kv_batch_step(const andrea_model *m, andrea_kv_batch *b,
                                  andrea_kv *const *kvs, const int32_t *tokens, int n);

/* ---- tokenizer ------------------------------------------------------------------ */

/* Tokenizer kinds (more in andrea_tokenizer.h). Stored in files: never renumber. */
enum { ANDREA_TOK_BYTE = 1 };
#define ANDREA_BYTE_BOS 256
#define ANDREA_BYTE_VOCAB 257

/* The tokenizer object (andrea_tokenizer.h has its API). */
typedef struct andrea_tokenizer andrea_tokenizer;

/* ---- random numbers --------------------------------------------------------------- */

typedef struct { uint64_t s[2]; } andrea_rng;
void andrea_rng_seed(andrea_rng *r, uint64_t seed);
uint64_t andrea_rng_u64(andrea_rng *r);
float andrea_rng_uniform(andrea_rng *r);  /* [0, 1) */
float andrea_rng_normal(andrea_rng *r);   /* N(0, 1) */

/* ---- sampling and generation --------------------------------------------------------- */

/* Applied in this order (printed by andrea_sampler_describe):
 * repeat penalty -> temperature -> top-k -> top-p -> min-p -> draw. */
typedef struct {
    float temperature;    /* 0 = greedy (argmax after the repeat penalty) */
    int top_k;            /* 0 = off */
    float top_p;          /* 1 = off */
    float min_p;          /* keep tokens with p >= min_p * p_max; 0 = off */
    float repeat_penalty; /* llama.cpp's: logit / r if > 0 else logit * r, for tokens
                           * among the last repeat_last_n; 1 = off */
    int repeat_last_n;
} andrea_sampler;
void andrea_sampler_default(andrea_sampler *s);
/* One line: the settings in the order they are applied. */
void andrea_sampler_describe(const andrea_sampler *s, char *buf, size_t n);
/* Picks a token from logits (V). history (may be NULL) feeds the repeat penalty.
 * Returns -1 on out of memory. */
int andrea_sample_ex(const float *logits, int V, const andrea_sampler *s,
                     const int32_t *history, int n_history, andrea_rng *rng);
int andrea_sample(const float *logits, int V, const andrea_sampler *s, andrea_rng *rng);
/* log p(token) under softmax(logits) at temperature 1: the model's own belief. */
float andrea_logprob(const float *logits, int V, int token);
/* The n most likely tokens of logits (V), most likely first, ties by id, into ids (n).
 * Returns how many were written (min(n, V)). */
int andrea_top_tokens(const float *logits, int V, int n, int32_t *ids);

/* ---- streaming generation (src/infer/generate.c) ---------------------------------------- */

typedef struct {
    andrea_sampler sampler;
    int n_predict;          /* max new tokens */
    const char *const *stops; /* stop when the text contains one of these (not printed) */
    int n_stops;
    void (*emit)(const void *bytes, size_t n, void *user); /* streamed text */
    void *user;
    void *logprobs;         /* FILE*: one JSON line per token, or NULL */
    const int32_t *context; /* the tokens already fed (repeat penalty, context shift) */
    int n_context;
    int context_shift;      /* when the context is full: keep its last half and go on */
    int n_probs;            /* with logprobs: also the n most likely tokens at each step
                             * ("top": [{"id", "text", "logprob"}, ...], llama.cpp's n_probs) */
} andrea_gen_options;
typedef struct {
    int n_generated;
    const char *stop_reason; /* "n-predict", "bos", "stop string", "context full" */
    double seconds;
} andrea_gen_result;
/* Generates after the tokens already in kv, whose last logits are `logits`.
 * Returns 0, or -1 with andrea_error(). */
int andrea_generate(andrea_model *m, andrea_kv *kv, const andrea_tokenizer *tok,
                    const float *logits, const andrea_gen_options *g, andrea_rng *rng,
                    andrea_gen_result *res);

enum { ANDREA_ATTN_FLASH = 0, ANDREA_ATTN_EXPLICIT = 1 };

/* ---- training ------------------------------------------------------------------------ */

typedef struct andrea_train_sink andrea_train_sink;

/* Every field with a flag is listed, with its default, in the option table
 * (src/train/run_options.c): `andrea train --help`, the checkpoint's OPTS section and
 * the "train:" config line are generated from it. */
typedef struct {
    /* data */
    const char *data_path;   /* text file, or a token file from `andrea prepare`; NULL when
                              * resuming: the path recorded in the checkpoint */
    const char *manifest_path; /* a run manifest (docs/curriculum.md): the curriculum's
                              * sources instead of data_path (recorded as the data path) */
    const char *tokenizer;   /* NULL/"byte", "char", "gpt2[:DIR]", a .tok or segments .json */
    float val_fraction;      /* last fraction of the data held out (0.1) */
    int batch;               /* B */
    int seq;                 /* T (<= ctx); 0 = min(64, ctx) */
    int grad_accum;          /* micro-batches per step */
    /* optimisation */
    int max_steps;
    float lr, lr_min;
    int warmup;
    float beta1, beta2, eps, weight_decay, grad_clip;
    uint64_t seed;
    /* monitoring and checkpoints */
    int eval_every;          /* 0 = only at the end */
    int eval_batches;        /* 0 = the whole validation split */
    int ckpt_every;          /* 0 = only at the end */
    int keep_last;           /* > 0: each checkpoint also as step_NNNNNN.bin, the newest N kept */
    int log_every;           /* progress line every N steps (read by the sink that prints) */
    int max_bad_steps;       /* consecutive skipped steps before giving up */
    /* the divergence guard (docs/reliability.md): a step is skipped like a non-finite one
     * when its loss is over spike_loss x the median of the last 50 good steps' (and 1 nat
     * above it) or x ln V (a uniform guess), its gradient norm over spike_grad x theirs, or its update could carry a
     * weight past max_weight; 0 turns a rule off */
    float spike_loss, spike_grad, max_weight;
    /* sample-quality monitor (ANDREA's coherence gate, andrea_gate.h) */
    int sample_every;        /* generate and score a sample every N steps, 0 = off (100) */
    int sample_tokens;       /* tokens per sample (420) */
    float gate_threshold;    /* a sample scoring below this fails (30) */
    int gate_patience;       /* consecutive failing samples that halt training (5) */
    const char *words_path;  /* English word list (NULL: the system's, wamerican) */
    const char *gate;        /* "honest" (default) or "course": the gate's formula */
    int gate_arm;            /* collapsed samples count from this step on; -1 = auto: after
                              * the LR warmup (docs/coherence-gate.md) */
    const char *gate_reference; /* real text for the honest gate's word model, a file or a
                              * folder (NULL: $ANDREA_REFERENCE, else Debian's fortunes) */
    const char *out_dir;
    const char *resume_path; /* NULL: fresh start */
    int force;               /* 1: out_dir may hold another run's files (they are replaced);
                              * 0: such a folder is refused (a resume may use its own) */
    int quiet;               /* 1: no progress wanted, so the 0.3 s sgemm measurement that
                              * MFU needs is skipped (mfu is logged as 0) */
    int stop_at;             /* > 0: stop after this step as if interrupted (schedule unchanged) */
    int attention;           /* ANDREA_ATTN_FLASH (default) or ANDREA_ATTN_EXPLICIT */
    /* testing: poison the gradients of steps [inject_nan_step, +inject_nan_count) */
    int inject_nan_step, inject_nan_count;
    /* data parallel under mpirun (docs/distributed.md); not saved: a resume chooses again */
    int zero;                /* 1: the AdamW moments sharded over the ranks (ZeRO-1) */
    float dist_timeout;      /* seconds a collective may wait for the other ranks (300) */
    int dist_deterministic;  /* sums in rank order: the same bits on every run and network */
    int dist_no_overlap;     /* sum the gradients after backward, not layer by layer during it */
    int dist_overlap;        /* sum them during backward without measuring (default: the
                              * first steps measure both ways and keep the faster) */
    const char *dist_allreduce; /* "auto" (NULL: measured at start), "ring" or "mpi" */
    int dist_bf16;           /* the gradients travel as bf16 (the ring; half the bytes) */
    int dist_check_every;    /* compare a hash of the weights over the ranks every N steps, at
                              * the start and before each checkpoint (100); 0: never */
    int inject_drift_step;   /* testing: the last rank nudges one weight after this step (-1) */
    int inject_own_isa;      /* testing: no ISA agreement (each rank updates at its own best) */
    /* hooks (not options: no flag, not saved) */
    const char *backend;     /* where the model runs (andrea_backend_find); NULL: "cpu" */
    const andrea_train_sink *sink; /* progress reports; NULL: only log.jsonl */
    int (*should_stop)(void *user); /* polled once per step: non-zero stops the run like
                                     * --stop-at (checkpoint saved); e.g. set by a signal */
    void *stop_user;
    int (*should_save)(void *user); /* polled once per step (with stop_user): non-zero writes
                                     * a checkpoint and goes on; e.g. set by SIGUSR1 */
} andrea_train_options;

void andrea_train_options_default(andrea_train_options *o);
/* Restores the config and training options saved in a checkpoint, and sets
 * o->resume_path; the caller may then override options (e.g. max_steps). String options
 * (the data path) are not copied: andrea_train uses the checkpoint's when they are NULL. */
int andrea_train_options_from_checkpoint(const char *path, andrea_config *cfg,
                                         andrea_train_options *o);
/* The "train:" config line without its label: "B=12 T=64 accum=1 steps=2000 ...". */
void andrea_train_options_describe(const andrea_train_options *o, char *buf, size_t n);
/* lr(t) = lr_sched(t) * min(1, (t + 1) / warmup), lr_sched cosine from lr to
 * lr_min over max_steps. */
float andrea_lr_at(const andrea_train_options *o, int step);

/* What a run reports, through a sink: the library never prints. Every callback may be
 * NULL. The library's own JSONL sink writes log.jsonl; a front end adds its own (the CLI
 * prints progress lines). Pointers are valid only during the call. */
typedef struct {
    const andrea_config *cfg;
    int64_t n_params;
    int32_t preset_vocab;        /* != cfg->vocab when the tokenizer set the vocabulary */
    const char *data;            /* the batch source: "'FILE' 1115394 tokens" */
    int64_t n_train, n_val;      /* tokens */
    const char *tokenizer;       /* kind name */
    const andrea_train_options *opts; /* effective: seq resolved, data path from a resume */
    int64_t start_step;          /* > 0 when resuming */
    double flops_per_token;      /* of a training step (forward + backward) */
    double peak_gflops;          /* this machine's sgemm, 0 when not measured */
    const char *ranks;           /* under mpirun: "2 ranks (mpi); weights updated at avx2 on
                                  * every rank: ..."; NULL for one process */
} andrea_train_start;
typedef struct {
    int step, max_steps;         /* step: completed, from 1 */
    float loss, loss_smooth, lr, grad_norm;
    double ms, tok_per_s, eta_s, mfu;
    double comm_ms;              /* of ms, spent in collectives with the other ranks
                                    (what the overlap with backward left); 0 alone */
} andrea_train_step;
typedef struct {
    int step, max_steps, tokens; /* tokens generated */
    float score, bigram, trigram, english, chardiv; /* the coherence gate's parts */
    int pass;
    const char *text;            /* not NUL-terminated */
    size_t len;
    const char *gate;            /* "honest" or "course": the gate that gave score */
    float threshold;
    float dict, repeat, charset; /* the honest gate's factors, 0..1 */
    int armed;                   /* failures count toward a halt (after --gate-arm) */
    int fails, patience;         /* consecutive counted failures, and how many halt */
    float common, order;         /* the honest gate's reference factors, 0..1 */
    const char *strike;          /* NULL: not counted toward a halt; else the collapse seen:
                                  * "loops", "garbage", "validation loss rising" */
} andrea_train_sample;
typedef struct {
    int step;                    /* 1-based: the step whose update was skipped */
    float loss, grad_norm;
    int bad_steps, max_bad_steps;
    const char *reason;          /* why, one line: "non-finite loss (nan)", "loss 9.1 is ..." */
} andrea_train_skip;
enum { ANDREA_STOP_DONE = 0, ANDREA_STOP_HOOK = 1, ANDREA_STOP_AT = 2 };
typedef struct {
    int reason;                  /* ANDREA_STOP_*: finished, should_stop said so, --stop-at */
    int64_t steps;
    double seconds;
    float best_val_loss;
    const char *out_dir, *ckpt_path;
} andrea_train_done;
struct andrea_train_sink {
    void (*on_start)(void *user, const andrea_train_start *s);
    void (*on_step)(void *user, const andrea_train_step *s);
    void (*on_eval)(void *user, int step, int max_steps, double val_loss, int best);
    void (*on_sample)(void *user, const andrea_train_sample *s);
    void (*on_skip)(void *user, const andrea_train_skip *s); /* a warning, not an error */
    void (*on_done)(void *user, const andrea_train_done *d); /* not called on failure */
    void *user;
};

#define ANDREA_TRAIN_INTERRUPTED 2
#define ANDREA_TRAIN_BAD_OPTIONS (-2)
/* Trains cfg on o->data_path (or resumes o->resume_path with cfg equal to the
 * checkpoint's). Returns 0 when done, ANDREA_TRAIN_INTERRUPTED when should_stop or
 * stop_at stopped it (checkpoint saved), ANDREA_TRAIN_BAD_OPTIONS when an option is
 * unusable (a usage error; the message names the flag), -1 on other failures; both
 * with andrea_error(). */
int andrea_train(const andrea_config *cfg, const andrea_train_options *o);

/* Mean loss of a model over consecutive windows of T + 1 tokens (all of them
 * if max_batches is 0), B windows per pass. Returns 0 or -1 with andrea_error(). */
int andrea_eval_tokens(andrea_model *m, const int32_t *tokens, int64_t n, int B, int T,
                       int max_batches, double *mean_loss, int64_t *n_tokens);

/* ---- checkpoints ------------------------------------------------------------------- */

/* Loads the model of a checkpoint (no optimizer state). */
andrea_model *andrea_checkpoint_load_model(const char *path);
/* Same, plus the tokenizer the model was trained with (the byte tokenizer for
 * checkpoints that embed none). The tokenizer must have the kind and checksum the file
 * records. Free it with andrea_tokenizer_free(). */
andrea_model *andrea_checkpoint_load_with_tokenizer(const char *path, andrea_tokenizer **tok);

#ifdef __cplusplus
}
#endif
#endif /* ANDREA_H */
