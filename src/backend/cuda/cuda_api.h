/* cuda_api.h - what the CUDA backend tells C code beyond the ops table (builds with
 * ANDREA_HAVE_CUDA only: -DANDREA_CUDA=ON, or the emulator's -DANDREA_CUDA_EMU=ON). */
#ifndef ANDREA_BACKEND_CUDA_API_H
#define ANDREA_BACKEND_CUDA_API_H

#ifdef __cplusplus
extern "C" {
#endif

/* The first CUDA failure recorded ("cuda OP (SHAPES): MESSAGE"), or NULL when none. */
const char *andrea_cuda_last_error(void);
/* Why this process's CUDA graphs are off (a capture failed: the ops run one by one from
 * then on, the backend itself fine), or NULL while they are on. */
const char *andrea_cuda_graphs_off(void);
/* The device's name as CUDA reports it ("NVIDIA H200"), or NULL when there is no device. */
const char *andrea_cuda_device_name(void);

/* cuda-bf16's products since the start: through one cuBLASLt call with their epilogue,
 * unfused (no such epilogue, alignment, no algorithm), and refused by cublasLtMatmul after
 * the heuristic chose (then unfused, and that shape from then on). */
void andrea_cuda_lt_counts(long *fused, long *unfused, long *refused);

#ifdef __cplusplus
}
#endif

#endif
