/*
 * cuda_colsum.cu - deterministic column sums of tall matrices (dbias; the norms' dw and db
 * reduce the same way): one thread per column over all M rows leaves most of a GPU idle
 * (768 columns are 3 blocks), so the rows are cut into a fixed number of chunks, each
 * chunk's column sums go to a scratch row, and a second pass adds the chunks in order.
 * The order depends on M only, never on timing: the same bits every run.
 */
#include "backend/cuda/cuda_ops.h"

enum { CHUNKS = 64 };

int cuda_colsum_chunks(int M) { return M < CHUNKS ? (M > 0 ? M : 1) : CHUNKS; }

/* rows [M k / chunks, M (k + 1) / chunks) of chunk k */
__device__ static void chunk_rows(int M, int chunks, int k, int *lo, int *hi) {
    *lo = (int)((long long)M * k / chunks);
    *hi = (int)((long long)M * (k + 1) / chunks);
}

__global__ static void k_colsum_chunk(float *parts, const float *src, int M, int N, int chunks) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y, lo, hi;
    if (c >= N) return;
    chunk_rows(M, chunks, k, &lo, &hi);
    float s = 0.0f;
    for (int r = lo; r < hi; r++) s += src[(size_t)r * N + c];
    parts[(size_t)k * N + c] = s;
}

__global__ static void k_colsum_finish(float *dst, const float *parts, int chunks, int N,
                                       int accumulate) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= N) return;
    float s = 0.0f;
    for (int k = 0; k < chunks; k++) s += parts[(size_t)k * N + c];
    dst[c] = accumulate ? dst[c] + s : s;
}

int cuda_colsum_finish(float *dst, const float *parts, int chunks, int N, int accumulate,
                       const char *op) {
    CU_LAUNCH(k_colsum_finish, (N + 255) / 256, 256, 0)(dst, parts, chunks, N, accumulate);
    CU_LAUNCHED_R(-1, op, "column sums N %d chunks %d", N, chunks);
    return 0;
}

int cuda_column_sums(float *dst, const float *src, int M, int N, int accumulate,
                     const char *op) {
    int chunks = cuda_colsum_chunks(M);
    float *parts = (float *)cuda_scratch(CUDA_SCRATCH_COLSUM,
                                         sizeof(float) * (size_t)chunks * N, op);
    if (!parts) return -1;
    CU_LAUNCH(k_colsum_chunk, dim3((unsigned)(N + 255) / 256, (unsigned)chunks), 256, 0)(
        parts, src, M, N, chunks);
    CU_LAUNCHED_R(-1, op, "column sums M %d N %d", M, N);
    return cuda_colsum_finish(dst, parts, chunks, N, accumulate, op);
}
