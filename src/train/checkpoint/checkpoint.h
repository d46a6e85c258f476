/*
 * checkpoint.h - the checkpoint file: config, tokenizer identity, training
 * state, options, batch position, parameters and AdamW moments in tagged sections,
 * with a trailing checksum. Written atomically (temp file, fsync, rename), every number
 * little-endian. Byte layout: docs/checkpoint.md (version 2; version 1 still loads).
 */
#ifndef ANDREA_TRAIN_CHECKPOINT_H
#define ANDREA_TRAIN_CHECKPOINT_H

#include <stdint.h>

#include "andrea.h"

#define ANDREA_CKPT_MAGIC "ANDRCKPT"
#define ANDREA_CKPT_VERSION 2
#define ANDREA_CKPT_STR 1024     /* longest string option kept (with its NUL) */
#define ANDREA_CKPT_POS_MAX 4096 /* longest batch-source position */

/* Everything besides the tensors that a resume needs to continue exactly. */
typedef struct {
    uint32_t version;          /* read back: the file's format version */
    int32_t has_moments;       /* read back: the file holds AdamW moments */
    uint64_t tokenizer_blob;   /* read back: bytes of the embedded tokenizer */
    uint32_t tokenizer_kind;
    uint64_t tokenizer_checksum;
    int64_t step;              /* optimizer steps completed */
    /* the single-corpus position: written as the BATC section when batch_pos_len is 0,
     * filled on load when BATC holds a corpus position (always, for version 1) */
    uint64_t data_rng[2];      /* batch sampler state */
    uint64_t data_checksum;    /* hash of the training token stream */
    float best_val_loss;
    float smooth_loss;
    int32_t gate_fails;        /* consecutive failing samples so far */
    /* the batch source's position, as it saved it (andrea_batch_source.save) */
    uint8_t batch_pos[ANDREA_CKPT_POS_MAX];
    uint32_t batch_pos_len;
    /* training options, restored on resume: the fields of the option table's rows with a
     * checkpoint field (src/train/run_options.c); written as named OPTS entries */
    int32_t batch, seq, grad_accum, max_steps, warmup;
    int32_t eval_every, eval_batches, ckpt_every, log_every, max_bad_steps;
    float lr, lr_min, beta1, beta2, eps, weight_decay, grad_clip, val_fraction;
    uint64_t seed;
    int32_t sample_every, sample_tokens, gate_patience;
    float gate_threshold;
    char data_path[ANDREA_CKPT_STR]; /* "" in version 1 files */
} andrea_ckpt_state;

/* Writes path atomically. m and v may be NULL (weights-only file).
 * blob (tokenizer bytes) may be NULL with blob_len 0. */
int andrea_checkpoint_save(const char *path, const andrea_model *model, const float *adam_m,
                           const float *adam_v, const andrea_ckpt_state *st, const void *blob,
                           uint64_t blob_len);

/* Loads a checkpoint: a new model (on the default backend), and if m/v are non-NULL the
 * moments (in the model's backend memory: free them with andrea_model_moments_free, which
 * is free() on every cpu variant; NULL when the file has none). st and blob (malloc'd) are optional. */
andrea_model *andrea_checkpoint_load(const char *path, float **adam_m, float **adam_v,
                                     andrea_ckpt_state *st, void **blob, uint64_t *blob_len);

/* Reads and checks only the sections before the tensors (magic, version, config, state):
 * cheap, for printing or for restoring training options before a full load. file_size
 * (optional) gets the file's length. */
int andrea_checkpoint_peek(const char *path, andrea_config *cfg, andrea_ckpt_state *st);
int andrea_checkpoint_peek_size(const char *path, andrea_config *cfg, andrea_ckpt_state *st,
                                uint64_t *file_size);

/* Size in bytes of the version-2 checkpoint that andrea_checkpoint_save would write for
 * a model of cfg, a tokenizer blob of that many bytes and state st (options, data path,
 * batch position); 0 on out of memory. */
uint64_t andrea_checkpoint_size(const andrea_config *cfg, int with_moments,
                                uint64_t tokenizer_blob, const andrea_ckpt_state *st);

/* The tokenizer a checkpoint embeds (blob, blen as loaded; the byte tokenizer when blen is
 * 0), checked against the kind and checksum the file records. NULL with an error naming
 * path on a mismatch. */
andrea_tokenizer *andrea_checkpoint_tokenizer(const char *path, const andrea_ckpt_state *st,
                                              const void *blob, uint64_t blen);

#endif
