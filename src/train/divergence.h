/* divergence.h - the divergence guard: which steps the trainer skips (divergence.c). */
#ifndef ANDREA_TRAIN_DIVERGENCE_H
#define ANDREA_TRAIN_DIVERGENCE_H

#include <stddef.h>

enum { ANDREA_GUARD_WINDOW = 50 }; /* good steps the spike rules compare against */

typedef struct {
    float spike_loss; /* > 0: skip a loss over this many times the recent median */
    float spike_grad; /* > 0: skip a gradient norm over this many times the recent median */
    float max_weight; /* > 0: skip an update that could carry a weight past this */
    int vocab;        /* V: a loss over spike_loss x ln V is skipped from the first step */
} andrea_guard_limits;

/* The losses and gradient norms of the last good steps (a ring). Zero it to start. */
typedef struct {
    float loss[ANDREA_GUARD_WINDOW], gnorm[ANDREA_GUARD_WINDOW];
    int n, next;
} andrea_guard;

/* Records a step whose update was applied. */
void andrea_guard_observe(andrea_guard *g, float loss, float grad_norm);
/* 1 with why (one line) when a step of this loss and gradient norm must be skipped:
 * non-finite, or a spike against the window; else 0. */
int andrea_guard_check(const andrea_guard *g, const andrea_guard_limits *lim, float loss,
                       float grad_norm, char *why, size_t n);
/* 1 with why when AdamW step t (1-based) at lr could move a weight of the model, whose
 * largest |w| is max_abs_w, past lim->max_weight; else 0. */
int andrea_guard_check_update(const andrea_guard_limits *lim, double max_abs_w, float lr,
                              float b1, float b2, float wd, int t, char *why, size_t n);
/* The bound on AdamW's |m_hat / (sqrt(v_hat) + eps)| at step t (divergence.c). */
double andrea_guard_adam_ratio_bound(float b1, float b2, int t);

#endif
