/*
 * quant.c - weight-only quantisation for generation. Batch-1 decoding reads
 * every weight once per token, so its speed is set by memory bandwidth:
 * bf16 weights halve the bytes (f16 too: an f16 file's own weights, each exact, so it
 * decodes as its f32 values would, at half the reads), int8 (one fp32 scale per row, absmax/127)
 * quarters them; q8_0 (ggml's: int8 with one f16 scale per 32 entries of a row) is the
 * int8 path for a q8_0 GGUF: its blocks requantize to themselves, so the file decodes at
 * its own precision with no rounding of ours (a per-row scale could not hold them).
 * Activations and accumulation stay fp32.
 * andrea_model_fake_quantize() rounds the fp32 weights to what a format can
 * represent, so `andrea eval --quant` measures the accuracy cost exactly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/fastmath.h"
#include "backend/backend.h"
#include "model/model.h"
#include "util/bigalloc.h"
#include "util/error.h"

static int is_matrix(const andrea_tensor_info *t) { return t->cols > 0; }

/* Entries of a matrix per scale: a row (int8) or a block of 32 (q8_0). */
static int64_t per_scale(const andrea_tensor_info *t, int kind) {
    return kind == ANDREA_QUANT_Q8_0 || kind == ANDREA_QUANT_Q4_0 ? 32 : t->cols;
}

/* Where the packed weights of parameter offset off start (q4_0: two to a byte). */
static void *packed_at(const andrea_model *m, int64_t off) {
    return m->quant == ANDREA_QUANT_Q4_0 ? (void *)((uint8_t *)m->q8 + off / 2)
                                         : (void *)(m->q8 + off);
}

