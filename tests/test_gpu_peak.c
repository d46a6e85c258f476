/* test_gpu_peak.c - the GPU peak table (src/util/gpu_peak.c) by the names CUDA reports:
 * H200 and H100 SXM at the 989 TFLOP/s bf16, a PCIe H100 not taken for an SXM one,
 * and an unknown GPU given no peak (so no MFU), never a made-up one. */
#include <stdio.h>

#include "test_util.h"
#include "util/gpu_peak.h"

static void check(const char *name, int known, double bf16, double fp32) {
    double b = -1, f = -1;
    int k = andrea_gpu_peak(name, &b, &f);
    CHECK(k == known);
    CHECK(b == bf16 && f == fp32);
    printf("%-28s %s bf16 %.1f fp32 %.1f TFLOP/s\n", name ? name : "(null)",
           k ? "known  " : "unknown", b, f);
}

int main(void) {
    check("NVIDIA H200", 1, 989.4, 66.9);
    check("NVIDIA H100 80GB HBM3", 1, 989.4, 66.9);
    check("NVIDIA H100 PCIe", 1, 756.5, 51.2);
    check("NVIDIA H200 NVL", 1, 835.5, 60.0);
    check("NVIDIA A100-SXM4-80GB", 1, 312.0, 19.5);
    check("NVIDIA GeForce RTX 4090", 1, 165.2, 82.6);
    check("NVIDIA GeForce GTX 1080", 0, 0.0, 0.0);
    check("andrea CUDA emulator (CPU)", 0, 0.0, 0.0);
    check(NULL, 0, 0.0, 0.0);
    return tu_finish("test_gpu_peak");
}
