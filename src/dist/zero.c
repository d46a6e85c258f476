/* zero.c - ZeRO-1 (zero.h): the shard plan, the sharded AdamW step, the moments gathered
 * for a checkpoint. */
#include "dist/zero.h"

#include <stdlib.h>

#include "backend/backend.h"
#include "dist/dist.h"
#include "model/model.h"
#include "util/error.h"

/* The cut nearest below target: a multiple of 64 floats into the tensor holding it. */
static int64_t cut_at(const andrea_layout *lay, int64_t target) {
    for (int i = 0; i < lay->n; i++) {
        const andrea_tensor_info *t = &lay->t[i];
        if (target >= t->offset && target < t->offset + t->size)
            return t->offset + (target - t->offset) / 64 * 64;
    }
    return lay->total;
}

int andrea_zero_plan(andrea_zero *z, const andrea_model *m, const andrea_dist *d) {
    int n = d->size;
    z->on = n > 1;
    z->counts = calloc((size_t)n, sizeof(int));
    z->displs = calloc((size_t)n, sizeof(int));
    if (!z->counts || !z->displs) return andrea_set_error("out of memory");
    int64_t total = m->layout.total, prev = 0;
    if (total > 0x7fffffff)
        return andrea_set_error("--zero 1: %lld parameters, more than MPI counts hold (2^31)",
                                (long long)total);
    for (int r = 0; r < n; r++) {
        int64_t end = r == n - 1 ? total : cut_at(&m->layout, total * (r + 1) / n);
        if (end < prev) end = prev;
        z->displs[r] = (int)prev;
        z->counts[r] = (int)(end - prev);
        if (r == d->rank) {
            z->lo = prev;
            z->hi = end;
        }
        prev = end;
    }
    return 0;
}

void andrea_zero_free(andrea_zero *z) {
    free(z->counts);
    free(z->displs);
    z->counts = z->displs = NULL;
}

int andrea_zero_step(const andrea_zero *z, andrea_dist *d, andrea_model *m, float *adam_m,
                     float *adam_v, float lr, float b1, float b2, float eps, float wd, int t,
                     float gscale) {
    /* tensor by tensor as andrea_model_adamw_step (the decay differs), cut to [lo, hi) */
    for (int i = 0; i < m->layout.n; i++) {
        const andrea_tensor_info *ti = &m->layout.t[i];
        int64_t a = ti->offset > z->lo ? ti->offset : z->lo;
        int64_t b = ti->offset + ti->size < z->hi ? ti->offset + ti->size : z->hi;
        if (a >= b) continue;
        m->be->ops.adamw_update(m->be, m->params + a, m->grads + a, adam_m + (a - z->lo),
                                adam_v + (a - z->lo), (size_t)(b - a), lr, b1, b2, eps,
                                ti->decay ? wd : 0.0f, t, gscale);
    }
    return andrea_dist_allgather(d, m->params, z->counts, z->displs);
}

int andrea_zero_gather(const andrea_zero *z, andrea_dist *d, int64_t n, const float *adam_m,
                       const float *adam_v, float **m_full, float **v_full) {
    *m_full = *v_full = NULL;
    if (d->rank == 0) {
        *m_full = malloc(sizeof(float) * (size_t)n);
        *v_full = malloc(sizeof(float) * (size_t)n);
    }
    /* (a rank 0 out of memory leaves the others to their --dist-timeout) */
    int rc = d->rank == 0 && (!*m_full || !*v_full)
                 ? andrea_set_error("out of memory gathering the AdamW moments")
                 : andrea_dist_gather(d, adam_m, *m_full, z->counts, z->displs, 0);
    if (rc == 0) rc = andrea_dist_gather(d, adam_v, *v_full, z->counts, z->displs, 0);
    if (rc) {
        free(*m_full);
        free(*v_full);
        *m_full = *v_full = NULL;
    }
    return rc;
}
