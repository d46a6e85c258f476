/*
 * cuda_rows.cu - the CUDA backend's per-row kernels: LayerNorm/RMSNorm forward and
 * backward, and the cross-entropy (softmax in place, losses, dlogits). One block of 256
 * threads per row, block reductions in a fixed tree (the same result on every run); the
 * norms' dw and db are column sums over fixed row chunks, then the chunks in order
 * (cuda_colsum.cu; no atomics).
 */
#include <math.h>
#include <stdlib.h>

#include "backend/cuda/cuda_ops.h"

enum { NT = 256 };

/* the sum of v over the block, in every thread (s: NT floats of shared memory) */
__device__ static float block_sum(float v, float *s) {
    __syncthreads();
    s[threadIdx.x] = v;
    __syncthreads();
    for (int h = NT / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    return s[0];
}
__device__ static float block_max(float v, float *s) {
    __syncthreads();
    s[threadIdx.x] = v;
    __syncthreads();
    for (int h = NT / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + h]);
        __syncthreads();
    }
    return s[0];
}

__global__ static void k_norm_fwd(int rms, float *out, float *mean, float *rstd, const float *inp,
                                  const float *w, const float *b, int C, float eps) {
    __shared__ float s[NT];
    const float *x = inp + (size_t)blockIdx.x * C;
    float *y = out + (size_t)blockIdx.x * C;
    float mu = 0.0f;
    if (!rms) {
        float a = 0.0f;
        for (int c = threadIdx.x; c < C; c += NT) a += x[c];
        mu = block_sum(a, s) / C;
    }
    float a = 0.0f;
    for (int c = threadIdx.x; c < C; c += NT) a += (x[c] - mu) * (x[c] - mu);
    float rs = 1.0f / sqrtf(block_sum(a, s) / C + eps);
    for (int c = threadIdx.x; c < C; c += NT)
        y[c] = (x[c] - mu) * rs * w[c] + (!rms && b ? b[c] : 0.0f);
    if (threadIdx.x == 0) {
        if (!rms && mean) mean[blockIdx.x] = mu;
        rstd[blockIdx.x] = rs;
    }
}

void cuda_norm_forward(be_t be, int kind, float *out, float *mean, float *rstd, const float *inp,
                       const float *w, const float *b, int N, int C, float eps) {
    (void)be;
    if (!cuda_ok() || !N || !C) return;
    CU_LAUNCH(k_norm_fwd, N, NT, 0)(kind == ANDREA_NORM_RMS, out, mean, rstd, inp, w, b, C, eps);
    CU_LAUNCHED("norm_forward", "kind %d N %d C %d", kind, N, C);
}

/* dx += rstd (g - mean(g) - xhat mean(g xhat)) with g = dout w (RMSNorm: no mean(g) term) */
__global__ static void k_norm_bwd_x(int rms, float *dinp, const float *dout, const float *inp,
                                    const float *w, const float *mean, const float *rstd, int C) {
    __shared__ float s[NT];
    size_t r = blockIdx.x;
    const float *x = inp + r * C, *dy = dout + r * C;
    float mu = rms ? 0.0f : mean[r], rs = rstd[r], g1 = 0.0f, g2 = 0.0f;
    for (int c = threadIdx.x; c < C; c += NT) {
        float g = dy[c] * w[c];
        g1 += g;
        g2 += g * (x[c] - mu) * rs;
    }
    float gm = rms ? 0.0f : block_sum(g1, s) / C, gxm = block_sum(g2, s) / C;
    for (int c = threadIdx.x; c < C; c += NT) {
        float xhat = (x[c] - mu) * rs;
        dinp[r * C + c] += rs * (dy[c] * w[c] - gm - xhat * gxm);
    }
}
/* one row chunk's dw and db partials (cuda_colsum.cu's chunks): pw, pb (chunks, C) */
__global__ static void k_norm_bwd_w(int rms, float *pw, float *pb, const float *dout,
                                    const float *inp, const float *mean, const float *rstd, int N,
                                    int C, int chunks) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y;
    if (c >= C) return;
    int lo = (int)((long long)N * k / chunks), hi = (int)((long long)N * (k + 1) / chunks);
    float sw = 0.0f, sb = 0.0f;
    for (int r = lo; r < hi; r++) {
        float d = dout[(size_t)r * C + c];
        sw += d * (inp[(size_t)r * C + c] - (rms ? 0.0f : mean[r])) * rstd[r];
        sb += d;
    }
    pw[(size_t)k * C + c] = sw;
    pb[(size_t)k * C + c] = sb;
}

