/*
 * kv.h - the inside of a KV cache (one sequence's decoding state) and the per-position
 * pieces that single (kv.c) and batched (kv_batch.c) decoding share, so both compute the
 * same arithmetic. Internal to the library.
 */
#ifndef ANDREA_KV_H
#define ANDREA_KV_H

#include "andrea.h"

struct andrea_kv {
    const andrea_backend *be; /* whose memory the cache is in: the model's at creation */
    int pos;
    int L, T, C;
    float *k, *v;          /* (L, T, C) */
    float *x, *xn, *qkv;   /* (C), (C), (3C) */
    float *atty, *tmp;     /* (C), (C) */
    float *h, *hact;       /* (4C), (4C) */
    float *att;            /* (NH, T): one row of scores per head */
    float *logits;         /* (V) */
    float stat_mean, stat_rstd;
};

/* Norm of n rows (C each); mean and rstd (n) are scratch: decoding keeps no activations. */
void andrea_kv_norm(const andrea_model *m, float *out, float *mean, float *rstd,
                    const float *inp, const float *w, const float *b, int n);
/* Layer attention for position pos of one sequence: its key and value (from qkv, 3C) go
 * into the layer's cache rows kc, vc (ctx, C), then each head's query attends over
 * positions 0..pos. att_scratch (NH, ctx); out (C). */
void andrea_kv_attend(const andrea_model *m, const float *qkv, float *kc, float *vc, int pos,
                      float *att_scratch, float *out);

#endif
