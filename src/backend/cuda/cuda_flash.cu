/*
 * cuda_flash.cu - tiled flash attention in fp32 (head size up to 128): the forward keeps
 * only the log-sum-exps, the backward recomputes the probabilities tile by tile from them,
 * so neither holds a (T, T) matrix (cuda_attention.cu's row kernels did: O(T^2) scratch).
 *
 * Forward (FlashAttention-2's loop): a block takes 16 query rows of one (b, h), walks the
 * key tiles up to its last row (causal), and keeps per row the running max m, the running
 * sum l and the output accumulator, rescaled by exp(m_old - m_new) as the max grows.
 * 256 threads: 16 per query row, each holding 1/16 of the row's channels.
 *
 * Backward, deterministic (no atomics: each output element is summed by one thread in a
 * fixed order), in two kernels that write disjoint parts of dqkv: dQ by query tiles (each
 * walks the key tiles), dK and dV by key tiles (each walks the query tiles at or after it).
 * D_i = dout_i . out_i first (a kernel of its own), then with P_ij = exp(s_ij - lse_i),
 * dS_ij = P_ij (dout_i . v_j - D_i):  dQ_i += scale sum_j dS_ij k_j,
 * dK_j += scale sum_i dS_ij q_i,  dV_j += sum_i P_ij dout_i.
 *
 * This is the plain fp32 twin that the emulator (tests/cuda_emu) can run; a tensor-core
 * (bf16 mma) version is to be checked against it on a GPU.
 */
#include <math.h>

#include "backend/cuda/cuda_ops.h"

enum {
    FT = 256,       /* threads per block */
    TPR = 16,       /* threads per tile row */
    BQ = 16,        /* query rows per tile */
    BK = 32,        /* key rows per forward tile */
    BKB = 16,       /* key rows per backward tile */
    HS_MAX = 128,   /* head sizes the tiles hold (42 KiB of shared memory at 128) */
    PER = HS_MAX / TPR /* channels per thread */
};
static_assert(BQ * TPR == FT && BKB == TPR && BQ == TPR, "one thread per (row, column) pair");

/* rows [r0, r0 + n) of one head's q, k or v (offset off in a qkv row of C3 floats) into a
 * (n, HS) tile, zero past T */
__device__ static void load_tile(float (*dst)[HS_MAX], const float *src, size_t C3, int r0,
                                 int n, int T, int HS) {
    for (int idx = threadIdx.x; idx < n * HS; idx += FT) {
        int r = idx / HS, d = idx % HS;
        dst[r][d] = r0 + r < T ? src[(size_t)(r0 + r) * C3 + d] : 0.0f;
    }
}

__device__ static float dot(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int d = 0; d < n; d++) s += a[d] * b[d];
    return s;
}

/* ---- forward ----------------------------------------------------------------------------- */

__global__ static void k_flash_fwd(float *out, float *lse, const float *qkv, int T, int C,
                                   int NH) {
    __shared__ float Qs[BQ][HS_MAX], Ks[BK][HS_MAX], Vs[BK][HS_MAX], Ss[BQ][BK];
    __shared__ float Ms[BQ], Ls[BQ], Rs[BQ];
    int tiles = (T + BQ - 1) / BQ, HS = C / NH;
    int qt = blockIdx.x % tiles, h = (blockIdx.x / tiles) % NH, b = blockIdx.x / (tiles * NH);
    int r = threadIdx.x / TPR, t = threadIdx.x % TPR, q0 = qt * BQ, i = q0 + r;
    size_t C3 = 3 * (size_t)C;
    const float *base = qkv + (size_t)b * T * C3 + h * HS;
    float scale = 1.0f / sqrtf((float)HS), acc[PER];
    for (int k = 0; k < PER; k++) acc[k] = 0.0f;
    load_tile(Qs, base, C3, q0, BQ, T, HS);
    if (t == 0) Ms[r] = -INFINITY, Ls[r] = 0.0f;
    int last = q0 + BQ - 1 < T - 1 ? q0 + BQ - 1 : T - 1; /* the tile's last key */
    for (int k0 = 0; k0 <= last; k0 += BK) {
        __syncthreads(); /* the previous tile's readers are done */
        load_tile(Ks, base + C, C3, k0, BK, T, HS);
        load_tile(Vs, base + 2 * C, C3, k0, BK, T, HS);
        __syncthreads();
        for (int c = t; c < BK; c += TPR) {
            int j = k0 + c;
            Ss[r][c] = j <= i && j < T ? dot(Qs[r], Ks[c], HS) * scale : -INFINITY;
        }
        __syncthreads();
        if (t == 0) { /* the row's online softmax: key 0 is in the first tile, so m is finite */
            float mx = Ms[r];
            for (int c = 0; c < BK; c++) mx = fmaxf(mx, Ss[r][c]);
            float sum = 0.0f;
            for (int c = 0; c < BK; c++) {
                float p = expf(Ss[r][c] - mx);
                Ss[r][c] = p;
                sum += p;
            }
            Rs[r] = expf(Ms[r] - mx);
            Ls[r] = Ls[r] * Rs[r] + sum;
            Ms[r] = mx;
        }
        __syncthreads();
        for (int k = 0; k < PER && t + TPR * k < HS; k++) {
            int d = t + TPR * k;
            float o = acc[k] * Rs[r];
            for (int c = 0; c < BK; c++) o += Ss[r][c] * Vs[c][d];
            acc[k] = o;
        }
    }
    if (i >= T) return;
    for (int k = 0; k < PER && t + TPR * k < HS; k++)
        out[((size_t)b * T + i) * C + h * HS + t + TPR * k] = acc[k] / Ls[r];
    if (t == 0 && lse) lse[((size_t)b * NH + h) * T + i] = Ms[r] + logf(Ls[r]);
}

