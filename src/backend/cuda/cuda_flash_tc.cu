/*
 * cuda_flash_tc.cu - cuda-bf16's flash attention on tensor cores (WMMA, bf16 operands, fp32
 * accumulation): the forward and the backward for head sizes 16..128 in steps of 16. The
 * loop is cuda_flash.cu's: a block of 2 warps takes 32 query rows, each warp 16 of them, and
 * walks the key tiles (32 keys) up to its last row with a running max, sum and output per row.
 * Per tile a warp computes S = Q K^T and then O += P V with 16 x 16 x 16 products; the
 * row bookkeeping (mask, max, exp, sum, the rescale of O) is done by lanes on shared
 * memory, since a fragment's element layout is unspecified. O stays fp32 in shared memory
 * between tiles (loaded into the accumulator for each P V product). Q, K, V and P are
 * rounded to bf16; the log-sum-exps are fp32, from the same rounded P the output uses.
 *
 * The backward (below) runs from these log-sum-exps; its head-128 tiles are in dynamic shared
 * memory past 48 KiB. Checked in the emulator (tests/cuda_emu/mma.h runs each fragment call
 * per thread); never yet on a GPU.
 */
#include <cuda_bf16.h>
#include <math.h>
#include <mma.h>

#include "backend/cuda/cuda_ops.h"

using namespace nvcuda;
typedef __nv_bfloat16 bf16;

enum {
    TC_WARPS = 2,
    TC_THREADS = 32 * TC_WARPS,
    TC_BQ = 16 * TC_WARPS, /* query rows per block */
    TC_BK = 32,            /* keys per tile */
    TC_HS = 128            /* the widest head: 47 KiB of static shared memory */
};

typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc_frag;

/* rows [r0, r0 + n) of one head's q, k, v (or dout) as bf16 into a tile of row length LD,
 * zero past T */
template <int LD>
__device__ static void load_bf16(bf16 (*dst)[LD], const float *src, size_t stride, int r0, int n,
                                 int T, int HS) {
    for (int idx = threadIdx.x; idx < n * HS; idx += TC_THREADS) {
        int r = idx / HS, d = idx % HS;
        dst[r][d] = __float2bfloat16(r0 + r < T ? src[(size_t)(r0 + r) * stride + d] : 0.0f);
    }
}

/* S (16 x NK, fp32) = A (16 x HS) times B (NK x HS) transposed: scores of 16 rows of A against
 * NK rows of B (Q K^T, dO V^T, K Q^T, V dO^T) */
template <int LD, int NK>
__device__ static void products_abt(float (*S)[NK], bf16 (*A)[LD], bf16 (*B)[LD], int HS) {
    for (int nb = 0; nb < NK / 16; nb++) {
        acc_frag acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int kb = 0; kb < HS / 16; kb++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> b;
            wmma::load_matrix_sync(a, &A[0][kb * 16], LD);
            wmma::load_matrix_sync(b, &B[nb * 16][kb * 16], LD); /* B^T: column-major B */
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(&S[0][nb * 16], acc, NK, wmma::mem_row_major);
    }
}

