/*
 * cuda_attention.cu - causal attention on the device, correct first: one block per
 * (b, h, i) row, the row's scores in shared memory (T <= 12032), a fixed tree for its max
 * and sum. The explicit forward keeps att (and preatt). The "flash" pair runs the tiled
 * kernels of cuda_flash.cu (no (T, T) matrix) for head sizes up to 128 (cuda-bf16: both on
 * tensor cores, cuda_flash_tc.cu, for multiples of 16); above that, its forward is the row
 * kernel keeping only the log-sum-exps and its backward recomputes att from them into a
 * (B, NH, T, T) scratch and runs the explicit backward. The backward has no
 * atomics: dpre is materialised, then dq by rows and dk, dv by columns, each summed in
 * index order. Decoding attends one position over the device KV cache, a block per head.
 */
#include <math.h>

#include "backend/cuda/cuda_ops.h"

/* the row's T scores and the 256-float reduction share 48 KiB of shared memory */
enum { NT = 256, MAX_T = 12032 };

__device__ static float row_reduce(float v, float *s, int is_max) {
    __syncthreads();
    s[threadIdx.x] = v;
    __syncthreads();
    for (int h = NT / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h)
            s[threadIdx.x] = is_max ? fmaxf(s[threadIdx.x], s[threadIdx.x + h])
                                    : s[threadIdx.x] + s[threadIdx.x + h];
        __syncthreads();
    }
    float r = s[0];
    __syncthreads();
    return r;
}

/* p[0..n) = softmax of scores sc[0..n) (in place); returns the log-sum-exp */
__device__ static float softmax_row(float *sc, int n, float *red) {
    float m = -INFINITY;
    for (int j = threadIdx.x; j < n; j += NT) m = fmaxf(m, sc[j]);
    m = row_reduce(m, red, 1);
    float a = 0.0f;
    for (int j = threadIdx.x; j < n; j += NT) a += expf(sc[j] - m);
    float sum = row_reduce(a, red, 0);
    for (int j = threadIdx.x; j < n; j += NT) sc[j] = expf(sc[j] - m) / sum;
    __syncthreads();
    return m + logf(sum);
}

/* scores of query q against keys k (row stride ks), positions 0..n, into sc */
__device__ static void scores(float *sc, const float *q, const float *k, size_t ks, int n, int HS,
                              float scale) {
    for (int j = threadIdx.x; j < n; j += NT) {
        const float *kj = k + (size_t)j * ks;
        float d = 0.0f;
        for (int c = 0; c < HS; c++) d += q[c] * kj[c];
        sc[j] = d * scale;
    }
    __syncthreads();
}

__global__ static void k_attn_fwd(float *out, float *att, float *preatt, float *lse,
                                  const float *qkv, int T, int C, int NH) {
    CU_DYN_SHARED(float, sc);
    __shared__ float red[NT];
    int i = blockIdx.x % T, h = (blockIdx.x / T) % NH, b = blockIdx.x / (T * NH), HS = C / NH;
    size_t C3 = 3 * (size_t)C, base = (size_t)b * T * C3;
    const float *q = qkv + base + (size_t)i * C3 + h * HS, *k = qkv + base + C + h * HS;
    scores(sc, q, k, C3, i + 1, HS, 1.0f / sqrtf((float)HS));
    size_t row = (size_t)blockIdx.x * T;
    if (preatt)
        for (int j = threadIdx.x; j < T; j += NT) preatt[row + j] = j <= i ? sc[j] : -INFINITY;
    float l = softmax_row(sc, i + 1, red);
    if (lse && threadIdx.x == 0) lse[blockIdx.x] = l;
    if (att)
        for (int j = threadIdx.x; j < T; j += NT) att[row + j] = j <= i ? sc[j] : 0.0f;
    const float *v = qkv + base + 2 * (size_t)C + h * HS;
    for (int c = threadIdx.x; c < HS; c += NT) {
        float o = 0.0f;
        for (int j = 0; j <= i; j++) o += sc[j] * v[(size_t)j * C3 + c];
        out[((size_t)b * T + i) * C + h * HS + c] = o;
    }
}

