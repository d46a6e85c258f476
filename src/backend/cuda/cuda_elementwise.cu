/*
 * cuda_elementwise.cu - the CUDA backend's passes over flat buffers: residual,
 * activation, AdamW, the deterministic sum of squares, the NaN count, max |x|, and the
 * embeddings (forward, and a backward with no float atomics: each row of dwte is summed
 * over its positions in index order, the positions grouped per token on the device, so
 * that the op does no host work from the token ids and can be captured into a graph).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_ops.h"

#define GRID_STRIDE(i, n)                                                                     \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                   \
         i += (size_t)gridDim.x * blockDim.x)

__device__ static float act_f(float x, int act) {
    if (act == ANDREA_ACT_RELU) return x > 0.0f ? x : 0.0f;
    if (act == ANDREA_ACT_RELU2) return x > 0.0f ? x * x : 0.0f;
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

__device__ static float cuda_act_grad(float x, int act) {
    if (act == ANDREA_ACT_RELU) return x > 0.0f ? 1.0f : 0.0f;
    if (act == ANDREA_ACT_RELU2) return x > 0.0f ? 2.0f * x : 0.0f;
    const float k = 0.7978845608028654f;
    float u = k * (x + 0.044715f * x * x * x), t = tanhf(u);
    float du = k * (1.0f + 3.0f * 0.044715f * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

__global__ static void k_residual(float *out, const float *a, const float *b, size_t n) {
    GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}
__global__ static void k_act(float *out, const float *inp, size_t n, int act) {
    GRID_STRIDE(i, n) out[i] = act_f(inp[i], act);
}

void cuda_residual_forward(be_t be, float *out, const float *a, const float *b, size_t n) {
    (void)be;
    if (!cuda_ok() || !n) return;
    CU_LAUNCH(k_residual, cuda_blocks(n), 256, 0)(out, a, b, n);
    CU_LAUNCHED("residual_forward", "n %zu", n);
}

void cuda_activation_forward(be_t be, float *out, const float *inp, size_t n, int act) {
    (void)be;
    if (!cuda_ok() || !n) return;
    CU_LAUNCH(k_act, cuda_blocks(n), 256, 0)(out, inp, n, act);
    CU_LAUNCHED("activation_forward", "n %zu act %d", n, act);
}

/* post = act(pre) over (M, N), or pre *= act'(pre_saved) for the backward */
__global__ static void k_act_post(float *post, const float *pre, size_t n, int act) {
    GRID_STRIDE(i, n) post[i] = act_f(pre[i], act);
}
__global__ static void k_act_grad_mul(float *d, const float *pre, size_t n, int act) {
    GRID_STRIDE(i, n) d[i] *= cuda_act_grad(pre[i], act);
}
int cuda_act_launch(float *post, const float *pre, size_t n, int act, int grad) {
    if (grad) CU_LAUNCH(k_act_grad_mul, cuda_blocks(n), 256, 0)(post, pre, n, act);
    else CU_LAUNCH(k_act_post, cuda_blocks(n), 256, 0)(post, pre, n, act);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

__device__ static void adamw_one(float *p, const float *g, float *m, float *v, size_t i,
                                 float lr, float b1, float b2, float eps, float wd, float bc1,
                                 float bc2, float gscale) {
    float gi = gscale * g[i];
    float mi = b1 * m[i] + (1.0f - b1) * gi;
    float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float mh = mi / bc1, vh = vi / bc2;
    p[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * p[i]);
}

__global__ static void k_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr,
                               float b1, float b2, float eps, float wd, float bc1, float bc2,
                               float gscale) {
    GRID_STRIDE(i, n) adamw_one(p, g, m, v, i, lr, b1, b2, eps, wd, bc1, bc2, gscale);
}

/* every tensor at once: element i's tensor by a binary search of the offsets (a few
 * hundred, in cache), its decay from that tensor's flag */
