/*
 * norm.c - LayerNorm and RMSNorm over the channel dimension, forward and backward.
 * Rows are independent, so forward and the input gradient run in parallel over
 * rows; the weight gradients are column sums, computed in parallel over column
 * chunks so each sum has one fixed order whatever the thread count. The row sums
 * are simd reductions: a fixed lane-wise order chosen at compile time (a serial float
 * chain waits 4 cycles per add: rmsnorm was 5% of a baby step). The loops (norm_body.h)
 * are compiled once per ISA, at its vector width with its FMAs, and picked like the
 * matmul's tiles (the engine's ISA, capped by ANDREA_ISA).
 */
#include <math.h>

#include "kernels/kernels.h"

#define COL_CHUNK 64

#define NORM_FN(name) name##_generic
#include "kernels/norm_body.h"
#undef NORM_FN

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NORM_X86 1
/* the ISA's target over the included functions (GCC's and clang's spelling) */
#ifdef __clang__
#define PUSH_AVX2 _Pragma("clang attribute push(__attribute__((target(\"avx2,fma\"))), apply_to = function)")
#define PUSH_AVX512 _Pragma("clang attribute push(__attribute__((target(\"avx512f,fma\"))), apply_to = function)")
#define POP_TARGET _Pragma("clang attribute pop")
#else
#define PUSH_AVX2 _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma\")")
#define PUSH_AVX512 _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f,fma\")")
#define POP_TARGET _Pragma("GCC pop_options")
#endif
PUSH_AVX2
#define NORM_FN(name) name##_avx2
#include "kernels/norm_body.h"
#undef NORM_FN
POP_TARGET
PUSH_AVX512
#define NORM_FN(name) name##_avx512
#include "kernels/norm_body.h"
#undef NORM_FN
POP_TARGET
#endif

/* The copy of `name` for isa (andrea_cpu_isa), called with args. */
#ifdef NORM_X86
#define NORM_DISPATCH(isa, name, ...)                                                         \
    do {                                                                                      \
        int isa_ = andrea_cpu_isa(isa);                                                       \
        if (isa_ == ANDREA_ISA_AVX512) name##_avx512(__VA_ARGS__);                            \
        else if (isa_ == ANDREA_ISA_AVX2) name##_avx2(__VA_ARGS__);                           \
        else name##_generic(__VA_ARGS__);                                                     \
    } while (0)
#else
#define NORM_DISPATCH(isa, name, ...) ((void)(isa), name##_generic(__VA_ARGS__))
#endif

void andrea_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                              const float *b, int N, int C, float eps) {
    NORM_DISPATCH(-1, layernorm_forward, out, mean, rstd, inp, w, b, N, C, eps);
}

void andrea_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *mean, const float *rstd, int N, int C) {
    NORM_DISPATCH(-1, layernorm_backward, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

void andrea_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                            float eps) {
    NORM_DISPATCH(-1, rmsnorm_forward, out, rstd, inp, w, N, C, eps);
}

void andrea_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                             const float *rstd, int N, int C) {
    NORM_DISPATCH(-1, rmsnorm_backward, dinp, dw, dout, inp, w, rstd, N, C);
}

void andrea_norm_forward_isa(int isa, int kind, float *out, float *mean, float *rstd,
                             const float *inp, const float *w, const float *b, int N, int C,
                             float eps) {
    if (kind == ANDREA_NORM_LAYER)
        NORM_DISPATCH(isa, layernorm_forward, out, mean, rstd, inp, w, b, N, C, eps);
    else
        NORM_DISPATCH(isa, rmsnorm_forward, out, rstd, inp, w, N, C, eps);
}

void andrea_norm_backward_isa(int isa, int kind, float *dinp, float *dw, float *db,
                              const float *dout, const float *inp, const float *w,
                              const float *mean, const float *rstd, int N, int C) {
    if (kind == ANDREA_NORM_LAYER)
        NORM_DISPATCH(isa, layernorm_backward, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    else
        NORM_DISPATCH(isa, rmsnorm_backward, dinp, dw, dout, inp, w, rstd, N, C);
}

void andrea_norm_forward(int kind, float *out, float *mean, float *rstd, const float *inp,
                         const float *w, const float *b, int N, int C, float eps) {
    andrea_norm_forward_isa(-1, kind, out, mean, rstd, inp, w, b, N, C, eps);
}

void andrea_norm_backward(int kind, float *dinp, float *dw, float *db, const float *dout,
                          const float *inp, const float *w, const float *mean, const float *rstd,
                          int N, int C) {
    andrea_norm_backward_isa(-1, kind, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
