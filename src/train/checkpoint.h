/*
 * checkpoint.h - the checkpoint file: config, tokenizer identity, training
 * state, parameters and AdamW moments, with a trailing checksum. Written
 * atomically (temp file, fsync, rename). Byte layout: docs/checkpoint.md.
 */
#ifndef ANDREA_TRAIN_CHECKPOINT_H
#define ANDREA_TRAIN_CHECKPOINT_H

#include <stdint.h>

#include "andrea.h"

#define ANDREA_CKPT_MAGIC "ANDRCKPT"
#define ANDREA_CKPT_VERSION 1
#define ANDREA_CKPT_HEADER 512

/* Everything besides the tensors that a resume needs to continue exactly. */
typedef struct {
    uint32_t tokenizer_kind;
    uint64_t tokenizer_checksum;
    int64_t step;              /* optimizer steps completed */
    uint64_t data_rng[2];      /* batch sampler state: the data position */
    uint64_t seed;
    uint64_t data_checksum;    /* hash of the training text */
    float best_val_loss;
    float smooth_loss;
    /* training hyperparameters, restored on resume */
    int32_t batch, seq, grad_accum, max_steps, warmup;
    int32_t eval_every, eval_batches, ckpt_every, log_every, max_bad_steps;
    float lr, lr_min, beta1, beta2, eps, weight_decay, grad_clip, val_fraction;
    int32_t sample_every, sample_tokens, gate_patience;
    float gate_threshold;
    int32_t gate_fails;        /* consecutive failing samples so far */
} andrea_ckpt_state;

/* Writes path atomically. m and v may be NULL (weights-only file).
 * blob (tokenizer bytes) may be NULL with blob_len 0. */
int andrea_checkpoint_save(const char *path, const andrea_model *model, const float *adam_m,
                           const float *adam_v, const andrea_ckpt_state *st, const void *blob,
                           uint64_t blob_len);

/* Loads a checkpoint: a new model, and if m/v are non-NULL the moments (malloc'd;
 * NULL when the file has none). st and blob (malloc'd) are optional. */
andrea_model *andrea_checkpoint_load(const char *path, float **adam_m, float **adam_v,
                                     andrea_ckpt_state *st, void **blob, uint64_t *blob_len);



/* Reads and checks only the header (magic, version, config): cheap, for
 * printing or for restoring training options before a full load. */
int andrea_checkpoint_peek(const char *path, andrea_config *cfg, andrea_ckpt_state *st);
#endif
