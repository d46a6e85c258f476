/*
 * gpu_peak.c - the peak table MFU on a GPU is measured against. The figures are the
 * vendors' datasheet numbers for dense math (NVIDIA lists the tensor rates "with sparsity"
 * at twice these): H100/H200 SXM 989.4 bf16 and 66.9 fp32 TFLOP/s (the 989),
 * H100 PCIe 756.5 / 51.2, H100/H200 NVL 835.5 / 60.0, A100 312 / 19.5, L40S 362.1 / 91.6,
 * RTX 4090 165.2 (bf16 with fp32 accumulation) / 82.6. The first entry whose key the name
 * contains wins, so the more specific keys come first.
 */
#include "util/gpu_peak.h"

#include <string.h>

static const struct {
    const char *key;
    double bf16, fp32;
} PEAKS[] = {
    {"H100 PCIe", 756.5, 51.2}, {"H100 NVL", 835.5, 60.0}, {"H200 NVL", 835.5, 60.0},
    {"H100", 989.4, 66.9},      {"H200", 989.4, 66.9},     {"GH200", 989.4, 66.9},
    {"A100", 312.0, 19.5},      {"L40S", 362.1, 91.6},     {"RTX 4090", 165.2, 82.6},
};

int andrea_gpu_peak(const char *name, double *bf16_tflops, double *fp32_tflops) {
    *bf16_tflops = *fp32_tflops = 0.0;
    if (!name) return 0;
    for (size_t i = 0; i < sizeof PEAKS / sizeof PEAKS[0]; i++)
        if (strstr(name, PEAKS[i].key)) {
            *bf16_tflops = PEAKS[i].bf16;
            *fp32_tflops = PEAKS[i].fp32;
            return 1;
        }
    return 0;
}