void cuda_norm_backward(be_t be, int kind, float *dinp, float *dw, float *db, const float *dout,
                        const float *inp, const float *w, const float *mean, const float *rstd,
                        int N, int C) {
    (void)be;
    int rms = kind == ANDREA_NORM_RMS;
    if (!cuda_ok() || !N || !C) return;
    if (dinp) {
        CU_LAUNCH(k_norm_bwd_x, N, NT, 0)(rms, dinp, dout, inp, w, mean, rstd, C);
        CU_LAUNCHED("norm_backward", "dinp kind %d N %d C %d", kind, N, C);
    }
    if (!dw && (!db || rms)) return;
    const char *op = "norm_backward";
    int chunks = cuda_colsum_chunks(N);
    float *pw = (float *)cuda_scratch(CUDA_SCRATCH_COLSUM, sizeof(float) * 2 * chunks * C, op);
    if (!pw) return;
    float *pb = pw + (size_t)chunks * C;
    CU_LAUNCH(k_norm_bwd_w, dim3((unsigned)(C + 255) / 256, (unsigned)chunks), 256, 0)(
        rms, pw, pb, dout, inp, mean, rstd, N, C, chunks);
    CU_LAUNCHED(op, "dw kind %d N %d C %d", kind, N, C);
    if (dw && cuda_colsum_finish(dw, pw, chunks, C, 1, op)) return;
    if (db && !rms) cuda_colsum_finish(db, pb, chunks, C, 1, op);
}

/* ---- cross-entropy -------------------------------------------------------------------- */

__global__ static void k_ce_fwd(float *x, float *losses, const int32_t *tg, int V, int ld) {
    __shared__ float s[NT];
    float *row = x + (size_t)blockIdx.x * ld;
    float m = -INFINITY;
    for (int v = threadIdx.x; v < V; v += NT) m = fmaxf(m, row[v]);
    m = block_max(m, s);
    float a = 0.0f;
    for (int v = threadIdx.x; v < V; v += NT) a += expf(row[v] - m);
    float sum = block_sum(a, s);
    int t = tg[blockIdx.x];
    /* the loss from the logit itself (log-sum-exp), before the row becomes probabilities */
    float loss = t >= 0 ? logf(sum) + m - row[t] : 0.0f;
    __syncthreads();
    for (int v = threadIdx.x; v < V; v += NT) row[v] = expf(row[v] - m) / sum;
    if (threadIdx.x == 0) losses[blockIdx.x] = loss;
}

/* the sum of the valid rows' losses and their count, in double, in a fixed order (one
 * block: each thread its rows in turn, then a tree): tot[0] the sum, tot[1] the count */
__global__ static void k_ce_total(double *tot, const float *losses, const int32_t *tg, int N) {
    __shared__ double s[NT], c[NT];
    double a = 0.0, n = 0.0;
    for (int i = threadIdx.x; i < N; i += NT)
        if (tg[i] >= 0) a += losses[i], n += 1.0;
    s[threadIdx.x] = a, c[threadIdx.x] = n;
    __syncthreads();
    for (int h = NT / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h], c[threadIdx.x] += c[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) tot[0] = s[0], tot[1] = c[0];
}

