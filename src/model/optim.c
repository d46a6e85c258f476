/*
 * optim.c - the optimiser's passes over a whole model, on its backend: the squared
 * gradient norm (for clipping) and one AdamW step of every tensor, weight decay on
 * the tensors that take it (2-D matrices: andrea_tensor_info.decay): all tensors in one
 * op where the backend has it (adamw_update_many), else tensor by tensor.
 */
#include <stdlib.h>

#include "backend/backend.h"
#include "model/model.h"

double andrea_model_grad_sum_squares(andrea_model *m) {
    float *g = andrea_model_ensure_grads(m) ? NULL : m->grads;
    return g ? m->be->ops.sum_squares(m->be, g, (size_t)m->layout.total) : 0.0;
}

/* Every tensor in one op (a GPU's one launch): the layout's offsets and decay flags as
 * adamw_update_many takes them. -1 when out of memory (the caller goes tensor by tensor). */
static int adamw_all(andrea_model *m, float *adam_m, float *adam_v, float lr, float b1, float b2,
                     float eps, float wd, int t, float gscale) {
    int n = m->layout.n;
    int64_t *off = malloc(sizeof(int64_t) * ((size_t)n + 1));
    uint8_t *decay = malloc((size_t)n);
    int ok = off && decay;
    for (int i = 0; ok && i < n; i++) {
        off[i] = m->layout.t[i].offset;
        decay[i] = (uint8_t)m->layout.t[i].decay;
    }
    if (ok) {
        off[n] = m->layout.total;
        m->be->ops.adamw_update_many(m->be, m->params, m->grads, adam_m, adam_v, off, decay, n,
                                     lr, b1, b2, eps, wd, t, gscale);
    }
    free(off), free(decay);
    return ok ? 0 : -1;
}

void andrea_model_adamw_step(andrea_model *m, float *adam_m, float *adam_v, float lr, float b1,
                             float b2, float eps, float wd, int t, float gscale) {
    if (andrea_model_ensure_grads(m)) return;
    float *g = m->grads;
    if (m->be->ops.adamw_update_many &&
        adamw_all(m, adam_m, adam_v, lr, b1, b2, eps, wd, t, gscale) == 0)
        return;
    /* tensor by tensor: the decay differs, and each is one parallel pass */
    for (int i = 0; i < m->layout.n; i++) {
        const andrea_tensor_info *ti = &m->layout.t[i];
        m->be->ops.adamw_update(m->be, m->params + ti->offset, g + ti->offset,
                                adam_m + ti->offset, adam_v + ti->offset, (size_t)ti->size, lr,
                                b1, b2, eps, ti->decay ? wd : 0.0f, t, gscale);
    }
}

float *andrea_model_moments_alloc(const andrea_model *m) {
    size_t bytes = sizeof(float) * (size_t)m->layout.total;
    float *p = m->be->ops.alloc(m->be, bytes);
    if (p) m->be->ops.zero(m->be, p, bytes);
    return p;
}

void andrea_model_moments_free(const andrea_model *m, float *p) {
    if (p) m->be->ops.free(m->be, p);
}
