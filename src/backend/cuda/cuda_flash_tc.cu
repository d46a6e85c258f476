/*
 * cuda_flash_tc.cu - cuda-bf16's flash attention forward on tensor cores (WMMA, bf16
 * operands, fp32 accumulation), head sizes 16..128 in steps of 16. The loop is
 * cuda_flash.cu's: a block of 2 warps takes 32 query rows, each warp 16 of them, and walks
 * the key tiles (32 keys) up to its last row with a running max, sum and output per row.
 * Per tile a warp computes S = Q K^T and then O += P V with 16 x 16 x 16 products; the
 * row bookkeeping (mask, max, exp, sum, the rescale of O) is done by lanes on shared
 * memory, since a fragment's element layout is unspecified. O stays fp32 in shared memory
 * between tiles (loaded into the accumulator for each P V product). Q, K, V and P are
 * rounded to bf16; the log-sum-exps are fp32, from the same rounded P the output uses.
 *
 * The backward stays cuda_flash.cu's fp32 kernels (from these log-sum-exps). Checked in
 * the emulator (tests/cuda_emu/mma.h runs each fragment call per thread); never yet on a GPU.
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

/* rows [r0, r0 + n) of one head's q, k or v as bf16, zero past T */
__device__ static void load_bf16(bf16 (*dst)[TC_HS], const float *src, size_t C3, int r0, int n,
                                 int T, int HS) {
    for (int idx = threadIdx.x; idx < n * HS; idx += TC_THREADS) {
        int r = idx / HS, d = idx % HS;
        dst[r][d] = __float2bfloat16(r0 + r < T ? src[(size_t)(r0 + r) * C3 + d] : 0.0f);
    }
}

/* S (16 x TC_BK, fp32) = Q rows (16 x HS) times the key tile transposed */
__device__ static void scores_tc(float (*S)[TC_BK], bf16 (*Q)[TC_HS], bf16 (*K)[TC_HS], int HS) {
    for (int nb = 0; nb < TC_BK / 16; nb++) {
        acc_frag acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int kb = 0; kb < HS / 16; kb++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> b;
            wmma::load_matrix_sync(a, &Q[0][kb * 16], TC_HS);
            wmma::load_matrix_sync(b, &K[nb * 16][kb * 16], TC_HS); /* K^T: column-major K */
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(&S[0][nb * 16], acc, TC_BK, wmma::mem_row_major);
    }
}

/* O (16 x HS, fp32) += P (16 x TC_BK, bf16) times the value tile */
__device__ static void accumulate_pv(float (*O)[TC_HS], bf16 (*P)[TC_BK], bf16 (*V)[TC_HS],
                                     int HS) {
    for (int db = 0; db < HS / 16; db++) {
        acc_frag acc;
        wmma::load_matrix_sync(acc, &O[0][db * 16], TC_HS, wmma::mem_row_major);
        for (int kb = 0; kb < TC_BK / 16; kb++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> b;
            wmma::load_matrix_sync(a, &P[0][kb * 16], TC_BK);
            wmma::load_matrix_sync(b, &V[kb * 16][db * 16], TC_HS);
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(&O[0][db * 16], acc, TC_HS, wmma::mem_row_major);
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
    load_bf16(Qs, base, C3, q0, TC_BQ, T, HS);
    for (int idx = lane; idx < 16 * HS; idx += 32) Os[w][idx / HS][idx % HS] = 0.0f;
    if (lane < 16) Ms[w * 16 + lane] = -INFINITY, Ls[w * 16 + lane] = 0.0f;
    int last = q0 + TC_BQ - 1 < T - 1 ? q0 + TC_BQ - 1 : T - 1;
    for (int k0 = 0; k0 <= last; k0 += TC_BK) {
        __syncthreads(); /* the previous tile's readers are done */
        load_bf16(Ks, base + C, C3, k0, TC_BK, T, HS);
        load_bf16(Vs, base + 2 * C, C3, k0, TC_BK, T, HS);
        __syncthreads();
        scores_tc(Ss[w], &Qs[w * 16], Ks, HS);
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
        accumulate_pv(Os[w], Ps[w], Vs, HS);
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
