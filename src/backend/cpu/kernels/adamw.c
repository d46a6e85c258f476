/* adamw.c - one AdamW step with bias correction and decoupled weight decay, and the
 * gradient norm that clipping needs. One copy of each loop per ISA (the same C, compiled
 * for that ISA's vectors and FMAs; isa_copies.h): at the baseline's 4 lanes the step's
 * square root and division kept AdamW above its memory bound (gpt2-124m at AVX2: 95 ms a
 * step, 77 with the AVX2 copy). Each copy computes every element alike, whatever its
 * position, so a ZeRO-1 slice gets the same bits as the whole vector. */
#include <math.h>

#include "backend/cpu/kernels/isa_copies.h"
#include "backend/cpu/kernels/kernels.h"

typedef struct {
    float *p, *m, *v;
    const float *g;
    float lr, b1, b2, eps, wd, c1, c2, gscale;
} adamw_job;

/* elements per call of a copy: long enough to hide the call, short enough to balance */
#define ADAMW_CHUNK 8192

/* the fields in locals and the arrays restrict: a store to m or v could otherwise change
 * *j, and the compiler would reload every field per element instead of vectorising */
#define DEFINE_ADAMW(SFX, ATTR)                                                               \
    ATTR static void adamw_##SFX(const adamw_job *j, long i0, long i1) {                      \
        float *restrict p = j->p, *restrict m = j->m, *restrict v = j->v;                     \
        const float *restrict g = j->g;                                                       \
        const float lr = j->lr, b1 = j->b1, b2 = j->b2, eps = j->eps, wd = j->wd;             \
        const float c1 = j->c1, c2 = j->c2, gscale = j->gscale;                               \
        for (long i = i0; i < i1; i++) {                                                      \
            float gi = g[i] * gscale;                                                         \
            float mi = b1 * m[i] + (1.0f - b1) * gi;                                          \
            float vi = b2 * v[i] + (1.0f - b2) * gi * gi;                                     \
            m[i] = mi;                                                                        \
            v[i] = vi;                                                                        \
            p[i] -= lr * ((mi * c1) / (sqrtf(vi * c2) + eps) + wd * p[i]);                    \
        }                                                                                     \
    }

/* the sum of g[0..n) squared in double, by a simd reduction of a fixed lane order */
#define DEFINE_SUMSQ(SFX, ATTR)                                                               \
    ATTR static double sumsq_##SFX(const float *g, size_t n) {                                \
        double s = 0.0;                                                                       \
        _Pragma("omp simd reduction(+ : s)")                                                  \
        for (size_t i = 0; i < n; i++) s += (double)g[i] * g[i];                              \
        return s;                                                                             \
    }

ANDREA_DEFINE_ISA_COPIES(DEFINE_ADAMW)
ANDREA_DEFINE_ISA_COPIES(DEFINE_SUMSQ)

void andrea_adamw_update_isa(int isa, float *p, const float *g, float *m, float *v, size_t n,
                             float lr, float b1, float b2, float eps, float wd, int t,
                             float gscale) {
    /* Bias corrections in double: 1 - b2^t is tiny early on and loses digits in float. */
    adamw_job j = {p, m, v, g, lr, b1, b2, eps, wd, (float)(1.0 / (1.0 - pow(b1, t))),
                   (float)(1.0 / (1.0 - pow(b2, t))), gscale};
    void (*copy)(const adamw_job *, long, long) = ANDREA_ISA_PICK(andrea_cpu_isa(isa), adamw);
    long N = (long)n, chunks = (N + ADAMW_CHUNK - 1) / ADAMW_CHUNK;
#pragma omp parallel for schedule(static) if (N >= (1L << 14))
    for (long c = 0; c < chunks; c++)
        copy(&j, c * ADAMW_CHUNK, (c + 1) * ADAMW_CHUNK < N ? (c + 1) * ADAMW_CHUNK : N);
}

void andrea_adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                         float b2, float eps, float wd, int t, float gscale) {
    andrea_adamw_update_isa(-1, p, g, m, v, n, lr, b1, b2, eps, wd, t, gscale);
}

#define SUMSQ_PARTS 256

/* 256 parts whose bounds depend on n alone, each summed in double, then added in part
 * order: the same bits for any thread count, and no allocation */
double andrea_grad_sum_squares_isa(int isa, const float *g, size_t n) {
    double (*copy)(const float *, size_t) = ANDREA_ISA_PICK(andrea_cpu_isa(isa), sumsq);
    size_t part = (n + SUMSQ_PARTS - 1) / SUMSQ_PARTS;
    double partial[SUMSQ_PARTS];
#pragma omp parallel for schedule(static) if (n >= (1u << 18))
    for (int c = 0; c < SUMSQ_PARTS; c++) {
        size_t i0 = (size_t)c * part < n ? (size_t)c * part : n;
        size_t i1 = i0 + part < n ? i0 + part : n;
        partial[c] = copy(g + i0, i1 - i0);
    }
    double total = 0.0;
    for (int c = 0; c < SUMSQ_PARTS; c++) total += partial[c];
    return total;
}

double andrea_grad_sum_squares(const float *g, size_t n) { return andrea_grad_sum_squares_isa(-1, g, n); }
