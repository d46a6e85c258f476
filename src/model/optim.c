/*
 * optim.c - the optimiser's passes over a whole model, on its backend: the squared
 * gradient norm (for clipping) and one AdamW step of every tensor, weight decay on
 * the tensors that take it (2-D matrices: andrea_tensor_info.decay).
 */
#include "backend/backend.h"
#include "model/model.h"

double andrea_model_grad_sum_squares(andrea_model *m) {
    float *g = andrea_model_ensure_grads(m) ? NULL : m->grads;
    return g ? m->be->ops.sum_squares(m->be, g, (size_t)m->layout.total) : 0.0;
}

void andrea_model_adamw_step(andrea_model *m, float *adam_m, float *adam_v, float lr, float b1,
                             float b2, float eps, float wd, int t, float gscale) {
    if (andrea_model_ensure_grads(m)) return;
    float *g = m->grads;
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
