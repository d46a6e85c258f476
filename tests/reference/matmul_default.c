/*
 * matmul_default.c - the products under the default engine, in the argument order the
 * kernel tests were written in: andrea_mm_* with a NULL engine, every gradient added to
 * (dw_init 0). Only tests call these, so they live here and not in libandrea.
 */
#include "reference/reference.h"

void andrea_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int M,
                           int K, int N) {
    andrea_mm_forward(NULL, out, inp, w, bias, M, K, N);
}

void andrea_matmul_forward_residual(float *out, const float *inp, const float *w,
                                    const float *bias, const float *resid, int M, int K, int N) {
    andrea_mm_forward_residual(NULL, out, inp, w, bias, resid, M, K, N);
}

void andrea_matmul_forward_act(float *pre, float *post, const float *inp, const float *w,
                               const float *bias, int M, int K, int N, int act) {
    andrea_mm_forward_act(NULL, pre, post, inp, w, bias, M, K, N, act);
}

void andrea_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout,
                            const float *inp, const float *w, int M, int K, int N) {
    andrea_mm_backward(NULL, dinp, dw, dbias, dout, inp, w, M, K, N, 0);
}

void andrea_matmul_backward_act(float *dpre, float *dw, float *dbias, const float *dout,
                                const float *post, const float *w, const float *pre, int M, int K,
                                int N, int act) {
    andrea_mm_backward_act(NULL, dpre, dw, dbias, dout, post, w, pre, M, K, N, act, 0);
}
