/*
 * train_run.h - one training run's state, shared by the trainer's parts:
 *   run_setup.c    fresh start or resume: model, AdamW moments, tokenizer, batch source
 *   step.c         one optimisation step (every call into the model and its kernels)
 *   evaluate.c     validation loss
 *   sample_gate.c  a generated sample scored by the coherence gate
 *   jsonl_sink.c   log.jsonl: opened (cut back to the checkpoint on resume), written, checked
 *   run_lock.c     the run folder's lock, and the refusal to write over another run
 *   run_files.c    output directory, checkpoints (periodic, best, on stop)
 *   trainer.c      the loop over them
 */
#ifndef ANDREA_TRAIN_TRAIN_RUN_H
#define ANDREA_TRAIN_TRAIN_RUN_H

#include <stdio.h>

#include "andrea.h"
#include "andrea_gate.h"
#include "andrea_tokenizer.h"
#include "parallel/zero.h"
#include "train/data/batch_source.h"
#include "train/checkpoint/checkpoint.h"

/* log.jsonl: err is the errno of the first failed write (0: none); the run stops on it.
 * mfu_measured: the start record's sgemm peak was measured (not -q), else steps write
 * "mfu":null rather than a 0 that reads as measured. */
typedef struct {
    FILE *f;
    char *path;
    int err;
    int mfu_measured;
} andrea_jsonl_log;

typedef struct {
    andrea_train_options o;   /* effective: seq resolved, data path from the checkpoint */
    andrea_config cfg;
    int32_t preset_vocab;     /* the vocabulary cfg had before the tokenizer set it */
    andrea_model *m;
    float *adam_m, *adam_v;   /* AdamW moments, (n_params) each */
    andrea_tokenizer *tok;
    andrea_bytes tok_blob;    /* serialized tok, embedded in every checkpoint */
    andrea_batch_source *src;
    andrea_ckpt_state *st;    /* what a checkpoint records besides the tensors */
    int32_t *x, *y;           /* (B, T) batch buffers */
    int32_t *probe_x, *probe_y; /* (T): the first row of this run's first batch, kept */
    int has_probe;            /* probe_x/y filled (after the first step's batch) */
    andrea_gate *gate;        /* NULL when sampling is off */
    andrea_kv *kv;
    char *ckpt_path, *best_path;
    int lock_fd;              /* holds the run folder's lock; -1: none */
    andrea_jsonl_log log;
    andrea_train_sink jsonl;  /* writes log */
    andrea_dist *dist;        /* the ranks (rank 0 of 1 without mpirun): src/parallel/ */
    andrea_zero zero;         /* --zero 1: adam_m, adam_v hold this rank's slice only */
    int overlap_failed;       /* a gradient sum started during backward failed */
    int allreduce_choice;     /* ANDREA_ALLREDUCE_* from --dist-allreduce */
    int overlap_plan;         /* 1 sums during backward, 0 after; -1 measuring (trials) */
    int overlap_trials;       /* gradient sums timed so far while measuring */
    double overlap_t0;        /* when the last micro-batch's backward began */
    double overlap_ms[2][3];  /* backward + sums, ms: [after, during][trial] */
    char dist_ranks[512];     /* what the ranks agreed on at start (andrea_train_start.ranks) */
    float *dist_stage;        /* host copy of the gradients the collectives sum, when the
                               * backend's memory is not the host's (NULL otherwise) */
    int64_t updates_applied;  /* AdamW updates this run (skipped steps do not count) */
    double last_val_loss;     /* the latest validation (NAN: none yet), for the gate */
    int gate_good_step;       /* the latest sample not counted toward a halt (-1: none) */
    int gate_kept_step;       /* the step of pre-collapse.bin (-1: none kept) */
    int gate_was_clean;       /* a sample of this process was clean text (charset >= 0.9) */
} andrea_train_run;

