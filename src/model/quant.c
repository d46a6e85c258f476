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

int andrea_model_quantize(andrea_model *m, int kind) {
    free(m->q16);
    free(m->q8);
    free(m->qscale);
    free(m->qrow_base);
    m->q16 = NULL;
    m->q8 = NULL;
    m->qscale = NULL;
    m->qrow_base = NULL;
    m->quant = ANDREA_QUANT_NONE;
    if (kind == ANDREA_QUANT_NONE) return 0;
    int64_t n = m->layout.total;
    if (kind == ANDREA_QUANT_BF16) {
        m->q16 = andrea_big_alloc(sizeof(uint16_t) * (size_t)n);
        if (!m->q16) return andrea_set_error("out of memory for bf16 weights");
        for (int64_t i = 0; i < n; i++) m->q16[i] = andrea_bf16_from_f32(m->params[i]);
    } else if (kind == ANDREA_QUANT_INT8) {
        /* one scale per matrix row, rows numbered across all matrices in file order */
        int64_t rows = 0;
        m->qrow_base = malloc(sizeof(int64_t) * (size_t)m->layout.n);
        if (!m->qrow_base) return andrea_set_error("out of memory for int8 weights");
        for (int i = 0; i < m->layout.n; i++) {
            m->qrow_base[i] = rows;
            if (is_matrix(&m->layout.t[i])) rows += m->layout.t[i].rows;
        }
        m->q8 = andrea_big_alloc((size_t)n);
        m->qscale = malloc(sizeof(float) * (size_t)(rows ? rows : 1));
        if (!m->q8 || !m->qscale) return andrea_set_error("out of memory for int8 weights");
        for (int i = 0; i < m->layout.n; i++) {
            const andrea_tensor_info *t = &m->layout.t[i];
            if (!is_matrix(t)) continue;
            for (int r = 0; r < t->rows; r++) {
                int64_t row = t->offset + (int64_t)r * t->cols;
                float amax = 0.0f;
                for (int c = 0; c < t->cols; c++) amax = fmaxf(amax, fabsf(m->params[row + c]));
                float scale = amax > 0 ? amax / 127.0f : 1.0f;
                m->qscale[m->qrow_base[i] + r] = scale;
                for (int c = 0; c < t->cols; c++)
                    m->q8[row + c] = (int8_t)lrintf(m->params[row + c] / scale);
            }
        }
    } else {
        return andrea_set_error("unknown quantisation %d", kind);
    }
    m->quant = kind;
    return 0;
}

int andrea_model_fake_quantize(andrea_model *m, int kind) {
    if (andrea_model_quantize(m, kind)) return -1;
    for (int i = 0; i < m->layout.n; i++) {
        const andrea_tensor_info *t = &m->layout.t[i];
        if (!is_matrix(t)) continue;
        for (int64_t j = t->offset; j < t->offset + t->size; j++) {
            if (kind == ANDREA_QUANT_BF16) m->params[j] = andrea_bf16_to_f32(m->q16[j]);
            else if (kind == ANDREA_QUANT_INT8)
                m->params[j] = (float)m->q8[j] * m->qscale[m->qrow_base[i] + (j - t->offset) / t->cols];
        }
    }
    return andrea_model_quantize(m, ANDREA_QUANT_NONE);
}

/* out(n, N) = x(n, K) w(N, K)^T + bias, w read in the model's quantised format, on its
 * backend. */
void andrea_matvec_batch(const andrea_model *m, float *out, const float *x, const float *w,
                         const float *bias, int K, int N, int n) {
    int64_t base = w - m->params;
    const void *wq = m->quant == ANDREA_QUANT_BF16   ? (const void *)(m->q16 + base)
                     : m->quant == ANDREA_QUANT_INT8 ? (const void *)(m->q8 + base)
                                                     : (const void *)w;
    const float *scale = m->quant == ANDREA_QUANT_INT8 ? m->qscale + scale_index(m, base) : NULL;
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

void andrea_dequant_row(const andrea_model *m, float *out, const float *w_row, int K) {
    int64_t row = w_row - m->params;
    if (m->quant == ANDREA_QUANT_BF16)
        for (int k = 0; k < K; k++) out[k] = andrea_bf16_to_f32(m->q16[row + k]);
    else if (m->quant == ANDREA_QUANT_INT8)
        for (int k = 0; k < K; k++) out[k] = (float)m->q8[row + k] * m->qscale[scale_index(m, row)];
    else
        memcpy(out, w_row, sizeof(float) * (size_t)K);
}
