/*
 * reference.c - the plain twins of the fast kernels (see kernels.h for every
 * contract). Straight loops written from the maths, every sum in double, no
 * blocking, no threads: slow on purpose, so that they are easy to believe.
 * The tests compare the fast kernels against these, and these against
 * finite differences.
 */
#include "reference/reference.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "andrea.h"
#include "backend/cpu/kernels/fastmath.h"

/* ---- matmul ------------------------------------------------------------------ */

void andrea_ref_matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                        int M, int K, int N) {
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            double s = bias ? (double)bias[n] : 0.0;
            for (int k = 0; k < K; k++) s += (double)inp[(size_t)m * K + k] * w[(size_t)n * K + k];
            out[(size_t)m * N + n] = (float)s;
        }
    }
}

void andrea_ref_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout,
                         const float *inp, const float *w, int M, int K, int N) {
    if (dinp) { /* dinp[m][k] += sum_n dout[m][n] w[n][k] */
        for (int m = 0; m < M; m++) {
            for (int k = 0; k < K; k++) {
                double s = 0.0;
                for (int n = 0; n < N; n++) s += (double)dout[(size_t)m * N + n] * w[(size_t)n * K + k];
                dinp[(size_t)m * K + k] += (float)s;
            }
        }
    }
    if (dw) { /* dw[n][k] += sum_m dout[m][n] inp[m][k] */
        for (int n = 0; n < N; n++) {
            for (int k = 0; k < K; k++) {
                double s = 0.0;
                for (int m = 0; m < M; m++) s += (double)dout[(size_t)m * N + n] * inp[(size_t)m * K + k];
                dw[(size_t)n * K + k] += (float)s;
            }
        }
    }
    if (dbias) {
        for (int n = 0; n < N; n++) {
            double s = 0.0;
            for (int m = 0; m < M; m++) s += dout[(size_t)m * N + n];
            dbias[n] += (float)s;
        }
    }
}

/* ---- normalisation --------------------------------------------------------------- */

void andrea_ref_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                           const float *w, const float *b, int N, int C, float eps) {
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        double mu = 0.0, var = 0.0;
        for (int c = 0; c < C; c++) mu += x[c];
        mu /= C;
        for (int c = 0; c < C; c++) var += ((double)x[c] - mu) * ((double)x[c] - mu);
        var /= C; /* biased: divide by C, not C - 1 */
        double rs = 1.0 / sqrt(var + (double)eps);
        for (int c = 0; c < C; c++) {
            double y = ((double)x[c] - mu) * rs * w[c] + (b ? (double)b[c] : 0.0);
            out[(size_t)i * C + c] = (float)y;
        }
        mean[i] = (float)mu;
        rstd[i] = (float)rs;
    }
}

/* With xhat = (x - mean) rstd and g = dout * w:
 *   dx = rstd (g - mean(g) - xhat mean(g xhat)),  dw += dout xhat,  db += dout. */
void andrea_ref_layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
                            const float *inp, const float *w, const float *mean,
                            const float *rstd, int N, int C) {
    double *sw = calloc((size_t)C, sizeof(double));
    double *sb = calloc((size_t)C, sizeof(double));
    assert(sw && sb);
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        double mu = mean[i], rs = rstd[i];
        double g_mean = 0.0, gx_mean = 0.0;
        for (int c = 0; c < C; c++) {
            double xhat = ((double)x[c] - mu) * rs;
            double g = (double)dy[c] * w[c];
            g_mean += g;
            gx_mean += g * xhat;
            sw[c] += (double)dy[c] * xhat;
            sb[c] += dy[c];
        }
        g_mean /= C;
        gx_mean /= C;
        if (dinp) {
            for (int c = 0; c < C; c++) {
                double xhat = ((double)x[c] - mu) * rs;
                double g = (double)dy[c] * w[c];
                dinp[(size_t)i * C + c] += (float)(rs * (g - g_mean - xhat * gx_mean));
            }
        }
    }
    for (int c = 0; c < C; c++) {
        if (dw) dw[c] += (float)sw[c];
        if (db) db[c] += (float)sb[c];
    }
    free(sw);
    free(sb);
}

