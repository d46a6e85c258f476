/*
 * norm.c - LayerNorm and RMSNorm over the channel dimension, forward and backward.
 * Rows are independent, so forward and the input gradient run in parallel over
 * rows; the weight gradients are column sums, computed in parallel over column
 * chunks so each sum has one fixed order whatever the thread count. The row sums
 * are simd reductions: a fixed lane-wise order chosen at compile time (a serial float
 * chain waits 4 cycles per add: rmsnorm was 5% of a baby step). The loops (norm_body.h)
 * are compiled once per ISA, at its vector width with its FMAs, and picked like the
 * matmul's tiles (the engine's ISA, capped by ANDREA_ISA); the parallel loops stay here,
 * out of the copies (isa_copies.h).
 */
#include <math.h>

#include "backend/cpu/kernels/isa_copies.h"
#include "backend/cpu/kernels/kernels.h"

#define COL_CHUNK 64
#define ROW_BLOCK 8

/* Every operand of one norm call; the ranges of rows or columns come separately. */
typedef struct {
    float *out, *mean, *rstd, *dinp, *dw, *db;
    const float *inp, *w, *b, *dout;
    const float *saved_mean, *saved_rstd; /* backward: what forward wrote to mean, rstd */
    int N, C;
    float eps;
} norm_job;
typedef void (*norm_range_fn)(const norm_job *j, int lo, int hi);

#define NORM_FN(name) name##_generic
#include "backend/cpu/kernels/norm_body.h"
#undef NORM_FN
#ifdef ANDREA_X86_COPIES
ANDREA_PUSH_AVX2
#define NORM_FN(name) name##_avx2
#include "backend/cpu/kernels/norm_body.h"
#undef NORM_FN
ANDREA_POP_TARGET
ANDREA_PUSH_AVX512
#define NORM_FN(name) name##_avx512
#include "backend/cpu/kernels/norm_body.h"
#undef NORM_FN
ANDREA_POP_TARGET
#endif

/* fn over [0, n) in blocks, in parallel: rows are independent, and each column block is
 * summed over the rows by one thread in row order */
static void norm_run(norm_range_fn fn, const norm_job *j, int n, int block) {
#pragma omp parallel for schedule(static) if ((long)j->N * j->C >= (1L << 14))
    for (int lo = 0; lo < n; lo += block) fn(j, lo, lo + block < n ? lo + block : n);
}

static void norm_forward(int isa, int kind, const norm_job *j) {
    isa = andrea_cpu_isa(isa);
    if (kind == ANDREA_NORM_LAYER) norm_run(ANDREA_ISA_PICK(isa, layernorm_forward_rows), j, j->N, ROW_BLOCK);
    else norm_run(ANDREA_ISA_PICK(isa, rmsnorm_forward_rows), j, j->N, ROW_BLOCK);
}

static void norm_backward(int isa, int kind, const norm_job *j) {
    isa = andrea_cpu_isa(isa);
    int layer = kind == ANDREA_NORM_LAYER;
    if (j->dinp)
        norm_run(layer ? ANDREA_ISA_PICK(isa, layernorm_dinp_rows) : ANDREA_ISA_PICK(isa, rmsnorm_dinp_rows),
                 j, j->N, ROW_BLOCK);
    if (j->dw || (layer && j->db))
        norm_run(layer ? ANDREA_ISA_PICK(isa, layernorm_dw_cols) : ANDREA_ISA_PICK(isa, rmsnorm_dw_cols),
                 j, j->C, COL_CHUNK);
}

void andrea_norm_forward_isa(int isa, int kind, float *out, float *mean, float *rstd,
                             const float *inp, const float *w, const float *b, int N, int C,
                             float eps) {
    norm_job j = {.out = out, .mean = mean, .rstd = rstd, .inp = inp, .w = w, .b = b,
                  .N = N, .C = C, .eps = eps};
    norm_forward(isa, kind, &j);
}

void andrea_norm_backward_isa(int isa, int kind, float *dinp, float *dw, float *db,
                              const float *dout, const float *inp, const float *w,
                              const float *mean, const float *rstd, int N, int C) {
    norm_job j = {.dinp = dinp, .dw = dw, .db = db, .dout = dout, .inp = inp, .w = w,
                  .saved_mean = mean, .saved_rstd = rstd, .N = N, .C = C};
    norm_backward(isa, kind, &j);
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

void andrea_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                              const float *b, int N, int C, float eps) {
    andrea_norm_forward_isa(-1, ANDREA_NORM_LAYER, out, mean, rstd, inp, w, b, N, C, eps);
}

void andrea_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                               const float *w, const float *mean, const float *rstd, int N, int C) {
    andrea_norm_backward_isa(-1, ANDREA_NORM_LAYER, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

void andrea_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                            float eps) {
    andrea_norm_forward_isa(-1, ANDREA_NORM_RMS, out, NULL, rstd, inp, w, NULL, N, C, eps);
}

void andrea_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                             const float *rstd, int N, int C) {
    andrea_norm_backward_isa(-1, ANDREA_NORM_RMS, dinp, dw, NULL, dout, inp, w, NULL, rstd, N, C);
}
