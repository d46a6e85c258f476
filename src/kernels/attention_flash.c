/*
 * attention_flash.c - causal attention without the T x T matrix (FlashAttention-2
 * on the CPU): same maths as attention.c, but the probabilities are never stored.
 *
 * Forward. Keys are visited in blocks of FLASH_BK with an online softmax: each
 * query row keeps a running max m, a running sum l = sum_j exp(s_j - m) and an
 * unnormalised output o = sum_j exp(s_j - m) v_j. When a block raises the max
 * to m', the old l and o are multiplied by exp(m - m') so that every term is
 * relative to the same max again; at the end out = o / l. This is exactly the
 * softmax of attention.c, only summed in pieces. Query rows are taken FLASH_BQ
 * at a time so that one key block (k and v: 2 * FLASH_BK * HS floats) is reused
 * from L1 by all of them. Blocks entirely above the diagonal are never visited.
 * lse_i = m + log(l) is saved: it is all the backward needs to rebuild a row.
 *
 * Backward. p_ij = exp(s_ij - lse_i) recomputes the probability of the forward
 * pass from q, k and lse alone. With D_i = dout_i . out_i (= sum_j p_ij dP_ij,
 * the softmax backward's row term, computed from the saved output instead of
 * from the T x T matrix):
 *     dP_ij = dout_i . v_j,   dS_ij = p_ij (dP_ij - D_i)
 *     dv_j += p_ij dout_i,    dq_i += scale dS_ij k_j,   dk_j += scale dS_ij q_i
 * The loop runs over key blocks outside and query rows inside, so the block's
 * k, v, dk and dv stay in cache while the rows stream past. D_i is recomputed
 * for each key block (one dot of HS per row and block, against 5 per row and
 * key): that costs ~1/FLASH_BK of the work and leaves the kernel without any
 * heap scratch, so it has no allocation that could fail.
 *
 * Both passes run one (batch, head) pair per thread and accumulate in a fixed
 * order, so results do not depend on the thread count. Exponentials use
 * andrea_expf (relative error < 2e-7), which vectorises where libm's expf does not.
 */
#include <math.h>

#include "kernels/fastmath.h"
#include "kernels/kernels.h"

#define FLASH_BK 64 /* keys per block */
#define FLASH_BQ 32 /* query rows sharing a key block in the forward pass */

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

void attention_flash_forward(float *out, float *lse, const float *qkv, int B, int T, int C,
                             int NH) {
    int HS = C / NH;
    /* One float multiply per score, the same constant as attention.c. */
    float scale = 1.0f / sqrtf((float)HS);
    long C3 = 3L * C;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *base = qkv + (long)b * T * C3;
            float *lrow = lse + ((long)b * NH + h) * T;
            for (int i0 = 0; i0 < T; i0 += FLASH_BQ) {
                int i1 = imin(i0 + FLASH_BQ, T);
                float m[FLASH_BQ], l[FLASH_BQ];
                for (int i = i0; i < i1; i++) {
                    m[i - i0] = -INFINITY;
                    l[i - i0] = 0.0f;
                    float *o = out + ((long)b * T + i) * C + h * HS;
                    for (int d = 0; d < HS; d++) o[d] = 0.0f;
                }
                /* Key blocks up to the diagonal; row i < j0 has nothing in block j0. */
                for (int j0 = 0; j0 < i1; j0 += FLASH_BK) {
                    for (int i = imax(i0, j0); i < i1; i++) {
                        int jn = imin(j0 + FLASH_BK, i + 1) - j0; /* keys j0 .. j0+jn-1 */
                        const float *q = base + i * C3 + h * HS;
                        float *o = out + ((long)b * T + i) * C + h * HS;
                        float p[FLASH_BK];
                        float mb = -INFINITY;
                        for (int j = 0; j < jn; j++) {
                            const float *k = base + (j0 + j) * C3 + C + h * HS;
                            float s = 0.0f;
#pragma omp simd reduction(+ : s)
                            for (int d = 0; d < HS; d++) s += q[d] * k[d];
                            s *= scale;
                            p[j] = s;
                            mb = s > mb ? s : mb;
                        }
                        float mold = m[i - i0], mnew = mold > mb ? mold : mb;
                        /* mnew is finite (jn >= 1), so every exponent is <= 0 and exp <= 1. */
                        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                        for (int j = 0; j < jn; j++) {
                            p[j] = andrea_expf(p[j] - mnew);
                            sum += p[j];
                        }
                        if (mnew != mold) {
                            /* Rescale what was summed against the old max. On the first
                             * block l and o are 0 and the factor (exp(-inf) -> ~1e-38) is moot. */
                            float corr = andrea_expf(mold - mnew);
                            l[i - i0] *= corr;
                            for (int d = 0; d < HS; d++) o[d] *= corr;
                            m[i - i0] = mnew;
                        }
                        l[i - i0] += sum;
                        for (int j = 0; j < jn; j++) {
                            const float *v = base + (j0 + j) * C3 + 2 * C + h * HS;
                            float w = p[j];
                            for (int d = 0; d < HS; d++) o[d] += w * v[d];
                        }
                    }
                }
                for (int i = i0; i < i1; i++) {
                    /* l >= 1: the max term contributes exp(0) = 1. */
                    float inv = 1.0f / l[i - i0];
                    float *o = out + ((long)b * T + i) * C + h * HS;
                    for (int d = 0; d < HS; d++) o[d] *= inv;
                    lrow[i] = m[i - i0] + logf(l[i - i0]);
                }
            }
        }
    }
}