__global__ static void k_adamw_many(float *p, const float *g, float *m, float *v, size_t n,
                                    const int64_t *off, const uint8_t *decay, int n_t, float lr,
                                    float b1, float b2, float eps, float wd, float bc1, float bc2,
                                    float gscale) {
    GRID_STRIDE(i, n) {
        int lo = 0, hi = n_t - 1; /* the last tensor that starts at or before i */
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if ((size_t)off[mid] <= i) lo = mid;
            else hi = mid - 1;
        }
        adamw_one(p, g, m, v, i, lr, b1, b2, eps, decay[lo] ? wd : 0.0f, bc1, bc2, gscale);
    }
}

static void adamw_bias_corrections(float b1, float b2, int t, float *bc1, float *bc2) {
    *bc1 = 1.0f - powf(b1, (float)t), *bc2 = 1.0f - powf(b2, (float)t);
}

void cuda_adamw_update(be_t be, float *p, const float *g, float *m, float *v, size_t n, float lr,
                       float b1, float b2, float eps, float wd, int t, float gscale) {
    (void)be;
    if (!cuda_ok() || !n) return;
    float bc1, bc2;
    adamw_bias_corrections(b1, b2, t, &bc1, &bc2);
    CU_LAUNCH(k_adamw, cuda_blocks(n), 256, 0)(p, g, m, v, n, lr, b1, b2, eps, wd, bc1, bc2,
                                               gscale);
    CU_LAUNCHED("adamw_update", "n %zu t %d", n, t);
}

void cuda_adamw_update_many(be_t be, float *p, const float *g, float *m, float *v,
                            const int64_t *off, const uint8_t *decay, int n_t, float lr, float b1,
                            float b2, float eps, float wd, int t, float gscale) {
    (void)be;
    const char *op = "adamw_update_many";
    if (!cuda_ok() || n_t <= 0 || off[n_t] <= 0) return;
    size_t n = (size_t)off[n_t], ob = sizeof(int64_t) * ((size_t)n_t + 1);
    unsigned char *h = (unsigned char *)malloc(ob + (size_t)n_t); /* one upload: both tables */
    if (!h) {
        cuda_failf(op, "out of host memory", "%d tensors", n_t);
        return;
    }
    memcpy(h, off, ob), memcpy(h + ob, decay, (size_t)n_t);
    unsigned char *d = (unsigned char *)cuda_upload_staging(h, ob + (size_t)n_t, op);
    free(h); /* a pageable copy has been taken when cudaMemcpyAsync returns */
    if (!d) return;
    float bc1, bc2;
    adamw_bias_corrections(b1, b2, t, &bc1, &bc2);
    CU_LAUNCH(k_adamw_many, cuda_blocks(n), 256, 0)(p, g, m, v, n, (const int64_t *)d, d + ob, n_t,
                                                    lr, b1, b2, eps, wd, bc1, bc2, gscale);
    CU_LAUNCHED(op, "n %zu tensors %d t %d", n, n_t, t);
}

/* ---- reductions: fixed parts, a fixed tree in each, parts added on the host in order ---- */

enum { PARTS = 256 };

__global__ static void k_sumsq(double *part, const float *g, size_t n) {
    __shared__ double s[256];
    size_t lo = n * blockIdx.x / PARTS, hi = n * (blockIdx.x + 1) / PARTS;
    double acc = 0.0;
    for (size_t i = lo + threadIdx.x; i < hi; i += 256) acc += (double)g[i] * g[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = s[0];
}

double cuda_sum_squares(be_t be, const float *g, size_t n) {
    (void)be;
    if (!cuda_ok()) return NAN;
    if (!n) return 0.0;
    double h[PARTS], *d = (double *)cuda_scratch(CUDA_SCRATCH_SMALL, sizeof h, "sum_squares");
    if (!d) return NAN;
    CU_LAUNCH(k_sumsq, PARTS, 256, 0)(d, g, n);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        cuda_failf("sum_squares", cudaGetErrorString(e), "n %zu", n);
        return NAN;
    }
    double s = 0.0;
    for (int i = 0; i < PARTS; i++) s += h[i];
    return s;
}