/* O (16 x HS, fp32) += P (16 x NK, bf16) times V (NK x HS): P V, dS K, P^T dO, dS^T Q */
template <int LD, int NK>
__device__ static void accumulate_pv(float (*O)[LD], bf16 (*P)[NK], bf16 (*V)[LD], int HS) {
    for (int db = 0; db < HS / 16; db++) {
        acc_frag acc;
        wmma::load_matrix_sync(acc, &O[0][db * 16], LD, wmma::mem_row_major);
        for (int kb = 0; kb < NK / 16; kb++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> b;
            wmma::load_matrix_sync(a, &P[0][kb * 16], NK);
            wmma::load_matrix_sync(b, &V[kb * 16][db * 16], LD);
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(&O[0][db * 16], acc, LD, wmma::mem_row_major);
    }
}

__global__ static void k_flash_fwd_tc(float *out, float *lse, const float *qkv, int T, int C,
                                      int NH) {
    __shared__ __align__(32) bf16 Qs[TC_BQ][TC_HS], Ks[TC_BK][TC_HS], Vs[TC_BK][TC_HS];
    __shared__ __align__(32) float Ss[TC_WARPS][16][TC_BK], Os[TC_WARPS][16][TC_HS];
    __shared__ __align__(32) bf16 Ps[TC_WARPS][16][TC_BK];
    __shared__ float Ms[TC_BQ], Ls[TC_BQ], Rs[TC_BQ];
    int tiles = (T + TC_BQ - 1) / TC_BQ, HS = C / NH;
    int qt = blockIdx.x % tiles, h = (blockIdx.x / tiles) % NH, b = blockIdx.x / (tiles * NH);
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, q0 = qt * TC_BQ;
    size_t C3 = 3 * (size_t)C;
    const float *base = qkv + (size_t)b * T * C3 + h * HS;
    float scale = 1.0f / sqrtf((float)HS);
    load_bf16<TC_HS>(Qs, base, C3, q0, TC_BQ, T, HS);
    for (int idx = lane; idx < 16 * HS; idx += 32) Os[w][idx / HS][idx % HS] = 0.0f;
    if (lane < 16) Ms[w * 16 + lane] = -INFINITY, Ls[w * 16 + lane] = 0.0f;
    int last = q0 + TC_BQ - 1 < T - 1 ? q0 + TC_BQ - 1 : T - 1;
    for (int k0 = 0; k0 <= last; k0 += TC_BK) {
        __syncthreads(); /* the previous tile's readers are done */
        load_bf16<TC_HS>(Ks, base + C, C3, k0, TC_BK, T, HS);
        load_bf16<TC_HS>(Vs, base + 2 * C, C3, k0, TC_BK, T, HS);
        __syncthreads();
        products_abt<TC_HS, TC_BK>(Ss[w], &Qs[w * 16], Ks, HS);
        __syncthreads();
        if (lane < 16) { /* row w*16 + lane: mask, online max, P in bf16, its sum */
            int r = w * 16 + lane, i = q0 + r;
            float mx = Ms[r], sum = 0.0f;
            for (int c = 0; c < TC_BK; c++) {
                int j = k0 + c;
                float s = j <= i && j < T ? Ss[w][lane][c] * scale : -INFINITY;
                Ss[w][lane][c] = s;
                mx = fmaxf(mx, s);
            }
            for (int c = 0; c < TC_BK; c++) {
                bf16 p = __float2bfloat16(expf(Ss[w][lane][c] - mx));
                Ps[w][lane][c] = p;
                sum += __bfloat162float(p); /* the P that multiplies V */
            }
            Rs[r] = expf(Ms[r] - mx);
            Ls[r] = Ls[r] * Rs[r] + sum;
            Ms[r] = mx;
        }
        __syncthreads();
        for (int idx = lane; idx < 16 * HS; idx += 32)
            Os[w][idx / HS][idx % HS] *= Rs[w * 16 + idx / HS];
        __syncthreads();
        accumulate_pv<TC_HS, TC_BK>(Os[w], Ps[w], Vs, HS);
    }
    __syncthreads();
    for (int idx = lane; idx < 16 * HS; idx += 32) {
        int rr = idx / HS, d = idx % HS, i = q0 + w * 16 + rr;
        if (i < T) out[((size_t)b * T + i) * C + h * HS + d] = Os[w][rr][d] / Ls[w * 16 + rr];
    }
    int i = q0 + w * 16 + lane;
    if (lane < 16 && i < T && lse)
        lse[((size_t)b * NH + h) * T + i] = Ms[w * 16 + lane] + logf(Ls[w * 16 + lane]);
}

int cuda_flash_tc_fits(int C, int NH) {
    return NH > 0 && C % NH == 0 && C / NH % 16 == 0 && C / NH <= TC_HS;
}

int cuda_flash_forward_tc(const char *op, float *out, float *lse, const float *qkv, int B, int T,
                          int C, int NH) {
    int tiles = (T + TC_BQ - 1) / TC_BQ;
    CU_LAUNCH(k_flash_fwd_tc, (unsigned)((size_t)B * NH * tiles), TC_THREADS, 0)(out, lse, qkv,
                                                                                T, C, NH);
    CU_LAUNCHED_R(-1, op, "tensor cores B %d T %d C %d NH %d", B, T, C, NH);
    return 0;
}

/* ---- backward on tensor cores (head sizes 16..128) --------------------------------------
 * cuda_flash.cu's two deterministic kernels with their products as WMMA: dQ by 32 query
 * rows (2 warps x 16), walking the key tiles; dK and dV by 32 key rows, walking the query
 * tiles at or after them. Lanes turn S and dP into P = exp(s scale - lse) and
 * dS = P (dP - D) (masked), rounded to bf16 for the next product.
 *
 * Their tiles are a struct in dynamic shared memory, rows of LD: 64 for head sizes to 64
 * (dq 34 KiB, dk/dv 44 KiB), 128 above (58 and 76 KiB, past the 48 KiB a kernel may have
 * statically or without opting in: cudaFuncSetAttribute raises the limit, sm_90 allows 227
 * KiB). Keeping the accumulators in fragments would fit 48 KiB, but needs the head size at
 * compile time to stay in registers; splitting the head across passes recomputes S and dP.
 * Every member's size is a multiple of 32 bytes, so from the 128-byte aligned base every
 * tile WMMA touches is 32-byte aligned. */

template <int LD> struct dq_tiles {
    bf16 Qs[TC_BQ][LD], dOs[TC_BQ][LD], Ks[TC_BK][LD], Vs[TC_BK][LD];
    float Ss[TC_WARPS][16][TC_BK], dPs[TC_WARPS][16][TC_BK], dQ[TC_WARPS][16][LD];
    bf16 dSs[TC_WARPS][16][TC_BK];
};
template <int LD> struct dkv_tiles { /* K, V: the block's keys; Q, dO: a query tile */
    bf16 Ks[TC_BQ][LD], Vs[TC_BQ][LD], Qs[TC_BK][LD], dOs[TC_BK][LD];
    float Ss[TC_WARPS][16][TC_BK], dPs[TC_WARPS][16][TC_BK];
    float dK[TC_WARPS][16][LD], dV[TC_WARPS][16][LD];
    bf16 Pt[TC_WARPS][16][TC_BK], dSt[TC_WARPS][16][TC_BK];
};
static_assert(sizeof(dq_tiles<64>) <= 48 * 1024 && sizeof(dkv_tiles<64>) <= 48 * 1024,
              "head sizes to 64 need no opt-in");
static_assert(sizeof(dkv_tiles<TC_HS>) <= 232448, "sm_90: 227 KiB of shared memory a block");

template <int LD> __device__ static void zero_rows(float (*acc)[LD], int HS) {
    for (int idx = threadIdx.x % 32; idx < 16 * HS; idx += 32) acc[idx / HS][idx % HS] = 0.0f;
}

/* P and dS of lane's row of a warp's 16 x TC_BK scores S (raw dots) and dP, for query
 * row i and keys k0.. (dq), or key row j and queries q0.. (dkv: transposed) */
__device__ static void p_ds_row(const float *S, const float *dP, bf16 *P, bf16 *dS, int i0,
                                int di, int j0, int dj, const float *lse, const float *D,
                                int T, float scale) {
    for (int c = 0; c < TC_BK; c++) {
        int i = i0 + di * c, j = j0 + dj * c;
        float p = 0.0f, ds = 0.0f;
        if (j <= i && i < T && j < T) {
            p = expf(S[c] * scale - lse[i]);
            ds = p * (dP[c] - D[i]);
        }
        if (P) P[c] = __float2bfloat16(p);
        dS[c] = __float2bfloat16(ds);
    }
}

template <int LD>
__global__ static void k_flash_dq_tc(float *dqkv, const float *dout, const float *qkv,
                                     const float *lse, const float *D, int T, int C, int NH) {
    CU_DYN_SHARED(unsigned char, smem);
    dq_tiles<LD> &s = *(dq_tiles<LD> *)smem;
    int tiles = (T + TC_BQ - 1) / TC_BQ, HS = C / NH;
    int qt = blockIdx.x % tiles, h = (blockIdx.x / tiles) % NH, b = blockIdx.x / (tiles * NH);
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, q0 = qt * TC_BQ;
    size_t C3 = 3 * (size_t)C, bh = ((size_t)b * NH + h) * T;
    const float *base = qkv + (size_t)b * T * C3 + h * HS;
    float scale = 1.0f / sqrtf((float)HS);
    load_bf16<LD>(s.Qs, base, C3, q0, TC_BQ, T, HS);
    load_bf16<LD>(s.dOs, dout + (size_t)b * T * C + h * HS, (size_t)C, q0, TC_BQ, T, HS);
    zero_rows<LD>(s.dQ[w], HS);
    int last = q0 + TC_BQ - 1 < T - 1 ? q0 + TC_BQ - 1 : T - 1;
    for (int k0 = 0; k0 <= last; k0 += TC_BK) {
        __syncthreads(); /* the previous tile's readers are done */
        load_bf16<LD>(s.Ks, base + C, C3, k0, TC_BK, T, HS);
        load_bf16<LD>(s.Vs, base + 2 * C, C3, k0, TC_BK, T, HS);
        __syncthreads();
        products_abt<LD, TC_BK>(s.Ss[w], &s.Qs[w * 16], s.Ks, HS);
        products_abt<LD, TC_BK>(s.dPs[w], &s.dOs[w * 16], s.Vs, HS);
        __syncthreads();
        if (lane < 16)
            p_ds_row(s.Ss[w][lane], s.dPs[w][lane], NULL, s.dSs[w][lane], q0 + w * 16 + lane, 0,
                     k0, 1, lse + bh, D + bh, T, scale);
        __syncthreads();
        accumulate_pv<LD, TC_BK>(s.dQ[w], s.dSs[w], s.Ks, HS);
    }
    __syncthreads();
    for (int idx = lane; idx < 16 * HS; idx += 32) {
        int rr = idx / HS, d = idx % HS, i = q0 + w * 16 + rr;
        if (i < T) dqkv[((size_t)b * T + i) * C3 + h * HS + d] += scale * s.dQ[w][rr][d];
    }
}

template <int LD>
__global__ static void k_flash_dkv_tc(float *dqkv, const float *dout, const float *qkv,
                                      const float *lse, const float *D, int T, int C, int NH) {
    CU_DYN_SHARED(unsigned char, smem);
    dkv_tiles<LD> &s = *(dkv_tiles<LD> *)smem;
    int tiles = (T + TC_BQ - 1) / TC_BQ, HS = C / NH;
    int kt = blockIdx.x % tiles, h = (blockIdx.x / tiles) % NH, b = blockIdx.x / (tiles * NH);
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, k0 = kt * TC_BQ;
    size_t C3 = 3 * (size_t)C, bh = ((size_t)b * NH + h) * T;
    const float *base = qkv + (size_t)b * T * C3 + h * HS;
    const float *dbase = dout + (size_t)b * T * C + h * HS;
    float scale = 1.0f / sqrtf((float)HS);
    load_bf16<LD>(s.Ks, base + C, C3, k0, TC_BQ, T, HS);
    load_bf16<LD>(s.Vs, base + 2 * C, C3, k0, TC_BQ, T, HS);
    zero_rows<LD>(s.dK[w], HS), zero_rows<LD>(s.dV[w], HS);
    for (int q0 = k0 / TC_BK * TC_BK; q0 < T; q0 += TC_BK) {
        __syncthreads(); /* the previous tile's readers are done */
        load_bf16<LD>(s.Qs, base, C3, q0, TC_BK, T, HS);
        load_bf16<LD>(s.dOs, dbase, (size_t)C, q0, TC_BK, T, HS);
        __syncthreads();
        products_abt<LD, TC_BK>(s.Ss[w], &s.Ks[w * 16], s.Qs, HS);  /* S^T: keys x queries */
        products_abt<LD, TC_BK>(s.dPs[w], &s.Vs[w * 16], s.dOs, HS); /* dP^T */
        __syncthreads();
        if (lane < 16) /* key row j = k0 + w*16 + lane against queries q0 + c */
            p_ds_row(s.Ss[w][lane], s.dPs[w][lane], s.Pt[w][lane], s.dSt[w][lane], q0, 1,
                     k0 + w * 16 + lane, 0, lse + bh, D + bh, T, scale);
        __syncthreads();
        accumulate_pv<LD, TC_BK>(s.dV[w], s.Pt[w], s.dOs, HS);
        accumulate_pv<LD, TC_BK>(s.dK[w], s.dSt[w], s.Qs, HS);
    }
    __syncthreads();
    for (int idx = lane; idx < 16 * HS; idx += 32) {
        int rr = idx / HS, d = idx % HS, j = k0 + w * 16 + rr;
        if (j >= T) continue;
        float *dk = dqkv + ((size_t)b * T + j) * C3 + C + h * HS;
        dk[d] += scale * s.dK[w][rr][d];
        dk[C + d] += s.dV[w][rr][d];
    }
}

/* lets kernel have bytes of dynamic shared memory: past 48 KiB it must opt in, or its
 * launch fails. Set at every launch (a host-side attribute: cheap, and no per-device or
 * per-thread state to keep). */
template <class K> static cudaError_t allow_shared(K *kernel, size_t bytes) {
    if (bytes <= 48 * 1024) return cudaSuccess;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
}

template <int LD>
static int backward_tc(const char *op, float *dqkv, const float *dout, const float *qkv,
                       const float *lse, const float *D, int B, int T, int C, int NH) {
    unsigned blocks = (unsigned)((size_t)B * NH * ((T + TC_BQ - 1) / TC_BQ));
    size_t dq_bytes = sizeof(dq_tiles<LD>), dkv_bytes = sizeof(dkv_tiles<LD>);
    CU_CHECK_R(-1, allow_shared(k_flash_dq_tc<LD>, dq_bytes), op,
               "tensor cores dq: %zu bytes of shared memory, B %d T %d C %d NH %d", dq_bytes, B,
               T, C, NH);
    CU_LAUNCH(k_flash_dq_tc<LD>, blocks, TC_THREADS, dq_bytes)(dqkv, dout, qkv, lse, D, T, C,
                                                               NH);
    CU_LAUNCHED_R(-1, op, "tensor cores dq B %d T %d C %d NH %d", B, T, C, NH);
    CU_CHECK_R(-1, allow_shared(k_flash_dkv_tc<LD>, dkv_bytes), op,
               "tensor cores dk dv: %zu bytes of shared memory, B %d T %d C %d NH %d", dkv_bytes,
               B, T, C, NH);
    CU_LAUNCH(k_flash_dkv_tc<LD>, blocks, TC_THREADS, dkv_bytes)(dqkv, dout, qkv, lse, D, T, C,
                                                                 NH);
    CU_LAUNCHED_R(-1, op, "tensor cores dk dv B %d T %d C %d NH %d", B, T, C, NH);
    return 0;
}

int cuda_flash_backward_tc(const char *op, float *dqkv, const float *dout, const float *qkv,
                           const float *lse, const float *D, int B, int T, int C, int NH) {
    if (C / NH <= 64) return backward_tc<64>(op, dqkv, dout, qkv, lse, D, B, T, C, NH);
    return backward_tc<TC_HS>(op, dqkv, dout, qkv, lse, D, B, T, C, NH);
}