static int fwd(const char *op, float *out, float *att, float *preatt, float *lse,
               const float *qkv, int B, int T, int C, int NH) {
    if (T > MAX_T || NH <= 0 || C % NH)
        return cuda_failf(op, "T above 12032 or C not a multiple of NH", "B %d T %d C %d NH %d",
                          B, T, C, NH);
    size_t shm = sizeof(float) * (size_t)T; /* <= 48 KiB: no opt-in attribute needed */
    CU_LAUNCH(k_attn_fwd, (unsigned)((size_t)B * NH * T), NT, shm)(out, att, preatt, lse, qkv, T,
                                                                  C, NH);
    CU_LAUNCHED_R(-1, op, "B %d T %d C %d NH %d", B, T, C, NH);
    return 0;
}

void cuda_attention_forward(be_t be, float *out, float *att, float *preatt, const float *qkv,
                            int B, int T, int C, int NH) {
    (void)be;
    if (!cuda_ok() || !B || !T) return;
    fwd("attention_forward", out, att, preatt, NULL, qkv, B, T, C, NH);
}

void cuda_attention_flash_forward(be_t be, float *out, float *lse, const float *qkv, int B, int T,
                                  int C, int NH) {
    if (!cuda_ok() || !B || !T) return;
    if (be->precision == ANDREA_PRECISION_BF16 && cuda_flash_tc_fits(C, NH))
        cuda_flash_forward_tc("attention_flash_forward", out, lse, qkv, B, T, C, NH);
    else if (cuda_flash_fits(C, NH))
        cuda_flash_forward("attention_flash_forward", out, lse, qkv, B, T, C, NH);
    else
        fwd("attention_flash_forward", out, NULL, NULL, lse, qkv, B, T, C, NH);
}

/* ---- backward ------------------------------------------------------------------------- */

/* att[i][j] = exp(s_ij - lse_i) for j <= i, 0 above: the flash backward's probabilities */
__global__ static void k_att_from_lse(float *att, const float *qkv, const float *lse, int T,
                                      int C, int NH) {
    int i = blockIdx.x % T, h = (blockIdx.x / T) % NH, b = blockIdx.x / (T * NH), HS = C / NH;
    size_t C3 = 3 * (size_t)C, base = (size_t)b * T * C3, row = (size_t)blockIdx.x * T;
    const float *q = qkv + base + (size_t)i * C3 + h * HS, *k = qkv + base + C + h * HS;
    float scale = 1.0f / sqrtf((float)HS), l = lse[blockIdx.x];
    for (int j = threadIdx.x; j < T; j += NT) {
        float d = 0.0f;
        if (j <= i)
            for (int c = 0; c < HS; c++) d += q[c] * k[(size_t)j * C3 + c];
        att[row + j] = j <= i ? expf(d * scale - l) : 0.0f;
    }
}

/* dpre[i][j] = att[i][j] (datt[i][j] - sum_k att[i][k] datt[i][k]), datt = dout_i . v_j */
__global__ static void k_dpre(float *dpre, const float *att, const float *dout, const float *qkv,
                              int T, int C, int NH) {
    __shared__ float red[NT];
    int i = blockIdx.x % T, h = (blockIdx.x / T) % NH, b = blockIdx.x / (T * NH), HS = C / NH;
    size_t C3 = 3 * (size_t)C, row = (size_t)blockIdx.x * T;
    const float *v = qkv + (size_t)b * T * C3 + 2 * (size_t)C + h * HS;
    const float *dy = dout + ((size_t)b * T + i) * C + h * HS;
    float a = 0.0f;
    for (int j = threadIdx.x; j <= i; j += NT) {
        float d = 0.0f;
        for (int c = 0; c < HS; c++) d += dy[c] * v[(size_t)j * C3 + c];
        dpre[row + j] = d;
        a += att[row + j] * d;
    }
    float dot = row_reduce(a, red, 0);
    for (int j = threadIdx.x; j < T; j += NT)
        dpre[row + j] = j <= i ? att[row + j] * (dpre[row + j] - dot) : 0.0f;
}