/* counts and maxima: integer atomics only (exact in any order) */
__global__ static void k_nonfinite(unsigned long long *count, const float *x, size_t n,
                                   int nonneg) {
    unsigned long long c = 0;
    GRID_STRIDE(i, n) c += !isfinite(x[i]) || (nonneg && x[i] < 0.0f);
    if (c) atomicAdd(count, c);
}
__global__ static void k_max_abs(unsigned *bits, const float *x, size_t n) {
    unsigned m = 0;
    GRID_STRIDE(i, n) {
        unsigned b = __float_as_uint(x[i]) & 0x7fffffffu; /* NaNs order above +inf */
        m = b > m ? b : m;
    }
    atomicMax(bits, m);
}

static int scalar_pass(const char *op, size_t n, int which, const float *x, int nonneg,
                       unsigned long long *out) {
    unsigned long long *d = (unsigned long long *)cuda_scratch(CUDA_SCRATCH_SMALL, sizeof *d, op);
    if (!d) return -1;
    cudaError_t e = cudaMemset(d, 0, sizeof *d);
    if (e == cudaSuccess) {
        unsigned blocks = cuda_blocks(n) < 1024 ? cuda_blocks(n) : 1024;
        if (which) CU_LAUNCH(k_max_abs, blocks, 256, 0)((unsigned *)d, x, n);
        else CU_LAUNCH(k_nonfinite, blocks, 256, 0)(d, x, n, nonneg);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(out, d, sizeof *d, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return cuda_failf(op, cudaGetErrorString(e), "n %zu", n);
    return 0;
}

uint64_t cuda_count_nonfinite(be_t be, const float *x, size_t n, int nonneg) {
    (void)be;
    unsigned long long c = 0;
    if (!cuda_ok()) return n ? n : 1; /* a failed device counts as all bad */
    if (!n) return 0;
    if (scalar_pass("count_nonfinite", n, 0, x, nonneg, &c)) return n;
    return c;
}

float cuda_max_abs(be_t be, const float *x, size_t n) {
    (void)be;
    unsigned long long c = 0;
    if (!cuda_ok()) return INFINITY;
    if (!n) return 0.0f;
    if (scalar_pass("max_abs", n, 1, x, 0, &c)) return INFINITY;
    unsigned bits = (unsigned)c;
    if (bits > 0x7f800000u) return INFINITY; /* a NaN */
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ---- embeddings ------------------------------------------------------------------------- */

__global__ static void k_embed(float *out, const int32_t *tok, const float *wte, const float *wpe,
                               int T, int C, size_t n) {
    GRID_STRIDE(i, n) {
        size_t bt = i / C, c = i % C;
        int t = (int)(bt % T);
        out[i] = wte[(size_t)tok[bt] * C + c] + wpe[(size_t)t * C + c];
    }
}

void cuda_embedding_forward(be_t be, float *out, const int32_t *tokens, const float *wte,
                            const float *wpe, int B, int T, int C) {
    (void)be;
    size_t n = (size_t)B * T * C;
    if (!cuda_ok() || !n) return;
    int32_t *dt = (int32_t *)cuda_upload_staging(tokens, sizeof(int32_t) * B * T,
                                                 "embedding_forward");
    if (!dt) return;
    CU_LAUNCH(k_embed, cuda_blocks(n), 256, 0)(out, dt, wte, wpe, T, C, n);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        cuda_failf("embedding_forward", cudaGetErrorString(e), "B %d T %d C %d", B, T, C);
}

/* The embedding backward groups the positions per token on the device, not on the host: the
 * op does no host work from the token ids (it only copies them up), so it can be captured
 * into a CUDA graph whose pinned token buffer changes between replays. The cost is
 * O(n * unique tokens) compares (n = B T), block-wide, one tile of positions per barrier:
 * a position's block first looks for an earlier occurrence of its token (nearest tiles
 * first, so a repeated token stops soon), and the first occurrence's block then scans the
 * positions from its own to n - 1. Each row of dwte gets, once, the float sum of its
 * positions' dout rows in ascending position order, and no float atomics: deterministic. */

/* One barrier: the number of the block's threads whose v is nonzero. cnt: 3 shared slots,
 * zero before the first call, k the block's call count; slot k % 3 is read after this
 * barrier and until the next, and cleared after the next (thread 0, here as (k + 2) % 3),
 * before the barrier after which it is counted into again. */
__device__ static int block_count(int v, int *cnt, unsigned *k) {
    if (v) atomicAdd(&cnt[*k % 3], 1);
    __syncthreads();
    int r = cnt[*k % 3];
    if (threadIdx.x == 0) cnt[(*k + 2) % 3] = 0;
    ++*k;
    return r;
}

/* One block per position i (grid-stride over the positions), blockDim.x <= 256: when i is
 * its token's first occurrence, dwte[tok[i]] += the sum of dout over the token's positions,
 * in ascending order; threads stride over the columns. Every loop that holds a barrier is
 * uniform across the block. */
__global__ static void k_embed_back_wte(float *dwte, const float *dout, const int32_t *tok,
                                        int n, int C) {
    __shared__ int cnt[3];
    __shared__ unsigned char match[2][256]; /* a tile's hits, by parity of the call count */
    const long long bd = blockDim.x, tid = threadIdx.x;
    unsigned k = 0;
    if (tid == 0) cnt[0] = cnt[1] = cnt[2] = 0;
    __syncthreads();
    for (long long i = blockIdx.x; i < n; i += gridDim.x) {
        const int32_t t = tok[i];
        int seen = 0; /* an earlier occurrence: positions [j1 - bd, j1), nearest tile first */
        for (long long j1 = i; j1 > 0 && !seen; j1 -= bd) {
            long long j = j1 - 1 - tid;
            seen = block_count(j >= 0 && tok[j] == t, cnt, &k);
        }
        if (seen) continue;
        for (long long c0 = 0; c0 < C; c0 += bd) {
            const long long c = c0 + tid;
            float s = 0.0f;
            for (long long j0 = i; j0 < n; j0 += bd) {
                unsigned char *m = match[k & 1]; /* read until the call after the next */
                const long long j = j0 + tid;
                const int hit = j < n && tok[j] == t;
                m[tid] = (unsigned char)hit;
                int left = block_count(hit, cnt, &k);
                if (c < C)
                    for (int q = 0; left; q++)
                        if (m[q]) s += dout[(j0 + q) * C + c], left--;
            }
            if (c < C) dwte[(size_t)t * C + c] += s;
        }
    }
}
__global__ static void k_embed_back_wpe(float *dwpe, const float *dout, int B, int T, int C) {
    size_t n = (size_t)T * C;
    GRID_STRIDE(i, n) {
        float s = 0.0f;
        for (int b = 0; b < B; b++) s += dout[(size_t)b * n + i];
        dwpe[i] += s;
    }
}

void cuda_embedding_backward(be_t be, float *dwte, float *dwpe, const float *dout,
                             const int32_t *tokens, int B, int T, int C) {
    (void)be;
    int n = B * T;
    if (!cuda_ok() || !n) return;
    if (dwpe) {
        CU_LAUNCH(k_embed_back_wpe, cuda_blocks((size_t)T * C), 256, 0)(dwpe, dout, B, T, C);
        CU_LAUNCHED("embedding_backward", "dwpe B %d T %d C %d", B, T, C);
    }
    if (!dwte) return;
    int32_t *dt = (int32_t *)cuda_upload_staging(tokens, sizeof(int32_t) * (size_t)n,
                                                 "embedding_backward");
    if (!dt) return;
    /* a warp at least: fewer threads than columns is fine, they stride */
    unsigned bd = C >= 256 ? 256u : (unsigned)(C + 31) / 32 * 32;
    CU_LAUNCH(k_embed_back_wte, (unsigned)n, bd, 0)(dwte, dout, dt, n, C);
    CU_LAUNCHED("embedding_backward", "dwte B %d T %d C %d", B, T, C);
}
