/*
 * kv.h - the inside of a KV cache (one sequence's decoding state). Single (kv.c) and
 * batched (kv_batch.c) decoding run one block of code (andrea_kv_decode), entirely
 * through the model's backend: a single step is a batch of one. Internal to the library.
 */
#ifndef ANDREA_KV_H
#define ANDREA_KV_H

#include <stddef.h>

#include "andrea.h"

struct andrea_kv {
    const andrea_backend *be; /* whose memory the cache is in: the model's at creation */
    int pos;
    int L, T, C, V;
    float *k, *v;          /* (L, T, C), backend memory */
    float *logits;         /* (V) after the last token, backend memory */
    andrea_kv_batch *one;  /* the scratch of a single step (a batch of one) */
    float *host_logits;    /* the host copy andrea_kv_logits hands out (non-host backend) */
    size_t host_n;
    struct andrea_decode_graph *graph; /* its single steps' graph (graph_decode.c), or NULL */
};

/* 0 when kv (and its scratch) is in memory m's backend can use, else -1 with a message:
 * a cache made before andrea_model_set_backend moved the model elsewhere. */
int andrea_kv_check_backend(const andrea_model *m, const andrea_kv *kv);

/* Advances kvs[0..n) by tokens[0..n) (already checked) in one step; the logits go to
 * out (n, V), backend memory (b's own when out is NULL); returns out or b's. */
float *andrea_kv_decode(const andrea_model *m, andrea_kv_batch *b, andrea_kv *const *kvs,
                        const int32_t *tokens, int n, float *out);

/* b's host copies of the step's ids: tokens[0..n) and each sequence's position, the
 * arrays the step's ops read (andrea_kv_decode sets them; a graph's replay sets them
 * before it runs). */
void andrea_kv_batch_set_ids(andrea_kv_batch *b, andrea_kv *const *kvs, const int32_t *tokens,
                             int n);

/* One step of kv by token (checked), its logits into kv->logits: replayed from a graph
 * where the backend has them (graph_decode.c), else andrea_kv_decode. 0, or -1 with
 * andrea_error() (a failed capture or replay). */
int andrea_kv_decode_one(const andrea_model *m, andrea_kv *kv, int32_t token);
/* Frees kv's graph (kv_free; a graph of another backend, model or thread is replaced). */
void andrea_kv_drop_graph(andrea_kv *kv);
/* How many of kv's single steps were replayed from its graph, and how many graphs it
 * captured (bench's report, tests). */
void andrea_kv_graph_counts(const andrea_kv *kv, long *replayed, long *captured);

#endif
