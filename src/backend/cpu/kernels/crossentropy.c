/* crossentropy.c - softmax + negative log-likelihood fused in one pass per row, and its
 * gradient (computed in place over the probabilities). */
#include <math.h>

#include "backend/cpu/kernels/fastmath.h"
#include "backend/cpu/kernels/kernels.h"

float andrea_crossentropy_forward(float *probs, float *losses, const int32_t *targets, int N, int V,
                           int ld, int *n_valid) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        float *p = probs + (long)i * ld;
        float maxv = -INFINITY;
        for (int v = 0; v < V; v++)
            if (p[v] > maxv) maxv = p[v];
        int t = targets[i];
        float xt = t >= 0 ? p[t] : 0.0f;
        /* andrea_expf vectorises where libm's expf is a call per logit (V = 50257 for
         * GPT-2's vocabulary); relative error < 2e-7 */
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int v = 0; v < V; v++) {
            p[v] = andrea_expf(p[v] - maxv);
            sum += p[v];
        }
        float inv = 1.0f / sum;
        for (int v = 0; v < V; v++) p[v] *= inv;
        /* -log softmax(x)_t = log(sum exp(x - max)) - (x_t - max): finite even when p_t underflows */
        losses[i] = t >= 0 ? logf(sum) - (xt - maxv) : 0.0f;
    }
    double total = 0.0;
    int count = 0;
    for (int i = 0; i < N; i++)
        if (targets[i] >= 0) {
            total += losses[i];
            count++;
        }
    if (n_valid) *n_valid = count;
    return count ? (float)(total / count) : 0.0f;
}

void andrea_crossentropy_backward(float *dlogits, const int32_t *targets, int N, int V, int ld,
                           float dloss) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        float *p = dlogits + (long)i * ld;
        int t = targets[i];
        for (int v = V; v < ld; v++) p[v] = 0.0f; /* a padded head's columns */
        if (t < 0) {
            for (int v = 0; v < V; v++) p[v] = 0.0f;
            continue;
        }
        for (int v = 0; v < V; v++) p[v] *= dloss;
        p[t] -= dloss;
    }
}