void andrea_ref_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *w,
                         int N, int C, float eps) {
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        double ms = 0.0;
        for (int c = 0; c < C; c++) ms += (double)x[c] * x[c];
        ms /= C;
        double rs = 1.0 / sqrt(ms + (double)eps);
        for (int c = 0; c < C; c++) out[(size_t)i * C + c] = (float)((double)x[c] * rs * w[c]);
        rstd[i] = (float)rs;
    }
}

/* y = x r w with r = (mean(x^2) + eps)^(-1/2), so dr/dx_c = -r^3 x_c / C and, with g = dout w,
 *   dx = r g - r^3 x mean(g x),  dw += dout x r. */
void andrea_ref_rmsnorm_backward(float *dinp, float *dw, const float *dout, const float *inp,
                          const float *w, const float *rstd, int N, int C) {
    double *sw = calloc((size_t)C, sizeof(double));
    assert(sw);
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        double rs = rstd[i];
        double gx_mean = 0.0;
        for (int c = 0; c < C; c++) {
            gx_mean += (double)dy[c] * w[c] * x[c];
            sw[c] += (double)dy[c] * x[c] * rs;
        }
        gx_mean /= C;
        if (dinp) {
            for (int c = 0; c < C; c++) {
                double g = (double)dy[c] * w[c];
                dinp[(size_t)i * C + c] += (float)(rs * g - rs * rs * rs * x[c] * gx_mean);
            }
        }
    }
    if (dw)
        for (int c = 0; c < C; c++) dw[c] += (float)sw[c];
    free(sw);
}

/* ---- activations ------------------------------------------------------------------ */

#define GELU_K 0.7978845608028654 /* sqrt(2 / pi) */
#define GELU_A 0.044715

static double act_f(double x, int act) {
    switch (act) {
    case ANDREA_ACT_GELU: return 0.5 * x * (1.0 + tanh(GELU_K * (x + GELU_A * x * x * x)));
    case ANDREA_ACT_RELU: return x > 0.0 ? x : 0.0;
    case ANDREA_ACT_RELU2: return x > 0.0 ? x * x : 0.0;
    default: assert(!"unknown activation"); return 0.0;
    }
}

static double act_df(double x, int act) {
    switch (act) {
    case ANDREA_ACT_GELU: {
        double t = tanh(GELU_K * (x + GELU_A * x * x * x));
        double du = GELU_K * (1.0 + 3.0 * GELU_A * x * x);
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
    }
    case ANDREA_ACT_RELU: return x > 0.0 ? 1.0 : 0.0;
    case ANDREA_ACT_RELU2: return x > 0.0 ? 2.0 * x : 0.0;
    default: assert(!"unknown activation"); return 0.0;
    }
}

void andrea_ref_activation_forward(float *out, const float *inp, size_t n, int act) {
    for (size_t i = 0; i < n; i++) out[i] = (float)act_f(inp[i], act);
}

void andrea_ref_activation_backward(float *dinp, const float *inp, const float *dout, size_t n,
                             int act) {
    for (size_t i = 0; i < n; i++) dinp[i] += (float)(act_df(inp[i], act) * dout[i]);
}

/* ---- causal multi-head attention --------------------------------------------------- */

void andrea_ref_attention_forward(float *out, float *att, float *preatt, const float *qkv,
                           int B, int T, int C, int NH) {
    int HS = C / NH;
    /* Dot products of random d-dimensional vectors grow like sqrt(d); scaling by
     * 1/sqrt(HS) keeps the scores O(1) so the softmax is not saturated. The same
     * float constant as the fast kernel (one multiply per score). */
    double scale = (double)(1.0f / sqrtf((float)HS));
    double *s = malloc((size_t)T * sizeof(double));
    assert(s);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            float *A = att + ((size_t)b * NH + h) * T * T;
            float *P = preatt ? preatt + ((size_t)b * NH + h) * T * T : NULL;
            for (int i = 0; i < T; i++) {
                const float *q = qkv + ((size_t)b * T + i) * 3 * C + h * HS;
                double mx = -INFINITY;
                for (int j = 0; j <= i; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * HS;
                    double d = 0.0;
                    for (int c = 0; c < HS; c++) d += (double)q[c] * k[c];
                    s[j] = d * scale;
                    if (s[j] > mx) mx = s[j];
                }
                /* Subtracting the row max leaves the softmax unchanged and keeps exp <= 1. */
                double sum = 0.0;
                for (int j = 0; j <= i; j++) sum += exp(s[j] - mx);
                for (int j = 0; j < T; j++) {
                    A[(size_t)i * T + j] = j <= i ? (float)(exp(s[j] - mx) / sum) : 0.0f;
                    if (P) P[(size_t)i * T + j] = j <= i ? (float)s[j] : -INFINITY;
                }
                float *o = out + ((size_t)b * T + i) * C + h * HS;
                for (int c = 0; c < HS; c++) {
                    double acc = 0.0;
                    for (int j = 0; j <= i; j++) {
                        const float *v = qkv + ((size_t)b * T + j) * 3 * C + 2 * C + h * HS;
                        acc += (double)A[(size_t)i * T + j] * v[c];
                    }
                    o[c] = (float)acc;
                }
            }
        }
    }
    free(s);
}

