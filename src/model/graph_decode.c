/*
 * graph_decode.c - a single sequence's decoding step through the backend's graphs where it
 * has them (backend.h's andrea_backend_graph_ops: CUDA graphs on cuda).
 *
 * One token of a small or mid-sized model is a hundred or more short ops (andrea-120m:
 * 12 layers of ~10), each a launch from the host of a few microseconds, while the GPU's
 * work for it is a few tens of microseconds: batch-1 generation is bound by the launches.
 * So a cache's second step is captured (the first, run as usual, has grown every scratch
 * buffer: nothing may allocate during a capture) and every later step replays it: one
 * launch. Nothing in the step depends on the position by value: the token and the
 * position are read from the batch's pinned ids (andrea_kv_batch_set_ids, written before
 * each replay) by the embedding gathers and by attention_decode_kv, which writes the cache
 * rows and attends up to that position. So one graph serves every position, after a
 * prefill, a truncation or a reset too. A replay runs the captured kernels with the
 * captured arguments: its bits are those of the ops run one by one.
 *
 * The graph is keyed by everything it captured: the model, the backend, the weights'
 * buffers (and their quantised copies), the cache's buffers, and the thread (a graph is
 * replayed by the thread that captured it). Off where the backend lacks attention_decode_kv,
 * under `bench --profile` and with ANDREA_CUDA_GRAPHS=0.
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
    const void *params, *q16, *q8, *qscale;
    int quant;
    const void *batch, *k, *v, *logits;
} decode_key;

struct andrea_decode_graph {
    decode_key key;
    pthread_t thread;
    andrea_backend_graph *graph; /* NULL: the key seen once, not captured yet */
    long replayed, captured;
};

static void key_now(const andrea_model *m, const andrea_kv *kv, decode_key *k) {
    memset(k, 0, sizeof *k); /* compared as bytes */
    k->m = m, k->be = m->be, k->params = m->params, k->q16 = m->q16, k->q8 = m->q8;
    k->qscale = m->qscale, k->quant = m->quant;
    k->batch = kv->one, k->k = kv->k, k->v = kv->v, k->logits = kv->logits;
}

static int graphs_wanted(const andrea_model *m) {
    return andrea_backend_graphs_on(m->be) && m->be->ops.attention_decode_kv && !andrea_prof_on;
}

static void drop(struct andrea_decode_graph *g) {
    if (g->graph) g->key.be->graph->destroy(g->key.be, g->graph);
    g->graph = NULL;
}

static int run_eager(const andrea_model *m, andrea_kv *kv, int32_t token) {
    andrea_kv_decode(m, kv->one, &kv, &token, 1, kv->logits);
    return 0;
}

static int replay(const andrea_model *m, andrea_kv *kv, struct andrea_decode_graph *g,
                  int32_t token) {
    andrea_kv_batch_set_ids(kv->one, &kv, &token, 1);
    if (m->be->graph->launch(m->be, g->graph)) return -1;
    kv->pos++; /* as andrea_kv_decode */
    g->replayed++;
    return 0;
}

/* Records one step (nothing runs while captured), then replays it; where the capture
 * cannot be made (graphs turned off by a failed capture, a failed backend) the step runs
 * as usual, as graph_step.c's. */
static int capture(const andrea_model *m, andrea_kv *kv, struct andrea_decode_graph *g,
                   int32_t token) {
    const andrea_backend_graph_ops *go = m->be->graph;
    int pos = kv->pos;
    if (go->begin(m->be)) return run_eager(m, kv, token);
    andrea_kv_decode(m, kv->one, &kv, &token, 1, kv->logits);
    kv->pos = pos; /* the capture ran nothing: the replay does */
    if (!(g->graph = go->end(m->be))) return run_eager(m, kv, token);
    g->captured++;
    return replay(m, kv, g, token);
}

int andrea_kv_decode_one(const andrea_model *m, andrea_kv *kv, int32_t token) {
    if (!graphs_wanted(m)) return run_eager(m, kv, token);
    if (!kv->graph && !(kv->graph = calloc(1, sizeof *kv->graph))) return run_eager(m, kv, token);
    struct andrea_decode_graph *g = kv->graph;
    decode_key k;
    key_now(m, kv, &k);
    if (memcmp(&g->key, &k, sizeof k) != 0 || !pthread_equal(g->thread, pthread_self())) {
        drop(g); /* seen now: captured at the next step */
        g->key = k, g->thread = pthread_self();
        return run_eager(m, kv, token);
    }
    return g->graph ? replay(m, kv, g, token) : capture(m, kv, g, token);
}

void andrea_kv_drop_graph(andrea_kv *kv) {
    if (!kv->graph) return;
    drop(kv->graph);
    free(kv->graph);
    kv->graph = NULL;
}

void andrea_kv_graph_counts(const andrea_kv *kv, long *replayed, long *captured) {
    *replayed = kv->graph ? kv->graph->replayed : 0;
    *captured = kv->graph ? kv->graph->captured : 0;
}