/* dq_i += scale sum_j dpre[i][j] k_j;  dk_j += scale sum_i dpre[i][j] q_i;
 * dv_j += sum_i att[i][j] dout_i: one block per (b, h, position), threads over channels */
__global__ static void k_dqkv(float *dqkv, const float *dpre, const float *att, const float *dout,
                              const float *qkv, int T, int C, int NH) {
    int p = blockIdx.x % T, h = (blockIdx.x / T) % NH, b = blockIdx.x / (T * NH), HS = C / NH;
    size_t C3 = 3 * (size_t)C, base = (size_t)b * T * C3, mat = (size_t)(blockIdx.x - p) * T;
    float scale = 1.0f / sqrtf((float)HS);
    const float *q = qkv + base + h * HS, *k = q + C;
    float *d = dqkv + base + (size_t)p * C3 + h * HS;
    for (int c = threadIdx.x; c < HS; c += blockDim.x) {
        float dq = 0.0f, dk = 0.0f, dv = 0.0f;
        for (int j = 0; j <= p; j++) dq += dpre[mat + (size_t)p * T + j] * k[(size_t)j * C3 + c];
        for (int i = p; i < T; i++) {
            dk += dpre[mat + (size_t)i * T + p] * q[(size_t)i * C3 + c];
            dv += att[mat + (size_t)i * T + p] * dout[((size_t)b * T + i) * C + h * HS + c];
        }
        d[c] += scale * dq;
        d[C + c] += scale * dk;
        d[2 * C + c] += dv;
    }
}

static int bwd(const char *op, float *dqkv, const float *dout, const float *qkv, const float *att,
               int B, int T, int C, int NH) {
    unsigned rows = (unsigned)((size_t)B * NH * T);
    float *dpre = (float *)cuda_scratch(CUDA_SCRATCH_DPRE, sizeof(float) * rows * (size_t)T, op);
    if (!dpre) return -1;
    CU_LAUNCH(k_dpre, rows, NT, 0)(dpre, att, dout, qkv, T, C, NH);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
        CU_LAUNCH(k_dqkv, rows, 64, 0)(dqkv, dpre, att, dout, qkv, T, C, NH);
        e = cudaGetLastError();
    }
    if (e != cudaSuccess)
        return cuda_failf(op, cudaGetErrorString(e), "B %d T %d C %d NH %d", B, T, C, NH);
    return 0;
}

void cuda_attention_backward(be_t be, float *dqkv, const float *dout, const float *qkv,
                             const float *att, int B, int T, int C, int NH) {
    (void)be;
    if (!cuda_ok() || !B || !T) return;
    bwd("attention_backward", dqkv, dout, qkv, att, B, T, C, NH);
}

void cuda_attention_flash_backward(be_t be, float *dqkv, const float *dout, const float *qkv,
                                   const float *out, const float *lse, int B, int T, int C,
                                   int NH) {
    (void)be;
    const char *op = "attention_flash_backward";
    if (!cuda_ok() || !B || !T) return;
    if (cuda_flash_fits(C, NH)) {
        int tc = be->precision == ANDREA_PRECISION_BF16 && cuda_flash_tc_fits(C, NH);
        cuda_flash_backward(op, dqkv, dout, qkv, out, lse, B, T, C, NH, tc);
        return;
    }
    unsigned rows = (unsigned)((size_t)B * NH * T);
    float *att = (float *)cuda_scratch(CUDA_SCRATCH_ATT, sizeof(float) * rows * (size_t)T, op);
    if (!att) return;
    CU_LAUNCH(k_att_from_lse, rows, NT, 0)(att, qkv, lse, T, C, NH);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) bwd(op, dqkv, dout, qkv, att, B, T, C, NH);
    else cuda_failf(op, cudaGetErrorString(e), "B %d T %d C %d NH %d", B, T, C, NH);
}

