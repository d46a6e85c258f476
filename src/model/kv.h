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

/* andrea_kv_decode (checked), replayed from b's graph where the backend has graphs
 * (graph_decode.c): the step of one set of caches is captured at its second time in a row
 * and replayed while the set stays. 0, or -1 with andrea_error() (a failed replay). */
int andrea_kv_decode_graphed(const andrea_model *m, andrea_kv_batch *b, andrea_kv *const *kvs,
                             const int32_t *tokens, int n, float *out);
/* b's graph slot (graph_decode.c fills it, andrea_kv_batch_free frees it with
 * andrea_decode_graph_free) and the most sequences b holds. */
struct andrea_decode_graph **andrea_kv_batch_graph_slot(andrea_kv_batch *b);
int andrea_kv_batch_max(const andrea_kv_batch *b);
void andrea_decode_graph_free(struct andrea_decode_graph *g);
/* How many steps were replayed from b's (kv's single steps': kv->one's) graphs, and how many
 * graphs were captured (bench's report, tests). */
void andrea_kv_batch_graph_counts(andrea_kv_batch *b, long *replayed, long *captured);
void andrea_kv_graph_counts(const andrea_kv *kv, long *replayed, long *captured);

#endif
