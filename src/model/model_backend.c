/*
 * model_backend.c - which backend a model runs on, and moving it to another
 * (andrea_model_set_backend): allocate everything on the new backend, copy the tensors
 * across through host memory in bounded chunks, free the old, rebuild the views, the
 * model's own context and the quantised copies.
 */
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/tensor_io.h"
#include "model/model.h"
#include "util/error.h"

/* A copy of the flat vector src (on from, layout.total floats) in be's memory followed by
 * hp's zeros; NULL when out of memory. */
static float *move_padded(const andrea_model *m, const andrea_backend *from,
                          const andrea_backend *be, const andrea_head_pad *hp, const float *src) {
    size_t n = (size_t)m->layout.total;
    float *p = andrea_padded_alloc(be, hp, n);
    if (p && andrea_tio_copy(from, be, p, src, n)) {
        be->ops.free(be, p);
        p = NULL;
    }
    return p;
}

static int same_pad(const andrea_head_pad *a, const andrea_head_pad *b) {
    return a->Vp == b->Vp && a->after == b->after;
}

int andrea_model_set_backend(andrea_model *m, const char *name) {
    const andrea_backend *be = andrea_backend_find(name);
    if (!be || andrea_backend_check_complete(be)) return -1;
    andrea_model_drop_graphs(m); /* they hold the old backend's buffers */
    andrea_head_pad pad;
    andrea_head_pad_plan(&m->cfg, andrea_backend_vocab_multiple(be), &pad);
    /* the CPU variants (or cuda and cuda-bf16): nothing moves, unless the new backend pads
     * the head otherwise (then the buffers are remade around the same values) */
    if (andrea_backend_same_memory(be, m->be) && same_pad(&pad, &m->pad)) {
        m->be = be;
        return 0;
    }
    const andrea_backend *old = m->be;
    float *params = move_padded(m, old, be, &pad, m->params);
    float *grads = params && m->grads ? move_padded(m, old, be, &pad, m->grads) : NULL;
    andrea_context *ctx = NULL;
    if (params && (grads || !m->grads)) {
        m->be = be; /* the context is created on the model's backend */
        ctx = andrea_context_create(m);
        m->be = old;
    }
    if (!ctx) {
        if (params) be->ops.free(be, params);
        if (grads) be->ops.free(be, grads);
        return andrea_set_error("moving the model to backend '%s': out of memory", be->name);
    }
    ctx->flash = m->ctx->flash;
    int quant = m->quant;
    andrea_model_quantize(m, ANDREA_QUANT_NONE);
    old->ops.free(old, m->params);
    if (m->grads) old->ops.free(old, m->grads);
    andrea_context_free(m->ctx);
    m->be = be;
    m->pad = pad;
    m->params = params;
    m->grads = grads;
    m->ctx = ctx;
    andrea_view_build(m, m->params, &m->p);
    if (m->grads) andrea_view_build(m, m->grads, &m->g);
    return andrea_model_quantize(m, quant);
}

/* Moves one moment vector of m (on backend from) to m's backend. */
static int move_moment(andrea_model *m, const andrea_backend *from, float **p) {
    if (!p || !*p || andrea_backend_same_memory(from, m->be)) return 0;
    float *q = andrea_tio_move(from, m->be, *p, (size_t)m->layout.total);
    if (!q) return -1;
    from->ops.free(from, *p);
    *p = q;
    return 0;
}

int andrea_model_move(andrea_model *m, const char *backend, float **adam_m, float **adam_v) {
    const andrea_backend *from = m->be;
    if (andrea_model_set_backend(m, backend)) return -1;
    return move_moment(m, from, adam_m) || move_moment(m, from, adam_v) ? -1 : 0;
}

andrea_model *andrea_model_to_default(andrea_model *m) {
    if (m && andrea_model_set_backend(m, NULL)) {
        andrea_model_free(m);
        return NULL;
    }
    return m;
}

const andrea_backend *andrea_model_backend(const andrea_model *m) { return m->be; }

int andrea_backend_same_memory(const andrea_backend *a, const andrea_backend *b) {
    /* host memory is one; a device's is shared by the instances that share its state
     * (cuda and cuda-bf16: one device, one allocator) */
    return a == b || (a->memory == ANDREA_MEM_HOST && b->memory == ANDREA_MEM_HOST) ||
           (a->memory == b->memory && a->state == b->state);
}
