/* zero.c - ZeRO-1 (zero.h): the shard plan, the sharded AdamW step, the moments gathered
 * for a checkpoint. */
#include "parallel/zero.h"

#include <stdlib.h>

#include "backend/backend.h"
#include "backend/tensor_io.h"
#include "parallel/dist.h"
#include "parallel/dist_device.h"
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
    z->host = NULL;
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
    free(z->host);
    z->counts = z->displs = NULL;
    z->host = NULL;
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
    if (m->be->memory == ANDREA_MEM_HOST) return andrea_dist_allgather(d, m->params, z->counts, z->displs);
    if (d->device) return andrea_dist_device_allgather(d, m->params, z->counts, z->displs);
    /* through host memory: this rank's slice down, the gather, everything back up */
    size_t n = (size_t)m->layout.total;
    andrea_zero *zw = (andrea_zero *)z;
    if (!zw->host && !(zw->host = malloc(sizeof(float) * n)))
        return andrea_set_error("out of memory staging the parameters for the ranks");
    andrea_tio_read(m->be, zw->host + z->lo, m->params + z->lo, (size_t)(z->hi - z->lo));
    if (andrea_dist_allgather(d, zw->host, z->counts, z->displs)) return -1;
    andrea_tio_write(m->be, m->params, zw->host, n);
    return 0;
}

/* One moment vector gathered onto rank 0 through host memory, then into m's backend. */
static int gather_one(const andrea_zero *z, andrea_dist *d, const andrea_model *m,
                      const float *slice, float **full) {
    const andrea_backend *be = m->be;
    size_t n = (size_t)m->layout.total, k = (size_t)(z->hi - z->lo);
    float *part = malloc(sizeof(float) * (k ? k : 1));
    float *host = d->rank == 0 ? malloc(sizeof(float) * n) : NULL;
    *full = d->rank == 0 ? be->ops.alloc(be, sizeof(float) * n) : NULL;
    /* (a rank 0 out of memory leaves the others to their --dist-timeout) */
    int rc = !part || (d->rank == 0 && (!host || !*full))
                 ? andrea_set_error("out of memory gathering the AdamW moments")
                 : 0;
    if (rc == 0) {
        andrea_tio_read(be, part, slice, k);
        rc = andrea_dist_gather(d, part, host, z->counts, z->displs, 0);
    }
    if (rc == 0 && *full) andrea_tio_write(be, *full, host, n);
    if (rc && *full) be->ops.free(be, *full), *full = NULL;
    free(part);
    free(host);
    return rc;
}

int andrea_zero_gather(const andrea_zero *z, andrea_dist *d, const andrea_model *m,
                       const float *adam_m, const float *adam_v, float **m_full,
                       float **v_full) {
    *m_full = *v_full = NULL;
    int rc = gather_one(z, d, m, adam_m, m_full);
    if (rc == 0) rc = gather_one(z, d, m, adam_v, v_full);
    if (rc && *m_full) m->be->ops.free(m->be, *m_full), *m_full = NULL;
    return rc;
}
