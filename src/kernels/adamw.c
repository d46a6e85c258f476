/* adamw.c - one AdamW step with bias correction and decoupled weight decay, and the
 * gradient norm that clipping needs. One copy of each loop per ISA (the same C, compiled
 * for that ISA's vectors and FMAs): at the baseline's 4 lanes the step's square root and
 * division kept AdamW above its memory bound (gpt2-124m at AVX2: 95 ms a step, 77 with
 * the AVX2 copy). Each copy computes every element alike, whatever its position, so a
 * ZeRO-1 slice gets the same bits as the whole vector. */
#include <math.h>

#include "kernels/kernels.h"

#define DEFINE_ADAMW(SFX, ATTR)                                                               \
    ATTR static void adamw_##SFX(float *p, const float *g, float *m, float *v, long N, float lr, \
                                 float b1, float b2, float eps, float wd, float c1, float c2,   \
                                 float gscale) {                                              \
        _Pragma("omp parallel for schedule(static) if (N >= (1L << 14))")                     \
        for (long i = 0; i < N; i++) {                                                        \
            float gi = g[i] * gscale;                                                         \
            float mi = b1 * m[i] + (1.0f - b1) * gi;                                          \
            float vi = b2 * v[i] + (1.0f - b2) * gi * gi;                                     \
            m[i] = mi;                                                                        \
            v[i] = vi;                                                                        \
            p[i] -= lr * ((mi * c1) / (sqrtf(vi * c2) + eps) + wd * p[i]);                    \
        }                                                                                     \
    }

#define SUMSQ_PARTS 256

/* 256 parts whose bounds depend on n alone, each summed in double, then added in part
 * order: the same bits for any thread count, and no allocation */
#define DEFINE_SUMSQ(SFX, ATTR)                                                               \
    ATTR static double sumsq_##SFX(const float *g, size_t n) {                                \
        size_t part = (n + SUMSQ_PARTS - 1) / SUMSQ_PARTS;                                    \
        double partial[SUMSQ_PARTS];                                                          \
        _Pragma("omp parallel for schedule(static) if (n >= (1u << 18))")                     \
        for (int c = 0; c < SUMSQ_PARTS; c++) {                                               \
            size_t i0 = (size_t)c * part < n ? (size_t)c * part : n;                          \
            size_t i1 = i0 + part < n ? i0 + part : n;                                        \
            double s = 0.0;                                                                   \
            _Pragma("omp simd reduction(+ : s)")                                              \
            for (size_t i = i0; i < i1; i++) s += (double)g[i] * g[i];                        \
            partial[c] = s;                                                                   \
        }                                                                                     \
        double total = 0.0;                                                                   \
        for (int c = 0; c < SUMSQ_PARTS; c++) total += partial[c];                            \
        return total;                                                                         \
    }

DEFINE_ADAMW(generic, )
DEFINE_SUMSQ(generic, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define X86_COPIES 1
DEFINE_ADAMW(avx2, __attribute__((target("avx2,fma"))))
DEFINE_SUMSQ(avx2, __attribute__((target("avx2,fma"))))
DEFINE_ADAMW(avx512, __attribute__((target("avx512f,fma"))))
DEFINE_SUMSQ(avx512, __attribute__((target("avx512f,fma"))))
#endif

void andrea_adamw_update_isa(int isa, float *p, const float *g, float *m, float *v, size_t n,
                             float lr, float b1, float b2, float eps, float wd, int t,
                             float gscale) {
    /* Bias corrections in double: 1 - b2^t is tiny early on and loses digits in float. */
    float c1 = (float)(1.0 / (1.0 - pow(b1, t)));
    float c2 = (float)(1.0 / (1.0 - pow(b2, t)));
    long N = (long)n;
    isa = andrea_cpu_isa(isa);
#ifdef X86_COPIES
    if (isa == ANDREA_ISA_AVX512)
        return adamw_avx512(p, g, m, v, N, lr, b1, b2, eps, wd, c1, c2, gscale);
    if (isa == ANDREA_ISA_AVX2) return adamw_avx2(p, g, m, v, N, lr, b1, b2, eps, wd, c1, c2, gscale);
#endif
    adamw_generic(p, g, m, v, N, lr, b1, b2, eps, wd, c1, c2, gscale);
}

void andrea_adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                         float b2, float eps, float wd, int t, float gscale) {
    andrea_adamw_update_isa(-1, p, g, m, v, n, lr, b1, b2, eps, wd, t, gscale);
}

double andrea_grad_sum_squares_isa(int isa, const float *g, size_t n) {
    isa = andrea_cpu_isa(isa);
#ifdef X86_COPIES
    if (isa == ANDREA_ISA_AVX512) return sumsq_avx512(g, n);
    if (isa == ANDREA_ISA_AVX2) return sumsq_avx2(g, n);
#endif
    return sumsq_generic(g, n);
}

double andrea_grad_sum_squares(const float *g, size_t n) { return andrea_grad_sum_squares_isa(-1, g, n); }