/* Reports to the JSONL sink, then to the caller's. */
#define ANDREA_REPORT(run, cb, ...)                                                      \
    do {                                                                                 \
        if ((run)->jsonl.cb) (run)->jsonl.cb((run)->jsonl.user, __VA_ARGS__);            \
        if ((run)->o.sink && (run)->o.sink->cb) (run)->o.sink->cb((run)->o.sink->user, __VA_ARGS__); \
    } while (0)

/* run_setup.c: 0, -1 or ANDREA_TRAIN_BAD_OPTIONS (andrea_error() says why). */
int andrea_run_setup(andrea_train_run *r, const andrea_config *cfg, const andrea_train_options *o);
void andrea_run_free(andrea_train_run *r);
void andrea_run_start_report(andrea_train_run *r, andrea_train_start *s, char *data, size_t n);

/* step.c */
int andrea_step_prepare(andrea_train_run *r);
/* Gradients of one step (grad_accum micro-batches): its mean loss and global grad norm.
 * step is 0-based. 0 or -1. */
int andrea_step_grads(andrea_train_run *r, int step, float *loss, float *grad_norm);
/* AdamW at lr, the gradient clipped to o.grad_clip through its norm. 0 or -1 (ZeRO-1's
 * all-gather failed). */
int andrea_step_update(andrea_train_run *r, int step, float lr, float grad_norm);
int64_t andrea_step_num_params(const andrea_train_run *r);

/* evaluate.c: validation loss over the source's held-out tokens; 0 or -1. has_val: is
 * there a validation split to evaluate at all. */
int andrea_run_has_validation(const andrea_train_run *r);
int andrea_run_validate(andrea_train_run *r, double *val_loss);

/* sample_gate.c: generates and scores a sample at step (1-based), counts it toward the
 * halting rule when armed, reports it; 0 or -1. */
int andrea_run_sample(andrea_train_run *r, int step, andrea_gate_result *gr);
int andrea_run_gate_open(andrea_train_run *r);
/* The trainer's gate hook: a sample, and -1 with the reason when the gate halts the run
 * (gate_patience armed failures in a row; the state is saved first). */
int andrea_run_gate_step(andrea_train_run *r, int step);
/* The step from which failures count when --gate-arm is -1 (auto). */
int andrea_gate_arm_step(const andrea_train_options *o);

/* jsonl_sink.c: opens path, for a resume cut back to the lines of steps <= keep_step
 * (what came after the checkpoint is redone; a torn last line goes too). 0 or -1. */
int andrea_jsonl_open(andrea_jsonl_log *log, const char *path, int resume, int64_t keep_step);
void andrea_jsonl_close(andrea_jsonl_log *log);
void andrea_jsonl_sink(andrea_jsonl_log *log, andrea_train_sink *out);
/* {"type":"error","step","time","message"}: why the run failed. */
void andrea_jsonl_error(andrea_jsonl_log *log, int64_t step, const char *message);
/* 0, or -1 with andrea_error() when a write to the log has failed. */
int andrea_jsonl_check(const andrea_jsonl_log *log);

/* run_lock.c: locks the output folder for the whole run (released by close(lock_fd)),
 * then refuses a folder that holds another run's files unless o.force or it is the
 * folder of the checkpoint resumed. 0, -1 (locked, I/O) or ANDREA_TRAIN_BAD_OPTIONS. */
int andrea_run_lock(andrea_train_run *r);

/* run_files.c */
int andrea_run_open_files(andrea_train_run *r);
/* full: ckpt.bin with moments; else best.bin. Writes nothing while andrea_run_keeps_resumed
 * (0), and refuses (-1) a state that fails andrea_model_probe, or whose loss on the run's
 * probe row is not finite or over --spike-loss x ln V (a diverged state). */
int andrea_run_save(andrea_train_run *r, int full);
/* 1 while a resumed run has applied no update: its checkpoint holds the state. */
int andrea_run_keeps_resumed(const andrea_train_run *r);
/* ckpt_numbered.c: ckpt.bin as step_NNNNNN.bin too, only the newest keep_last kept. */
int andrea_run_keep_numbered(andrea_train_run *r);

#endif
