/* adamw.c - one AdamW step with bias correction and decoupled weight decay. */
#include <math.h>

#include "kernels/kernels.h"

void adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                  float b2, float eps, float wd, int t) {
    /* Bias corrections in double: 1 - b2^t is tiny early on and loses digits in float. */
    float c1 = (float)(1.0 / (1.0 - pow(b1, t)));
    float c2 = (float)(1.0 / (1.0 - pow(b2, t)));
    long N = (long)n;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) {
        float gi = g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= lr * ((mi * c1) / (sqrtf(vi * c2) + eps) + wd * p[i]);
    }
}
