/*
 * cuda_ops.cu - the "cuda" and "cuda-bf16" backend instances: every operation of the ops
 * table, in the table's order (C++ designated initialisers must follow it), device memory,
 * and the probe that says whether this machine can run them (registry.c lists them only
 * when it can, and andrea_backend_find names the reason otherwise). The two share the
 * device, its state and its memory; only their products' operands differ.
 */
#include "backend/cuda/cuda_ops.h"

/* every op, shared by the two instances (the products read the instance's precision) */
static constexpr andrea_backend_ops CUDA_OPS = {
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .zero = cuda_zero,
    .copy_rows = cuda_copy_rows,
    .synchronize = cuda_synchronize,
    .fill = cuda_fill,
    .count_nonfinite = cuda_count_nonfinite,
    .max_abs = cuda_max_abs,
    .quantize = cuda_quantize,
    .gather_rows = cuda_gather_rows,
    .embedding_forward = cuda_embedding_forward,
    .embedding_backward = cuda_embedding_backward,
    .residual_forward = cuda_residual_forward,
    .matmul_forward = cuda_matmul_forward,
    .matmul_forward_residual = cuda_matmul_forward_residual,
    .matmul_forward_act = cuda_matmul_forward_act,
    .matmul_backward = cuda_matmul_backward,
    .matmul_backward_act = cuda_matmul_backward_act,
    .matvec = cuda_matvec,
    .matmul_blocks = NULL, /* a q8_0/q4_0 prompt runs matmul_forward (issue 24) */
    .norm_forward = cuda_norm_forward,
    .norm_backward = cuda_norm_backward,
    .activation_forward = cuda_activation_forward,
    .attention_forward = cuda_attention_forward,
    .attention_backward = cuda_attention_backward,
    .attention_flash_forward = cuda_attention_flash_forward,
    .attention_flash_backward = cuda_attention_flash_backward,
    .attention_decode = cuda_attention_decode,
    .attention_decode_kv = cuda_attention_decode_kv,
    .crossentropy_forward = cuda_crossentropy_forward,
    .crossentropy_backward = cuda_crossentropy_backward,
    .adamw_update = cuda_adamw_update,
    .adamw_update_many = cuda_adamw_update_many,
    .sum_squares = cuda_sum_squares,
};

/* the LM head's products run with N = the vocabulary rounded up to 64 (8449 -> 8512,
 * 50257 -> 50304): cuBLAS's and the tensor-core kernels' tiles are 64 wide, a ragged last
 * tile is a slower kernel or wasted lanes (llm.c's Vp) */
#define CUDA_VOCAB_MULTIPLE 64

extern "C" const andrea_backend andrea_backend_cuda = {
    "cuda",
#ifdef ANDREA_CUDA_EMU
    "the CUDA backend's code emulated on the CPU (a test build, tests/cuda_emu: not a GPU)",
#else
    "NVIDIA GPU through CUDA: fp32 kernels and cuBLAS products in exact fp32 (no TF32)",
#endif
    CUDA_OPS,
    &andrea_cuda_state,
    ANDREA_MEM_DEVICE,
    cuda_available,
    cuda_why,
    ANDREA_PRECISION_FP32,
    CUDA_COMM_OPS,
    CUDA_VOCAB_MULTIPLE,
    &cuda_graph_ops,
};

/* --precision bf16 on the GPU: the products' operands rounded to bf16, fp32 sums, results,
 * master weights and AdamW moments (cuda_dense.cu); the rest as "cuda" */
extern "C" const andrea_backend andrea_backend_cuda_bf16 = {
    "cuda-bf16",
#ifdef ANDREA_CUDA_EMU
    "cuda-bf16 emulated on the CPU (a test build, tests/cuda_emu: not a GPU)",
#else
    "NVIDIA GPU through CUDA: products with bf16 operands on tensor cores, fp32 accumulation",
#endif
    CUDA_OPS,
    &andrea_cuda_state,
    ANDREA_MEM_DEVICE,
    cuda_available,
    cuda_why,
    ANDREA_PRECISION_BF16,
    CUDA_COMM_OPS,
    CUDA_VOCAB_MULTIPLE,
    &cuda_graph_ops,
};
