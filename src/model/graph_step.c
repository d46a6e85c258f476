/*
 * graph_step.c - a training micro-batch (forward with targets, then backward) through the
 * backend's graphs where it has them (backend.h's andrea_backend_graph_ops: CUDA graphs).
 *
 * A small model's step is a few hundred short ops; on a GPU each costs a launch from the
 * host (a few microseconds), which is most of the step for baby and andrea-12m. So the
 * second micro-batch of a shape is captured (the first, run as usual, has grown every
 * scratch buffer to that shape: nothing may allocate during a capture) and every later one
 * of that shape replays the capture: one launch. What a replay needs from the host is put
 * where the capture read it: the token ids into the context's pinned copies (their
 * addresses are in the graph), and the loss comes back through the graph's results (the
 * cross-entropy's sum and count of valid rows). A replay runs the captured kernels with
 * the captured arguments, so its bits are those of the ops run one by one.
 *
 * A graph is keyed by everything it captured: the backend, every buffer's address, the
 * shape, the scale and whether the backward overwrites the gradients (the first micro-batch
 * of a step) or adds to them. A few keys are kept (grad_accum alternates two). Not used
 * where the run watches the backward as it goes (a data-parallel run's grad_ready), under
 * `bench --profile` (per-op times), or with ANDREA_CUDA_GRAPHS=0.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "util/error.h"
#include "util/profile.h"

enum { SLOTS = 4 };

typedef struct {
    const andrea_backend *be;
    const float *params, *grads, *acts;
    const int32_t *inputs, *targets;
    int B, T, init, flash;
    float scale;
} step_key;

typedef struct {
    step_key key;
    andrea_backend_graph *graph; /* NULL: seen once (run as usual), not captured yet */
    int used;                    /* the slot holds a key */
    unsigned long last;          /* when it was last used: the oldest is replaced */
} step_slot;

struct andrea_step_graphs {
    step_slot slot[SLOTS];
    unsigned long clock;
    long replayed, captured;
};

static int graphs_wanted(const andrea_model *m) {
    return andrea_backend_graphs_on(m->be) && m->ctx->be->graph && !m->grad_ready &&
           !andrea_prof_on;
}

/* The key of a micro-batch of (B, T) now; 0 when the context's buffers do not fit it yet
 * (the forward would reallocate them). Zeroed first: keys are compared as bytes. */
static int key_now(const andrea_model *m, int B, int T, float scale, step_key *k) {
    const andrea_context *c = m->ctx;
    memset(k, 0, sizeof *k);
    if (!c->act_mem || c->act_B != B || c->act_T != T || c->act_flash != c->flash ||
        c->logits_ld != m->pad.Vp || !m->grads)
        return 0;
    k->be = m->be, k->params = m->params, k->grads = m->grads, k->acts = c->act_mem;
    k->inputs = c->inputs, k->targets = c->targets;
    k->B = B, k->T = T, k->init = m->grads_stale, k->flash = c->flash, k->scale = scale;
    return 1;
}

static step_slot *find(struct andrea_step_graphs *s, const step_key *k) {
    for (int i = 0; i < SLOTS; i++)
        if (s->slot[i].used && memcmp(&s->slot[i].key, k, sizeof *k) == 0) return &s->slot[i];
    return NULL;
}

/* Remembers k as seen (in the oldest slot, its graph freed). */
static void remember(andrea_model *m, const step_key *k) {
    struct andrea_step_graphs *s = m->graphs;
    step_slot *old = &s->slot[0];
    for (int i = 1; i < SLOTS; i++)
        if (!s->slot[i].used || (old->used && s->slot[i].last < old->last)) old = &s->slot[i];
    if (old->graph) m->be->graph->destroy(m->be, old->graph);
    old->graph = NULL;
    old->key = *k;
    old->used = 1;
    old->last = ++s->clock;
}

