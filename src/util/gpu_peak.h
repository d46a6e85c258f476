/* gpu_peak.h - the dense (no sparsity) peak rates of the GPUs MFU is reported against, by
 * the device's name as CUDA reports it (cudaGetDeviceProperties, nvidia-smi). */
#ifndef ANDREA_GPU_PEAK_H
#define ANDREA_GPU_PEAK_H

/* The GPU's dense bf16 tensor-core peak (fp32 accumulation) and its fp32 (non-tensor)
 * peak in TFLOP/s: 1 when name is a GPU of the table, else 0 with both 0 (an unknown GPU
 * gets no MFU, never a made-up one). */
int andrea_gpu_peak(const char *name, double *bf16_tflops, double *fp32_tflops);

#endif
