/*
 * quant.c - weight-only quantisation for generation. Batch-1 decoding reads
 * every weight once per token, so its speed is set by memory bandwidth:
 * bf16 weights halve the bytes, int8 (one fp32 scale per row, absmax/127)
 * quarters them. Activations and accumulation stay fp32.
 * andrea_model_fake_quantize() rounds the fp32 weights to what a format can
 * represent, so `andrea eval --quant` measures the accuracy cost exactly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fastmath.h"
#include "backend/backend.h"
#include "model/model.h"
#include "util/bigalloc.h"
#include "util/error.h"

static int is_matrix(const andrea_tensor_info *t) { return t->cols > 0; }

/* The int8 scale index of the matrix row starting at parameter offset off. */
static int64_t scale_index(const andrea_model *m, int64_t off) {
    for (int i = 0; i < m->layout.n; i++) {
        const andrea_tensor_info *t = &m->layout.t[i];
        if (off >= t->offset && off < t->offset + t->size)
            return m->qrow_base[i] + (off - t->offset) / (t->cols ? t->cols : 1);
    }
    return 0; /* not reached: callers pass rows of weight matrices */
}

static void free_copies(andrea_model *m) {
    const andrea_backend *be = m->be;
    if (m->q16) be->ops.free(be, m->q16);
    if (m->q8) be->ops.free(be, m->q8);
    if (m->qscale) be->ops.free(be, m->qscale);
    free(m->qrow_base);
    m->q16 = NULL;
    m->q8 = NULL;
    m->qscale = NULL;
    m->qrow_base = NULL;
    m->quant = ANDREA_QUANT_NONE;
}

int andrea_model_quantize(andrea_model *m, int kind) {
    const andrea_backend *be = m->be;
    free_copies(m);
    if (kind == ANDREA_QUANT_NONE) return 0;
    int64_t n = m->layout.total;
    if (kind == ANDREA_QUANT_BF16) {
        m->q16 = be->ops.alloc(be, sizeof(uint16_t) * (size_t)n);
        if (!m->q16) return andrea_set_error("out of memory for bf16 weights");
        be->ops.quantize(be, m->q16, NULL, m->params, kind, (size_t)n, 1);
    } else if (kind == ANDREA_QUANT_INT8) {
        /* one scale per matrix row, rows numbered across all matrices in file order */
        int64_t rows = 0;
        m->qrow_base = malloc(sizeof(int64_t) * (size_t)m->layout.n);
        if (!m->qrow_base) return andrea_set_error("out of memory for int8 weights");
        for (int i = 0; i < m->layout.n; i++) {
            m->qrow_base[i] = rows;
            if (is_matrix(&m->layout.t[i])) rows += m->layout.t[i].rows;
        }
        m->q8 = be->ops.alloc(be, (size_t)n);
        m->qscale = be->ops.alloc(be, sizeof(float) * (size_t)(rows ? rows : 1));
        if (!m->q8 || !m->qscale) {
            free_copies(m);
            return andrea_set_error("out of memory for int8 weights");
        }
        for (int i = 0; i < m->layout.n; i++) {
            const andrea_tensor_info *t = &m->layout.t[i];
            if (is_matrix(t))
                be->ops.quantize(be, m->q8 + t->offset, m->qscale + m->qrow_base[i],
                                 m->params + t->offset, kind, (size_t)t->rows, (size_t)t->cols);
        }
    } else {
        return andrea_set_error("unknown quantisation %d", kind);
    }
    m->quant = kind;
    return 0;
}

/* The quantised copy of the parameters at offset base, and its first row's int8 scale. */
static const void *quant_at(const andrea_model *m, int64_t base, const float **scale) {
    *scale = m->quant == ANDREA_QUANT_INT8 ? m->qscale + scale_index(m, base) : NULL;
    return m->quant == ANDREA_QUANT_BF16   ? (const void *)(m->q16 + base)
           : m->quant == ANDREA_QUANT_INT8 ? (const void *)(m->q8 + base)
                                           : (const void *)(m->params + base);
}

int andrea_model_fake_quantize(andrea_model *m, int kind) {
    if (andrea_model_quantize(m, kind)) return -1;
    for (int i = 0; i < m->layout.n && kind != ANDREA_QUANT_NONE; i++) {
        const andrea_tensor_info *t = &m->layout.t[i];
        if (!is_matrix(t)) continue;
        const float *scale;
        const void *q = quant_at(m, t->offset, &scale);
        m->be->ops.gather_rows(m->be, m->params + t->offset, q, kind, scale, NULL, t->rows,
                               t->cols);
    }
    return andrea_model_quantize(m, ANDREA_QUANT_NONE);
}

/* out(n, N) = x(n, K) w(N, K)^T + bias, w read in the model's quantised format, on its
 * backend. */
void andrea_matvec_batch(const andrea_model *m, float *out, const float *x, const float *w,
                         const float *bias, int K, int N, int n) {
    const float *scale;
    const void *wq = quant_at(m, w - m->params, &scale);
    m->be->ops.matvec(m->be, out, x, wq, m->quant, scale, bias, K, N, n);
}

void andrea_matvec(const andrea_model *m, float *out, const float *x, const float *w,
                   const float *bias, int K, int N) {
    andrea_matvec_batch(m, out, x, w, bias, K, N, 1);
}

int andrea_quant_parse(const char *s, int *out) {
    if (strcmp(s, "f32") == 0 || strcmp(s, "none") == 0) return *out = ANDREA_QUANT_NONE, 0;
    if (strcmp(s, "bf16") == 0) return *out = ANDREA_QUANT_BF16, 0;
    if (strcmp(s, "int8") == 0 || strcmp(s, "q8") == 0) return *out = ANDREA_QUANT_INT8, 0;
    return andrea_set_error("unknown weight format '%s' (expected f32, bf16 or int8)", s);
}

void andrea_gather_weight_rows(const andrea_model *m, float *out, const float *w,
                               const int32_t *ids, int n, int K) {
    const float *scale;
    const void *wq = quant_at(m, w - m->params, &scale);
    m->be->ops.gather_rows(m->be, out, wq, m->quant, scale, ids, n, K);
}