/* During a capture, the device count of valid rows the last captured forward produced: the
 * captured backward divides its dloss by it (cuda_crossentropy_forward says why). */
static __thread const double *captured_count;

/* The loss is reduced on the device and read back as two doubles (not N floats). During a
 * graph capture nothing can be read back: the sum and count go to a result slot of the graph
 * (cuda_capture_result: the model reads it after each replay), the call returns 0 and
 * n_valid 1, so that the model's dloss is its scale alone, which the captured backward
 * divides by the replay's own count (a replay's batch may mask other rows). */
float cuda_crossentropy_forward(be_t be, float *logits_to_probs, float *losses,
                                const int32_t *targets, int N, int V, int ld, int *n_valid) {
    (void)be;
    if (n_valid) *n_valid = 0;
    if (!cuda_ok()) return NAN;
    if (!N) return 0.0f;
    const char *op = "crossentropy_forward";
    int capturing = cuda_capturing();
    int32_t *dt = (int32_t *)cuda_upload_staging(targets, sizeof(int32_t) * N, op);
    char *small = (char *)cuda_scratch(CUDA_SCRATCH_SMALL, 16 + sizeof(float) * N, op);
    double *tot = capturing ? cuda_capture_result(2, op) : (double *)small;
    if (!dt || !small || !tot) return NAN;
    float *dl = losses ? losses : (float *)(small + 16);
    CU_LAUNCH(k_ce_fwd, N, NT, 0)(logits_to_probs, dl, dt, V, ld);
    CU_LAUNCHED_R(NAN, op, "N %d V %d ld %d", N, V, ld);
    CU_LAUNCH(k_ce_total, 1, NT, 0)(tot, dl, dt, N);
    CU_LAUNCHED_R(NAN, op, "total N %d", N);
    if (capturing) {
        captured_count = tot + 1;
        if (n_valid) *n_valid = 1;
        return 0.0f;
    }
    double h[2];
    CU_CHECK_R(NAN, cudaMemcpy(h, tot, sizeof h, cudaMemcpyDeviceToHost), op, "N %d V %d", N, V);
    int nv = (int)h[1];
    if (n_valid) *n_valid = nv;
    return nv ? (float)(h[0] / nv) : 0.0f;
}

/* count: NULL, or the device count of valid rows dloss is divided by (a captured step) */
__global__ static void k_ce_bwd(float *p, const int32_t *tg, int V, int ld, float dloss,
                                const double *count) {
    float *row = p + (size_t)blockIdx.x * ld;
    int t = tg[blockIdx.x];
    if (count) {
        int n = (int)count[0];
        dloss = n ? dloss / (float)n : 0.0f; /* the host's scale / (float)n_valid, bit for bit */
    }
    for (int v = threadIdx.x; v < V; v += NT)
        row[v] = t < 0 ? 0.0f : (row[v] - (v == t ? 1.0f : 0.0f)) * dloss;
    for (int v = V + threadIdx.x; v < ld; v += NT) row[v] = 0.0f; /* a padded head's columns */
}

void cuda_crossentropy_backward(be_t be, float *probs_to_dlogits, const int32_t *targets, int N,
                                int V, int ld, float dloss) {
    (void)be;
    const char *op = "crossentropy_backward";
    if (!cuda_ok() || !N || !V) return;
    const double *count = NULL;
    if (cuda_capturing()) {
        if (!(count = captured_count)) {
            cuda_failf(op, "captured without a captured forward before it", "N %d V %d", N, V);
            return;
        }
        captured_count = NULL;
    }
    int32_t *dt = (int32_t *)cuda_upload_staging(targets, sizeof(int32_t) * N, op);
    if (!dt) return;
    CU_LAUNCH(k_ce_bwd, N, NT, 0)(probs_to_dlogits, dt, V, ld, dloss, count);
    CU_LAUNCHED(op, "N %d V %d ld %d", N, V, ld);
}