/* For row i of one head (A = att row, dA_j = dout_i . v_j):
 *   dv_j += A_j dout_i
 *   dS_j  = A_j (dA_j - sum_k A_k dA_k)          (softmax backward)
 *   dq_i += scale sum_j dS_j k_j,   dk_j += scale dS_j q_i */
void andrea_ref_attention_backward(float *dqkv, const float *dout, const float *qkv,
                            const float *att, int B, int T, int C, int NH) {
    int HS = C / NH;
    double scale = (double)(1.0f / sqrtf((float)HS));
    size_t n = (size_t)B * T * 3 * C;
    double *g = calloc(n, sizeof(double));     /* the gradient, summed in double */
    double *dS = malloc((size_t)T * sizeof(double));
    assert(g && dS);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *A = att + ((size_t)b * NH + h) * T * T;
            for (int i = 0; i < T; i++) {
                const float *q = qkv + ((size_t)b * T + i) * 3 * C + h * HS;
                const float *dy = dout + ((size_t)b * T + i) * C + h * HS;
                double *gq = g + ((size_t)b * T + i) * 3 * C + h * HS;
                double dot = 0.0;
                for (int j = 0; j <= i; j++) {
                    const float *v = qkv + ((size_t)b * T + j) * 3 * C + 2 * C + h * HS;
                    double *gv = g + ((size_t)b * T + j) * 3 * C + 2 * C + h * HS;
                    double a = A[(size_t)i * T + j], dA = 0.0;
                    for (int c = 0; c < HS; c++) {
                        dA += (double)dy[c] * v[c];
                        gv[c] += a * dy[c];
                    }
                    dS[j] = dA;
                    dot += a * dA;
                }
                for (int j = 0; j <= i; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * HS;
                    double *gk = g + ((size_t)b * T + j) * 3 * C + C + h * HS;
                    double ds = (double)A[(size_t)i * T + j] * (dS[j] - dot) * scale;
                    for (int c = 0; c < HS; c++) {
                        gq[c] += ds * k[c];
                        gk[c] += ds * q[c];
                    }
                }
            }
        }
    }
    for (size_t i = 0; i < n; i++) dqkv[i] += (float)g[i];
    free(g);
    free(dS);
}

/* ---- softmax and cross-entropy ------------------------------------------------------- */

void andrea_ref_softmax_row(float *x, int n) {
    double mx = -INFINITY, sum = 0.0;
    for (int i = 0; i < n; i++)
        if (x[i] > mx) mx = x[i];
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    for (int i = 0; i < n; i++) x[i] = (float)(exp((double)x[i] - mx) / sum);
}

float andrea_ref_crossentropy_forward(float *logits_to_probs, float *losses, const int32_t *targets,
                               int N, int V, int *n_valid) {
    double total = 0.0;
    int valid = 0;
    for (int i = 0; i < N; i++) {
        float *x = logits_to_probs + (size_t)i * V;
        double mx = -INFINITY, sum = 0.0;
        for (int v = 0; v < V; v++)
            if (x[v] > mx) mx = x[v];
        for (int v = 0; v < V; v++) sum += exp((double)x[v] - mx);
        int t = targets[i];
        assert(t < V);
        /* -log p[t] straight from the logits: log-sum-exp, no log of a rounded p. */
        double loss = t >= 0 ? log(sum) + mx - (double)x[t] : 0.0;
        for (int v = 0; v < V; v++) x[v] = (float)(exp((double)x[v] - mx) / sum);
        if (losses) losses[i] = (float)loss;
        if (t >= 0) {
            total += loss;
            valid++;
        }
    }
    if (n_valid) *n_valid = valid;
    return valid ? (float)(total / valid) : 0.0f;
}

