/*
 * embedding.c - the transformer's input: x[b, t] = wte[token] + wpe[t], and its
 * gradient, a scatter-add into the rows the tokens picked.
 */
#include "backend/cpu/kernels/kernels.h"

void andrea_embedding_forward(float *out, const int32_t *tokens, const float *wte,
                              const float *wpe, int B, int T, int C) {
    int BT = B * T;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < BT; i++) {
        const float *te = wte + (long)tokens[i] * C, *pe = wpe + (long)(i % T) * C;
        float *x = out + (long)i * C;
        for (int k = 0; k < C; k++) x[k] = te[k] + pe[k];
    }
}

void andrea_embedding_backward(float *dwte, float *dwpe, const float *dout,
                               const int32_t *tokens, int B, int T, int C) {
    int BT = B * T;
    /* parallel over channel chunks, positions in order within each: a token repeated in
     * the batch adds into the same row without a race, in a fixed order */
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 32) {
        int c1 = c0 + 32 < C ? c0 + 32 : C;
        for (int i = 0; i < BT; i++) {
            const float *d = dout + (long)i * C;
            float *te = dwte + (long)tokens[i] * C, *pe = dwpe + (long)(i % T) * C;
            for (int k = c0; k < c1; k++) {
                te[k] += d[k];
                pe[k] += d[k];
            }
        }
    }
}