int cuda_flash_forward(const char *op, float *out, float *lse, const float *qkv, int B, int T,
                       int C, int NH) {
    int tiles = (T + BQ - 1) / BQ;
    CU_LAUNCH(k_flash_fwd, (unsigned)((size_t)B * NH * tiles), FT, 0)(out, lse, qkv, T, C, NH);
    CU_LAUNCHED_R(-1, op, "tiled B %d T %d C %d NH %d", B, T, C, NH);
    return 0;
}

/* ---- backward ---------------------------------------------------------------------------- */

/* D[b, h, i] = dout_i . out_i over the head's channels */
__global__ static void k_flash_D(float *D, const float *dout, const float *out, int B, int T,
                                 int C, int NH) {
    int HS = C / NH;
    size_t n = (size_t)B * NH * T;
    for (size_t x = (size_t)blockIdx.x * blockDim.x + threadIdx.x; x < n;
         x += (size_t)gridDim.x * blockDim.x) {
        size_t i = x % T, h = x / T % NH, b = x / ((size_t)T * NH);
        size_t o = (b * T + i) * C + h * HS;
        D[x] = dot(dout + o, out + o, HS);
    }
}

/* P and dS for query row i of tile q (Qs, dOs, lse, D) against key row j (Ks, Vs); 0 off
 * the causal triangle or past T */
__device__ static void p_ds(const float *q, const float *dout, float l, float Di,
                            const float *k, const float *v, int i, int j, int T, int HS,
                            float scale, float *p, float *ds) {
    if (j > i || i >= T || j >= T) {
        *p = *ds = 0.0f;
        return;
    }
    *p = expf(dot(q, k, HS) * scale - l);
    *ds = *p * (dot(dout, v, HS) - Di);
}

/* dQ for 16 query rows, over the key tiles up to the last of them */
__global__ static void k_flash_dq(float *dqkv, const float *dout, const float *qkv,
                                  const float *lse, const float *D, int T, int C, int NH) {
    __shared__ float Qs[BQ][HS_MAX], dOs[BQ][HS_MAX], Ks[BKB][HS_MAX], Vs[BKB][HS_MAX];
    __shared__ float dSs[BQ][BKB];
    int tiles = (T + BQ - 1) / BQ, HS = C / NH;
    int qt = blockIdx.x % tiles, h = (blockIdx.x / tiles) % NH, b = blockIdx.x / (tiles * NH);
    int r = threadIdx.x / TPR, t = threadIdx.x % TPR, q0 = qt * BQ, i = q0 + r;
    size_t C3 = 3 * (size_t)C, bh = ((size_t)b * NH + h) * T;
    const float *base = qkv + (size_t)b * T * C3 + h * HS;
    float scale = 1.0f / sqrtf((float)HS), acc[PER];
    for (int k = 0; k < PER; k++) acc[k] = 0.0f;
    load_tile(Qs, base, C3, q0, BQ, T, HS);
    load_tile(dOs, dout + (size_t)b * T * C + h * HS, (size_t)C, q0, BQ, T, HS);
    float l = i < T ? lse[bh + i] : 0.0f, Di = i < T ? D[bh + i] : 0.0f;
    int last = q0 + BQ - 1 < T - 1 ? q0 + BQ - 1 : T - 1;
    for (int k0 = 0; k0 <= last; k0 += BKB) {
        __syncthreads();
        load_tile(Ks, base + C, C3, k0, BKB, T, HS);
        load_tile(Vs, base + 2 * C, C3, k0, BKB, T, HS);
        __syncthreads();
        float p; /* one key column per thread: BKB == TPR */
        p_ds(Qs[r], dOs[r], l, Di, Ks[t], Vs[t], i, k0 + t, T, HS, scale, &p, &dSs[r][t]);
        __syncthreads();
        for (int k = 0; k < PER && t + TPR * k < HS; k++) {
            int d = t + TPR * k;
            for (int c = 0; c < BKB; c++) acc[k] += dSs[r][c] * Ks[c][d];
        }
    }
    if (i >= T) return;
    float *dq = dqkv + ((size_t)b * T + i) * C3 + h * HS;
    for (int k = 0; k < PER && t + TPR * k < HS; k++) dq[t + TPR * k] += scale * acc[k];
}

