/*
 * buffer.c - whole-buffer passes of the CPU backend: strided row copies, fills from the
 * engine's RNG, the count of non-finite values, weight quantisation (bf16, int8 with a
 * per-row scale) and the row gather that decoding's (quantised) embeddings read. The
 * quantisation here is the one the model always had (quant.c before the backends owned
 * memory): bf16 round-to-nearest-even, int8 absmax/127 rounded with lrintf.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/kernels/fastmath.h"
#include "backend/cpu/kernels/kernels.h"

void andrea_copy_rows(float *dst, size_t ld_dst, const float *src, size_t ld_src, size_t n,
                      size_t rows) {
    if (!n) return;
    for (size_t r = 0; r < rows; r++) memcpy(dst + r * ld_dst, src + r * ld_src, sizeof(float) * n);
}

void andrea_fill(float *p, size_t n, int kind, float a, float b, andrea_rng *rng) {
    if (kind == ANDREA_FILL_CONST) {
        for (size_t i = 0; i < n; i++) p[i] = a;
    } else if (kind == ANDREA_FILL_NORMAL) {
        /* b * N(0,1) with no + 0: the bits of the initialisation before fill existed */
        for (size_t i = 0; i < n; i++) {
            float v = b * andrea_rng_normal(rng);
            p[i] = a != 0.0f ? v + a : v;
        }
    } else {
        for (size_t i = 0; i < n; i++) p[i] = a + (b - a) * andrea_rng_uniform(rng);
    }
}

uint64_t andrea_count_nonfinite(const float *x, size_t n, int nonneg) {
    uint64_t bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static) if (n >= (1u << 16))
    for (size_t i = 0; i < n; i++) bad += !isfinite(x[i]) || (nonneg && x[i] < 0);
    return bad;
}

float andrea_max_abs(const float *x, size_t n) {
    float mx = 0.0f;
#pragma omp parallel for reduction(max : mx) schedule(static) if (n >= (1u << 18))
    for (size_t i = 0; i < n; i++) {
        float a = isnan(x[i]) ? INFINITY : fabsf(x[i]);
        if (a > mx) mx = a;
    }
    return mx;
}

void andrea_quantize_rows(void *dst, float *scale, const float *src, int fmt, size_t rows,
                          size_t cols) {
    if (fmt == ANDREA_QUANT_BF16 || fmt == ANDREA_QUANT_F16) {
        uint16_t *q = dst;
        int bf = fmt == ANDREA_QUANT_BF16;
#pragma omp parallel for schedule(static) if (rows * cols >= (1u << 16))
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++)
                q[r * cols + c] = bf ? andrea_bf16_from_f32(src[r * cols + c]) : andrea_f32_to_f16(src[r * cols + c]);
        return;
    }
    int8_t *q = dst;
    if (fmt == ANDREA_QUANT_Q8_0) {
        size_t nb = rows * cols / 32;
#pragma omp parallel for schedule(static) if (nb >= (1u << 11))
        for (size_t b = 0; b < nb; b++) scale[b] = andrea_q8_0_block(src + 32 * b, q + 32 * b);
        return;
    }
    if (fmt == ANDREA_QUANT_Q4_0) {
        size_t nb = rows * cols / 32;
        uint8_t *qs = dst;
#pragma omp parallel for schedule(static) if (nb >= (1u << 11))
        for (size_t b = 0; b < nb; b++) scale[b] = andrea_q4_0_block(src + 32 * b, qs + 16 * b);
        return;
    }
#pragma omp parallel for schedule(static) if (rows * cols >= (1u << 16))
    for (size_t r = 0; r < rows; r++) {
        const float *x = src + r * cols;
        float amax = 0.0f;
        for (size_t c = 0; c < cols; c++) amax = fmaxf(amax, fabsf(x[c]));
        float s = amax > 0 ? amax / 127.0f : 1.0f;
        scale[r] = s;
        for (size_t c = 0; c < cols; c++) q[r * cols + c] = (int8_t)lrintf(x[c] / s);
    }
}

float andrea_q8_0_block(const float *x, int8_t *q) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int finite = isfinite(d);
    for (int j = 0; j < 32; j++) { /* a NaN or Inf (a hostile file's) must not reach the cast */
        float v = x[j] * id;
        finite &= isfinite(v);
        q[j] = isfinite(v) ? (int8_t)roundf(v) : 0;
    }
    return finite ? andrea_f16_to_f32(andrea_f32_to_f16(d)) : NAN; /* NaN: no such block */
}

float andrea_q4_0_block(const float *x, uint8_t *qs) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++)
        if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
    float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int finite = isfinite(d);
    for (int j = 0; j < 16; j++) { /* as q8_0: a NaN or Inf must not reach the cast */
        float a = x[j] * id + 8.5f, b = x[16 + j] * id + 8.5f;
        finite &= isfinite(a) && isfinite(b);
        int lo = isfinite(a) ? (int)(int8_t)a : 8, hi = isfinite(b) ? (int)(int8_t)b : 8;
        qs[j] = (uint8_t)((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
    }
    return finite ? andrea_f16_to_f32(andrea_f32_to_f16(d)) : NAN; /* NaN: no such block */
}

void andrea_gather_rows(float *out, const void *w, int fmt, const float *scale,
                        const int32_t *ids, int n, int K) {
    for (int i = 0; i < n; i++) {
        size_t r = ids ? (size_t)ids[i] : (size_t)i;
        float *o = out + (size_t)i * K;
        if (fmt == ANDREA_QUANT_BF16) {
            const uint16_t *q = (const uint16_t *)w + r * K;
            for (int k = 0; k < K; k++) o[k] = andrea_bf16_to_f32(q[k]);
        } else if (fmt == ANDREA_QUANT_F16) {
            const uint16_t *q = (const uint16_t *)w + r * K;
            for (int k = 0; k < K; k++) o[k] = andrea_f16_to_f32(q[k]);
        } else if (fmt == ANDREA_QUANT_INT8) {
            const int8_t *q = (const int8_t *)w + r * K;
            for (int k = 0; k < K; k++) o[k] = (float)q[k] * scale[r];
        } else if (fmt == ANDREA_QUANT_Q8_0) {
            const int8_t *q = (const int8_t *)w + r * K;
            const float *d = scale + r * (size_t)K / 32;
            for (int k = 0; k < K; k++) o[k] = (float)q[k] * d[k >> 5];
        } else if (fmt == ANDREA_QUANT_Q4_0) {
            const uint8_t *qs = (const uint8_t *)w + r * K / 2;
            const float *d = scale + r * (size_t)K / 32;
            for (int k = 0; k < K; k++) {
                int b = k >> 5, j = k & 31, byte = qs[16 * b + (j & 15)];
                o[k] = (float)((j < 16 ? byte & 15 : byte >> 4) - 8) * d[b];
            }
        } else {
            memcpy(o, (const float *)w + r * K, sizeof(float) * (size_t)K);
        }
    }
}