void andrea_ref_crossentropy_backward(float *probs_to_dlogits, const int32_t *targets, int N, int V,
                               float dloss) {
    for (int i = 0; i < N; i++) {
        float *p = probs_to_dlogits + (size_t)i * V;
        int t = targets[i];
        for (int v = 0; v < V; v++) {
            double d = t >= 0 ? ((double)p[v] - (v == t ? 1.0 : 0.0)) * dloss : 0.0;
            p[v] = (float)d;
        }
    }
}

/* ---- optimiser ------------------------------------------------------------------------ */

void andrea_ref_adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr,
                      float b1, float b2, float eps, float wd, int t, float gscale) {
    assert(t >= 1);
    double c1 = 1.0 - pow((double)b1, t), c2 = 1.0 - pow((double)b2, t);
    for (size_t i = 0; i < n; i++) {
        double gi = (double)g[i] * gscale;
        double mi = (double)b1 * m[i] + (1.0 - (double)b1) * gi;
        double vi = (double)b2 * v[i] + (1.0 - (double)b2) * gi * gi;
        double mhat = mi / c1, vhat = vi / c2;
        /* Decoupled decay: wd * p is added to the step, not folded into the gradient. */
        double step = mhat / (sqrt(vhat) + (double)eps) + (double)wd * p[i];
        p[i] = (float)((double)p[i] - (double)lr * step);
        m[i] = (float)mi;
        v[i] = (float)vi;
    }
}

/* ---- fused products, decoding, sums (the backend harness's references) ---------------- */

void andrea_ref_matmul_forward_act(float *pre, float *post, const float *inp, const float *w,
                                   const float *bias, int M, int K, int N, int act) {
    andrea_ref_matmul_forward(pre, inp, w, bias, M, K, N);
    /* the activation of the float pre-activation, as the kernel stores and reads it */
    andrea_ref_activation_forward(post, pre, (size_t)M * N, act);
}

void andrea_ref_matmul_backward_act(float *dpre, float *dw, float *dbias, const float *dout,
                                    const float *post, const float *w, const float *pre, int M,
                                    int K, int N, int act) {
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) {
            double s = 0.0;
            for (int n = 0; n < N; n++) s += (double)dout[(size_t)m * N + n] * w[(size_t)n * K + k];
            dpre[(size_t)m * K + k] = (float)(act_df(pre[(size_t)m * K + k], act) * s);
        }
    andrea_ref_matmul_backward(NULL, dw, dbias, dout, post, w, M, K, N);
}

void andrea_ref_matmul_forward_residual(float *out, const float *inp, const float *w,
                                        const float *bias, const float *resid, int M, int K,
                                        int N) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = (double)resid[(size_t)m * N + n] + (bias ? (double)bias[n] : 0.0);
            for (int k = 0; k < K; k++) s += (double)inp[(size_t)m * K + k] * w[(size_t)n * K + k];
            out[(size_t)m * N + n] = (float)s;
        }
}

/* Weight i of q4_0 rows: its block's byte i % 16, low nibble in the block's first half. */
static double ref_q4_0(const void *w, const float *scale, size_t i) {
    uint8_t byte = ((const uint8_t *)w)[16 * (i / 32) + i % 16];
    int q = i % 32 < 16 ? byte & 15 : byte >> 4;
    return (double)(q - 8) * scale[i / 32];
}

