/* prefill.h - a fresh prompt's forward pass for generation only (prefill.c). */
#ifndef ANDREA_MODEL_PREFILL_H
#define ANDREA_MODEL_PREFILL_H

#include "andrea.h"

/* One layer's buffers over a prompt's rows, carved from the context's prefill scratch. */
typedef struct {
    float *x, *y;          /* the residual stream: in and out of a block, its middle */
    float *ln, *atty, *qkv, *fch, *fch_act;
    float *mean, *rstd, *lse;
    float *logits;         /* (tail, V): the LM head over the prompt's last rows */
    int tail;              /* those rows: min(T, 8) */
} andrea_prefill_bufs;

/* Runs tokens[0..T) (T >= 1, the cache empty, T within the context) through m with ctx's
 * scratch, fills kv's keys and values for positions 0..T-1, puts the last position's
 * logits in kv->logits and sets kv->pos = T. 0, or -1 with a message. */
int andrea_prefill_forward(const andrea_model *m, andrea_context *ctx, andrea_kv *kv,
                           const int32_t *tokens, int T);

/* andrea_prefill_reserve's work for ctx (T within m's context): ctx's scratch grown to T
 * rows and, when it grew, written once. 0, or -1 with a message. */
int andrea_prefill_reserve_ctx(const andrea_model *m, andrea_context *ctx, int T);

#endif