/* dK and dV for 16 key rows, over the query tiles at or after them */
__global__ static void k_flash_dkv(float *dqkv, const float *dout, const float *qkv,
                                   const float *lse, const float *D, int T, int C, int NH) {
    __shared__ float Ks[BKB][HS_MAX], Vs[BKB][HS_MAX], Qs[BQ][HS_MAX], dOs[BQ][HS_MAX];
    __shared__ float Ps[BKB][BQ], dSs[BKB][BQ], Ls[BQ], Ds[BQ];
    int tiles = (T + BKB - 1) / BKB, HS = C / NH;
    int kt = blockIdx.x % tiles, h = (blockIdx.x / tiles) % NH, b = blockIdx.x / (tiles * NH);
    int r = threadIdx.x / TPR, t = threadIdx.x % TPR, k0 = kt * BKB, j = k0 + r;
    size_t C3 = 3 * (size_t)C, bh = ((size_t)b * NH + h) * T;
    const float *base = qkv + (size_t)b * T * C3 + h * HS;
    const float *dbase = dout + (size_t)b * T * C + h * HS;
    float scale = 1.0f / sqrtf((float)HS), dk[PER], dv[PER];
    for (int k = 0; k < PER; k++) dk[k] = dv[k] = 0.0f;
    load_tile(Ks, base + C, C3, k0, BKB, T, HS);
    load_tile(Vs, base + 2 * C, C3, k0, BKB, T, HS);
    for (int q0 = k0 / BQ * BQ; q0 < T; q0 += BQ) {
        __syncthreads();
        load_tile(Qs, base, C3, q0, BQ, T, HS);
        load_tile(dOs, dbase, (size_t)C, q0, BQ, T, HS);
        if (threadIdx.x < BQ) {
            int i = q0 + threadIdx.x;
            Ls[threadIdx.x] = i < T ? lse[bh + i] : 0.0f;
            Ds[threadIdx.x] = i < T ? D[bh + i] : 0.0f;
        }
        __syncthreads();
        /* key row r against query row t of the tile (BQ == TPR) */
        p_ds(Qs[t], dOs[t], Ls[t], Ds[t], Ks[r], Vs[r], q0 + t, j, T, HS, scale, &Ps[r][t],
             &dSs[r][t]);
        __syncthreads();
        for (int k = 0; k < PER && t + TPR * k < HS; k++) {
            int d = t + TPR * k;
            for (int c = 0; c < BQ; c++) {
                dv[k] += Ps[r][c] * dOs[c][d];
                dk[k] += dSs[r][c] * Qs[c][d];
            }
        }
    }
    if (j >= T) return;
    float *dkp = dqkv + ((size_t)b * T + j) * C3 + C + h * HS, *dvp = dkp + C;
    for (int k = 0; k < PER && t + TPR * k < HS; k++) {
        dkp[t + TPR * k] += scale * dk[k];
        dvp[t + TPR * k] += dv[k];
    }
}

int cuda_flash_backward(const char *op, float *dqkv, const float *dout, const float *qkv,
                        const float *out, const float *lse, int B, int T, int C, int NH,
                        int tensor_cores) {
    size_t rows = (size_t)B * NH * T;
    float *D = (float *)cuda_scratch(CUDA_SCRATCH_ATT, sizeof(float) * rows, op);
    if (!D) return -1;
    CU_LAUNCH(k_flash_D, cuda_blocks(rows), 256, 0)(D, dout, out, B, T, C, NH);
    CU_LAUNCHED_R(-1, op, "D B %d T %d C %d NH %d", B, T, C, NH);
    if (tensor_cores) return cuda_flash_backward_tc(op, dqkv, dout, qkv, lse, D, B, T, C, NH);
    unsigned qb = (unsigned)((size_t)B * NH * ((T + BQ - 1) / BQ));
    unsigned kb = (unsigned)((size_t)B * NH * ((T + BKB - 1) / BKB));
    CU_LAUNCH(k_flash_dq, qb, FT, 0)(dqkv, dout, qkv, lse, D, T, C, NH);
    CU_LAUNCHED_R(-1, op, "dq B %d T %d C %d NH %d", B, T, C, NH);
    CU_LAUNCH(k_flash_dkv, kb, FT, 0)(dqkv, dout, qkv, lse, D, T, C, NH);
    CU_LAUNCHED_R(-1, op, "dk dv B %d T %d C %d NH %d", B, T, C, NH);
    return 0;
}

int cuda_flash_fits(int C, int NH) { return NH > 0 && C % NH == 0 && C / NH <= HS_MAX; }