/* The scale index of the matrix row starting at parameter offset off. */
static int64_t scale_index(const andrea_model *m, int64_t off) {
    for (int i = 0; i < m->layout.n; i++) {
        const andrea_tensor_info *t = &m->layout.t[i];
        if (off >= t->offset && off < t->offset + t->size)
            return m->qrow_base[i] + (off - t->offset) / (t->cols ? per_scale(t, m->quant) : 1);
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
    if (kind == ANDREA_QUANT_AUTO) kind = m->native_quant;
    if (kind == ANDREA_QUANT_NONE) return 0;
    int64_t n = m->layout.total;
    if (kind == ANDREA_QUANT_BF16 || kind == ANDREA_QUANT_F16) {
        m->q16 = be->ops.alloc(be, sizeof(uint16_t) * (size_t)n);
        if (!m->q16) return andrea_set_error("out of memory for %s weights", andrea_quant_name(kind));
        be->ops.quantize(be, m->q16, NULL, m->params, kind, (size_t)n, 1);
    } else if (kind == ANDREA_QUANT_INT8 || kind == ANDREA_QUANT_Q8_0 || kind == ANDREA_QUANT_Q4_0) {
        /* one scale per matrix row (per block), numbered across all matrices in file order */
        for (int i = 0; i < m->layout.n && kind != ANDREA_QUANT_INT8; i++)
            if (is_matrix(&m->layout.t[i]) && (m->layout.t[i].cols % 32 || m->layout.t[i].offset % 2))
                return andrea_set_error("%s weights need rows of whole blocks of 32: '%s' has "
                                        "%d columns", andrea_quant_name(kind), m->layout.t[i].name,
                                        m->layout.t[i].cols);
        int64_t rows = 0;
        m->qrow_base = malloc(sizeof(int64_t) * (size_t)m->layout.n);
        if (!m->qrow_base) return andrea_set_error("out of memory for int8 weights");
        for (int i = 0; i < m->layout.n; i++) {
            const andrea_tensor_info *t = &m->layout.t[i];
            m->qrow_base[i] = rows;
            if (is_matrix(t)) rows += t->size / per_scale(t, kind);
        }
        m->q8 = be->ops.alloc(be, kind == ANDREA_QUANT_Q4_0 ? (size_t)n / 2 + 1 : (size_t)n);
        m->qscale = be->ops.alloc(be, sizeof(float) * (size_t)(rows ? rows : 1));
        if (!m->q8 || !m->qscale) {
            free_copies(m);
            return andrea_set_error("out of memory for int8 weights");
        }
        m->quant = kind; /* packed_at's layout */
        for (int i = 0; i < m->layout.n; i++) {
            const andrea_tensor_info *t = &m->layout.t[i];
            if (is_matrix(t))
                be->ops.quantize(be, packed_at(m, t->offset), m->qscale + m->qrow_base[i],
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
    int packed = m->quant == ANDREA_QUANT_INT8 || m->quant == ANDREA_QUANT_Q8_0 ||
                 m->quant == ANDREA_QUANT_Q4_0;
    *scale = packed ? m->qscale + scale_index(m, base) : NULL;
    return m->q16 ? (const void *)(m->q16 + base)
           : packed                      ? (const void *)packed_at(m, base)
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

/* Whether a prompt's products run in the weights' blocks: q8_0 or q4_0 weights, not
 * turned off, and a backend with the product for them (AVX-512 VNNI on the CPU). */
int andrea_model_prefill_blocks(const andrea_model *m) {
    return !m->exact_prefill && (m->quant == ANDREA_QUANT_Q8_0 || m->quant == ANDREA_QUANT_Q4_0) &&
           m->be->ops.matmul_blocks && m->be->ops.matmul_blocks(m->be, NULL, NULL, NULL, m->quant,
                                                                NULL, NULL, NULL, 0, 32, 32) == 0;
}

void andrea_model_set_exact_prefill(andrea_model *m, int on) { m->exact_prefill = on ? 1 : 0; }

int andrea_matmul_blocks(const andrea_model *m, float *out, const float *inp, const float *w,
                         const float *bias, const float *resid, int M, int K, int N) {
    if (m->exact_prefill || (m->quant != ANDREA_QUANT_Q8_0 && m->quant != ANDREA_QUANT_Q4_0) ||
        !m->be->ops.matmul_blocks)
        return -1;
    const float *scale;
    const void *wq = quant_at(m, w - m->params, &scale);
    return m->be->ops.matmul_blocks(m->be, out, inp, wq, m->quant, scale, bias, resid, M, K, N);
}

int andrea_quant_parse(const char *s, int *out) {
    if (strcmp(s, "f32") == 0 || strcmp(s, "none") == 0) return *out = ANDREA_QUANT_NONE, 0;
    if (strcmp(s, "bf16") == 0) return *out = ANDREA_QUANT_BF16, 0;
    if (strcmp(s, "f16") == 0) return *out = ANDREA_QUANT_F16, 0;
    if (strcmp(s, "int8") == 0 || strcmp(s, "q8") == 0) return *out = ANDREA_QUANT_INT8, 0;
    if (strcmp(s, "q8_0") == 0) return *out = ANDREA_QUANT_Q8_0, 0;
    if (strcmp(s, "q4_0") == 0) return *out = ANDREA_QUANT_Q4_0, 0;
    return andrea_set_error("unknown weight format '%s' (expected f32, f16, bf16, int8, q8_0 or q4_0)", s);
}

int andrea_quant_parse_auto(const char *s, int *out) {
    if (strcmp(s, "auto") == 0) return *out = ANDREA_QUANT_AUTO, 0;
    if (andrea_quant_parse(s, out) == 0) return 0;
    return andrea_set_error("unknown weight format '%s' (expected auto, f32, f16, bf16, int8, "
                            "q8_0 or q4_0)", s);
}

const char *andrea_quant_name(int kind) {
    return kind == ANDREA_QUANT_BF16   ? "bf16"
           : kind == ANDREA_QUANT_F16  ? "f16"
           : kind == ANDREA_QUANT_INT8 ? "int8"
           : kind == ANDREA_QUANT_Q8_0 ? "q8_0"
           : kind == ANDREA_QUANT_Q4_0 ? "q4_0"
           : kind == ANDREA_QUANT_AUTO ? "auto"
                                       : "f32";
}

int andrea_model_native_quant(const andrea_model *m) { return m->native_quant; }

void andrea_gather_weight_rows(const andrea_model *m, float *out, const float *w,
                               const int32_t *ids, int n, int K) {
    const float *scale;
    const void *wq = quant_at(m, w - m->params, &scale);
    m->be->ops.gather_rows(m->be, out, wq, m->quant, scale, ids, n, K);
}