void attention_flash_backward(float *dqkv, const float *dout, const float *qkv,
                              const float *out, const float *lse, int B, int T, int C, int NH) {
    int HS = C / NH;
    float scale = 1.0f / sqrtf((float)HS);
    long C3 = 3L * C;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *base = qkv + (long)b * T * C3;
            float *dbase = dqkv + (long)b * T * C3;
            const float *lrow = lse + ((long)b * NH + h) * T;
            for (int j0 = 0; j0 < T; j0 += FLASH_BK) {
                /* Rows before j0 do not see this block (causal). */
                for (int i = j0; i < T; i++) {
                    int jn = imin(j0 + FLASH_BK, i + 1) - j0;
                    const float *q = base + i * C3 + h * HS;
                    const float *g = dout + ((long)b * T + i) * C + h * HS;
                    const float *o = out + ((long)b * T + i) * C + h * HS;
                    float *dq = dbase + i * C3 + h * HS;
                    float Di = 0.0f;
#pragma omp simd reduction(+ : Di)
                    for (int d = 0; d < HS; d++) Di += g[d] * o[d];
                    float p[FLASH_BK], ds[FLASH_BK];
                    for (int j = 0; j < jn; j++) {
                        const float *k = base + (j0 + j) * C3 + C + h * HS;
                        const float *v = k + C;
                        float s = 0.0f, dp = 0.0f;
#pragma omp simd reduction(+ : s, dp)
                        for (int d = 0; d < HS; d++) {
                            s += q[d] * k[d];
                            dp += g[d] * v[d];
                        }
                        p[j] = s * scale;
                        ds[j] = dp;
                    }
                    float li = lrow[i];
#pragma omp simd
                    for (int j = 0; j < jn; j++) {
                        float pj = andrea_expf(p[j] - li);
                        p[j] = pj;
                        ds[j] = pj * (ds[j] - Di) * scale;
                    }
                    for (int j = 0; j < jn; j++) {
                        const float *k = base + (j0 + j) * C3 + C + h * HS;
                        float *dk = dbase + (j0 + j) * C3 + C + h * HS;
                        float *dv = dk + C;
                        float pj = p[j], dsj = ds[j];
                        /* dv, dk (row j) and dq (row i) are disjoint channel ranges, which
                         * GCC cannot prove for three stores ("complicated access pattern"). */
#pragma omp simd
                        for (int d = 0; d < HS; d++) {
                            dv[d] += pj * g[d];
                            dk[d] += dsj * q[d];
                            dq[d] += dsj * k[d];
                        }
                    }
                }
            }
        }
    }
}
