/*
 * curriculum.h - the state of a curriculum run (internal to curriculum*.c and
 * sources.c): per source its documents, reading position and bandit statistics; the
 * active source and the dice. Everything that changes is saved in the checkpoint (the
 * BATC section, curriculum_state.c), so a resume continues bit-identically.
 */
#ifndef ANDREA_TRAIN_CURRICULUM_H
#define ANDREA_TRAIN_CURRICULUM_H

#include <stdio.h>

#include "andrea.h"
#include "train/curriculum/bandit.h"
#include "train/curriculum/docset.h"
#include "train/curriculum/manifest.h"

typedef struct {
    andrea_docset d;
    /* reading: the training documents in a shuffled order per epoch */
    int64_t *perm;       /* (n_train) this epoch's order */
    uint64_t pos, off;   /* document perm[pos], token off (off == its length: the BOS after it) */
    uint32_t epochs;     /* complete passes */
    /* bandit */
    double ema;          /* loss EMA; valid when pulls > 0 */
    uint64_t pulls;      /* steps trained on this source */
    double reward_sum, last_reward;
    float last_loss;
    /* the last weights computed (logged) */
    double weight, score;
} andrea_cur_source;

typedef struct {
    andrea_manifest man;
    andrea_cur_source *s; /* (man.n) */
    int32_t bos;
    uint64_t seed;
    andrea_rng rng;      /* the dice */
    int active;          /* the source batches come from; -1 before the first draw */
    int steps_left;      /* until the next draw */
    int64_t step;        /* steps observed (completed) */
    int64_t step_doc;    /* original index of the document the step's batch began in */
    int new_step;        /* the next batch starts a step */
    int32_t *val_all;    /* all sources' validation streams, concatenated */
    int64_t n_val_all;
    /* lines owed to the log: the sources at start, a draw, a policy change at resume */
    int log_start, log_draw, pivot;
    uint64_t saved_policy;
} andrea_curriculum;

/* curriculum.c */
double andrea_cur_coverage(const andrea_cur_source *s);
/* Draws the active source and the steps until the next draw (at step cur->step). */
void andrea_cur_draw(andrea_curriculum *c);
/* The step's loss for the active source: EMA, reward, pulls; the dice count down. */
void andrea_cur_observe(andrea_curriculum *c, float loss);
/* T + 1 tokens of the active source's stream into row, the position advanced by T. */
void andrea_cur_read_row(andrea_curriculum *c, int T, int32_t *row);
/* This epoch's document order of source k. */
void andrea_cur_shuffle(andrea_curriculum *c, int k);

/* curriculum_state.c: the checkpoint bytes */
size_t andrea_cur_save(const andrea_curriculum *c, uint8_t *out, size_t cap);
int andrea_cur_restore(andrea_curriculum *c, const uint8_t *pos, size_t n, const char *from);
uint64_t andrea_cur_data_hash(const andrea_curriculum *c);

/* curriculum_log.c: the JSON lines of log.jsonl (docs/curriculum.md) */
void andrea_cur_log_start(const andrea_curriculum *c, FILE *f);
void andrea_cur_log_step(const andrea_curriculum *c, FILE *f, int step, float loss);
void andrea_cur_log_draw(const andrea_curriculum *c, FILE *f);
void andrea_cur_log_pivot(const andrea_curriculum *c, FILE *f);

#endif