static float run_eager(andrea_model *m, const int32_t *inputs, const int32_t *targets, int B,
                       int T, float scale) {
    andrea_clear_error(); /* so that a NaN loss is told apart from a failed call */
    float loss = andrea_model_forward(m, inputs, targets, B, T);
    if (isnan(loss) && andrea_error()[0]) return NAN;
    if (andrea_model_backward_scaled(m, scale)) return NAN;
    return loss;
}

/* Replays g with these ids and leaves the context and gradients as the ops would. */
static float replay(andrea_model *m, andrea_backend_graph *g, const int32_t *inputs,
                    const int32_t *targets, int B, int T) {
    andrea_context *c = m->ctx;
    if (andrea_context_check_batch(m, c, inputs, targets, B, T)) return NAN;
    memcpy(c->inputs, inputs, sizeof(int32_t) * (size_t)B * T);
    memcpy(c->targets, targets, sizeof(int32_t) * (size_t)B * T);
    double r[2];
    if (m->be->graph->launch(m->be, g)) return NAN;
    int n = m->be->graph->results(m->be, g, r, 2);
    if (n < 0) return NAN;
    if (n != 2) return andrea_set_error("graph step: %d results, not a loss sum and count", n), NAN;
    c->B = B, c->T = T, c->tail_rows = 0, c->has_targets = 0; /* as after the backward */
    c->n_valid = (int)r[1];
    c->loss = c->n_valid ? (float)(r[0] / c->n_valid) : 0.0f; /* as crossentropy_forward */
    m->grads_stale = 0;
    m->graphs->replayed++;
    return c->loss;
}

/* Captures one micro-batch (nothing runs while captured), then replays it. Where the
 * capture cannot be made the micro-batch runs as usual: graphs off (a capture failed
 * before: the backend turns them off, not the run) or a failed backend, whose ops then
 * fail with their own message. */
static float capture(andrea_model *m, step_slot *slot, const int32_t *inputs,
                     const int32_t *targets, int B, int T, float scale) {
    const andrea_backend_graph_ops *go = m->be->graph;
    if (go->begin(m->be)) return run_eager(m, inputs, targets, B, T, scale);
    andrea_clear_error();
    float loss = andrea_model_forward(m, inputs, targets, B, T);
    int bad = isnan(loss) && andrea_error()[0];
    if (!bad) bad = andrea_model_backward_scaled(m, scale);
    andrea_backend_graph *g = go->end(m->be);
    m->grads_stale = slot->key.init; /* the capture ran nothing: the replay does */
    if (bad || !g) {
        if (g) go->destroy(m->be, g);
        return run_eager(m, inputs, targets, B, T, scale);
    }
    slot->graph = g;
    m->graphs->captured++;
    return replay(m, g, inputs, targets, B, T);
}

float andrea_model_train_micro(andrea_model *m, const int32_t *inputs, const int32_t *targets,
                               int B, int T, float scale) {
    if (!targets) return andrea_set_error("train_micro: needs targets"), NAN;
    step_key k;
    if (!graphs_wanted(m) || !key_now(m, B, T, scale, &k))
        return run_eager(m, inputs, targets, B, T, scale);
    if (!m->graphs && !(m->graphs = calloc(1, sizeof *m->graphs)))
        return run_eager(m, inputs, targets, B, T, scale);
    step_slot *slot = find(m->graphs, &k);
    if (!slot) {
        remember(m, &k);
        return run_eager(m, inputs, targets, B, T, scale);
    }
    slot->last = ++m->graphs->clock;
    if (slot->graph) return replay(m, slot->graph, inputs, targets, B, T);
    return capture(m, slot, inputs, targets, B, T, scale);
}

void andrea_model_drop_graphs(andrea_model *m) {
    if (!m->graphs) return;
    for (int i = 0; i < SLOTS; i++)
        if (m->graphs->slot[i].graph) m->be->graph->destroy(m->be, m->graphs->slot[i].graph);
    free(m->graphs);
    m->graphs = NULL;
}

void andrea_model_graph_counts(const andrea_model *m, long *replayed, long *captured) {
    *replayed = m->graphs ? m->graphs->replayed : 0;
    *captured = m->graphs ? m->graphs->captured : 0;
}