void andrea_ref_matvec_rows(float *out, const float *x, const void *w, int fmt,
                            const float *scale, const float *bias, int K, int N, int n) {
    for (int j = 0; j < n; j++)
        for (int r = 0; r < N; r++) {
            double s = 0.0;
            for (int k = 0; k < K; k++) {
                size_t i = (size_t)r * K + k;
                double wv = fmt == ANDREA_QUANT_BF16
                                ? (double)andrea_bf16_to_f32(((const uint16_t *)w)[i])
                            : fmt == ANDREA_QUANT_F16 ? (double)andrea_f16_to_f32(((const uint16_t *)w)[i])
                            : fmt == ANDREA_QUANT_INT8 ? (double)((const int8_t *)w)[i] * scale[r]
                            : fmt == ANDREA_QUANT_Q8_0 ? (double)((const int8_t *)w)[i] * scale[i / 32]
                            : fmt == ANDREA_QUANT_Q4_0 ? ref_q4_0(w, scale, i)
                                                       : (double)((const float *)w)[i];
                s += wv * x[(size_t)j * K + k];
            }
            out[(size_t)j * N + r] = (float)(s + (bias ? bias[r] : 0.0));
        }
}

double andrea_ref_sum_squares(const float *g, size_t n) {
    long double s = 0.0L;
    for (size_t i = 0; i < n; i++) s += (long double)g[i] * g[i];
    return (double)s;
}

void andrea_ref_attention_decode(float *out, const float *q, const float *kc, const float *vc,
                                 int pos, int C, int NH) {
    int HS = C / NH;
    double scale = (double)(1.0f / sqrtf((float)HS));
    double *s = malloc((size_t)(pos + 1) * sizeof(double));
    assert(s);
    for (int h = 0; h < NH; h++) {
        double mx = -INFINITY, sum = 0.0;
        for (int j = 0; j <= pos; j++) {
            double d = 0.0;
            for (int c = 0; c < HS; c++) d += (double)q[h * HS + c] * kc[(size_t)j * C + h * HS + c];
            s[j] = d * scale;
            if (s[j] > mx) mx = s[j];
        }
        for (int j = 0; j <= pos; j++) sum += exp(s[j] - mx);
        for (int c = 0; c < HS; c++) {
            double acc = 0.0;
            for (int j = 0; j <= pos; j++) acc += exp(s[j] - mx) / sum * vc[(size_t)j * C + h * HS + c];
            out[h * HS + c] = (float)acc;
        }
    }
    free(s);
}

void andrea_ref_attention_lse(float *lse, const float *qkv, int B, int T, int C, int NH) {
    int HS = C / NH;
    double scale = (double)(1.0f / sqrtf((float)HS));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const float *q = qkv + ((size_t)b * T + i) * 3 * C + h * HS;
                double mx = -INFINITY, sum = 0.0;
                for (int pass = 0; pass < 2; pass++)
                    for (int j = 0; j <= i; j++) {
                        const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * HS;
                        double d = 0.0;
                        for (int c = 0; c < HS; c++) d += (double)q[c] * k[c];
                        d *= scale;
                        if (pass == 0 && d > mx) mx = d;
                        if (pass == 1) sum += exp(d - mx);
                    }
                lse[((size_t)b * NH + h) * T + i] = (float)(mx + log(sum));
            }
}

void andrea_ref_embedding_forward(float *out, const int32_t *tokens, const float *wte,
                                  const float *wpe, int B, int T, int C) {
    for (int i = 0; i < B * T; i++)
        for (int k = 0; k < C; k++)
            out[(size_t)i * C + k] =
                (float)((double)wte[(size_t)tokens[i] * C + k] + wpe[(size_t)(i % T) * C + k]);
}

void andrea_ref_embedding_backward(float *dwte, float *dwpe, const float *dout,
                                   const int32_t *tokens, int B, int T, int C) {
    for (int k = 0; k < C; k++) {
        for (int t = 0; t < T; t++) { /* each position's rows over the batch */
            double s = dwpe[(size_t)t * C + k];
            for (int b = 0; b < B; b++) s += dout[((size_t)b * T + t) * C + k];
            dwpe[(size_t)t * C + k] = (float)s;
        }
    }
    int BT = B * T;
    for (int i = 0; i < BT; i++) { /* each token row once, summing all its positions */
        int first = 1;
        for (int j = 0; j < i; j++)
            if (tokens[j] == tokens[i]) first = 0;
        if (!first) continue;
        for (int k = 0; k < C; k++) {
            double s = dwte[(size_t)tokens[i] * C + k];
            for (int j = i; j < BT; j++)
                if (tokens[j] == tokens[i]) s += dout[(size_t)j * C + k];
            dwte[(size_t)tokens[i] * C + k] = (float)s;
        }
    }
}

