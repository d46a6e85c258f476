/*
 * graph_decode.c - decoding steps through the backend's graphs where it has them
 * (backend.h's andrea_backend_graph_ops: CUDA graphs on cuda): a single sequence's steps
 * (andrea_kv_step: generate, chat, the sample gate) and batched ones (andrea_kv_batch_step:
 * the server, bench --gen-batch).
 *
 * One token of a small or mid-sized model is a hundred or more short ops (andrea-120m:
 * 12 layers of ~10), each a launch from the host of a few microseconds, while the GPU's
 * work for it is a few tens of microseconds: decoding is bound by the launches. So the step
 * of one set of caches is captured the second time in a row it comes (the first, run as
 * usual, has grown every scratch buffer: nothing may allocate during a capture) and every
 * later step of that set replays it: one launch. Nothing in a step depends on the positions
 * by value: the tokens and positions are read from the batch's pinned ids
 * (andrea_kv_batch_set_ids, written before each replay) by the embedding gathers and by an
 * upload to device memory that attention_decode_kv reads, to write the cache rows and
 * attend up to each position. So one graph serves every position, after a prefill, a
 * truncation or a reset too. A replay runs the captured kernels with the captured
 * arguments: its bits are those of the ops run one by one.
 *
 * The graph is keyed by everything it captured: the model, the backend, the weights'
 * buffers (and their quantised copies), the output, the number of sequences and each
 * one's cache (its address and buffers), and the thread (a graph is replayed by the
 * thread that captured it). One graph a batch: a server whose set of sequences changes
 * captures again once the new set has come twice. Off where the backend lacks
 * attention_decode_kv, under `bench --profile` and with ANDREA_CUDA_GRAPHS=0.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "model/kv.h"
#include "model/model.h"
#include "util/error.h"
#include "util/profile.h"

typedef struct {
    const andrea_model *m;
    const andrea_backend *be;
    const void *params, *q16, *q8, *qscale, *out;
    int quant, n;
} decode_key;

typedef struct {
    const void *kv, *k, *v, *logits;
} cache_key;

struct andrea_decode_graph {
    decode_key key;
    cache_key *caches; /* (max) the key's caches */
    pthread_t thread;
    andrea_backend_graph *graph; /* NULL: the key seen once, not captured yet */
    long replayed, captured;
};

static int graphs_wanted(const andrea_model *m) {
    return andrea_backend_graphs_on(m->be) && m->be->ops.attention_decode_kv && !andrea_prof_on;
}

static void drop(struct andrea_decode_graph *g) {
    if (g->graph) g->key.be->graph->destroy(g->key.be, g->graph);
    g->graph = NULL;
}

static cache_key cache_of(const andrea_kv *kv) {
    cache_key c = {kv, kv->k, kv->v, kv->logits};
    return c;
}

/* 1 when g's key is this step's; else g's graph is dropped, g takes the key, and 0 */
static int same_key(const andrea_model *m, struct andrea_decode_graph *g, andrea_kv *const *kvs,
                    int n, const float *out) {
    decode_key k;
    memset(&k, 0, sizeof k); /* compared as bytes */
    k.m = m, k.be = m->be, k.params = m->params, k.q16 = m->q16, k.q8 = m->q8;
    k.qscale = m->qscale, k.out = out, k.quant = m->quant, k.n = n;
    int same = memcmp(&g->key, &k, sizeof k) == 0 && pthread_equal(g->thread, pthread_self());
    for (int s = 0; s < n && same; s++) {
        cache_key c = cache_of(kvs[s]);
        same = memcmp(&g->caches[s], &c, sizeof c) == 0;
    }
    if (same) return 1;
    drop(g); /* with the backend that made it */
    g->key = k, g->thread = pthread_self();
    for (int s = 0; s < n; s++) g->caches[s] = cache_of(kvs[s]);
    return 0;
}

static int replay(const andrea_model *m, andrea_kv_batch *b, struct andrea_decode_graph *g,
                  andrea_kv *const *kvs, const int32_t *tokens, int n) {
    andrea_kv_batch_set_ids(b, kvs, tokens, n);
    if (m->be->graph->launch(m->be, g->graph)) return -1;
    for (int s = 0; s < n; s++) kvs[s]->pos++; /* as andrea_kv_decode */
    g->replayed++;
    return 0;
}

/* Records one step (nothing runs while captured), then replays it; where the capture
 * cannot be made (graphs turned off by a failed capture, a failed backend) the step runs
 * as usual, as graph_step.c's. */
static int capture(const andrea_model *m, andrea_kv_batch *b, struct andrea_decode_graph *g,
                   andrea_kv *const *kvs, const int32_t *tokens, int n, float *out) {
    const andrea_backend_graph_ops *go = m->be->graph;
    if (go->begin(m->be)) return andrea_kv_decode(m, b, kvs, tokens, n, out), 0;
    andrea_kv_decode(m, b, kvs, tokens, n, out);
    for (int s = 0; s < n; s++) kvs[s]->pos--; /* the capture ran nothing: the replay does */
    if (!(g->graph = go->end(m->be))) return andrea_kv_decode(m, b, kvs, tokens, n, out), 0;
    g->captured++;
    return replay(m, b, g, kvs, tokens, n);
}

static struct andrea_decode_graph *graph_of(andrea_kv_batch *b) {
    struct andrea_decode_graph **slot = andrea_kv_batch_graph_slot(b);
    if (*slot) return *slot;
    struct andrea_decode_graph *g = calloc(1, sizeof *g);
    if (g && !(g->caches = calloc((size_t)andrea_kv_batch_max(b), sizeof *g->caches)))
        free(g), g = NULL;
    return *slot = g;
}

int andrea_kv_decode_graphed(const andrea_model *m, andrea_kv_batch *b, andrea_kv *const *kvs,
                             const int32_t *tokens, int n, float *out) {
    struct andrea_decode_graph *g = graphs_wanted(m) ? graph_of(b) : NULL;
    if (!g) return andrea_kv_decode(m, b, kvs, tokens, n, out), 0;
    if (!same_key(m, g, kvs, n, out)) /* seen now: captured at the next step of this set */
        return andrea_kv_decode(m, b, kvs, tokens, n, out), 0;
    return g->graph ? replay(m, b, g, kvs, tokens, n) : capture(m, b, g, kvs, tokens, n, out);
}

void andrea_decode_graph_free(struct andrea_decode_graph *g) {
    if (!g) return;
    drop(g);
    free(g->caches);
    free(g);
}

void andrea_kv_batch_graph_counts(andrea_kv_batch *b, long *replayed, long *captured) {
    const struct andrea_decode_graph *g = *andrea_kv_batch_graph_slot(b);
    *replayed = g ? g->replayed : 0;
    *captured = g ? g->captured : 0;
}

void andrea_kv_graph_counts(const andrea_kv *kv, long *replayed, long *captured) {
    andrea_kv_batch_graph_counts(kv->one, replayed, captured);
}