/* ---- decoding: one block per head, att (NH, ld) the probabilities' scratch ------------ */

__device__ static void decode_head(float *out, float *att, int ld, const float *q,
                                   const float *kc, const float *vc, int pos, int C, int NH,
                                   float *red) {
    int h = blockIdx.x, HS = C / NH;
    float *sc = att + (size_t)h * ld;
    scores(sc, q + h * HS, kc + h * HS, (size_t)C, pos + 1, HS, 1.0f / sqrtf((float)HS));
    softmax_row(sc, pos + 1, red);
    for (int c = threadIdx.x; c < HS; c += NT) {
        float o = 0.0f;
        for (int j = 0; j <= pos; j++) o += sc[j] * vc[(size_t)j * C + h * HS + c];
        out[h * HS + c] = o;
    }
}

__global__ static void k_attn_decode(float *out, float *att, int ld, const float *q,
                                     const float *kc, const float *vc, int pos, int C, int NH) {
    __shared__ float red[NT];
    decode_head(out, att, ld, q, kc, vc, pos, C, NH, red);
}

/* the position from device memory (a graph's replays read it there); each block writes
 * its own head's columns of the cache rows, and only it reads them back */
__global__ static void k_attn_decode_kv(float *out, float *att, int ld, const float *qkv,
                                        float *kc, float *vc, const int32_t *pos_d, int C,
                                        int NH) {
    __shared__ float red[NT];
    int HS = C / NH, pos = *pos_d;
    if (pos < 0 || pos >= ld) { /* the caller's check failed: NaN, never another row */
        for (int c = threadIdx.x; c < HS; c += NT) out[blockIdx.x * HS + c] = NAN;
        return;
    }
    size_t row = (size_t)pos * C + (size_t)blockIdx.x * HS;
    const float *k = qkv + C + (size_t)blockIdx.x * HS, *v = k + C;
    for (int c = threadIdx.x; c < HS; c += NT) kc[row + c] = k[c], vc[row + c] = v[c];
    __syncthreads(); /* the rows written before any thread of the block reads them */
    decode_head(out, att, ld, qkv, kc, vc, pos, C, NH, red);
}

static int decode_shapes_ok(const char *op, int ld, int pos, int C, int NH) {
    if (NH > 0 && C % NH == 0 && pos >= 0 && ld >= pos + 1) return 1;
    cuda_failf(op, "bad shapes", "pos %d C %d NH %d ld %d", pos, C, NH, ld);
    return 0;
}

void cuda_attention_decode(be_t be, float *out, float *att, int ld, const float *q,
                           const float *kc, const float *vc, int pos, int C, int NH) {
    (void)be;
    if (!cuda_ok() || !decode_shapes_ok("attention_decode", ld, pos, C, NH)) return;
    CU_LAUNCH(k_attn_decode, NH, NT, 0)(out, att, ld, q, kc, vc, pos, C, NH);
    CU_LAUNCHED("attention_decode", "pos %d C %d NH %d ld %d", pos, C, NH, ld);
}

void cuda_attention_decode_kv(be_t be, float *out, float *att, int ld, const float *qkv,
                              float *kc, float *vc, const int32_t *pos, int C, int NH) {
    (void)be;
    const char *op = "attention_decode_kv";
    if (!cuda_ok() || !decode_shapes_ok(op, ld, 0, C, NH)) return; /* *pos: the kernel's */
    CU_LAUNCH(k_attn_decode_kv, NH, NT, 0)(out, att, ld, qkv, kc, vc, pos, C, NH);
    CU_LAUNCHED(op, "C %d NH %d ld %d", C, NH, ld);
}
