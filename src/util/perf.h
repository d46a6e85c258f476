/* perf.h - machine measurements for benchmarks and MFU: sgemm throughput, copy
 * bandwidth, peak memory, and the model FLOPs of a training step. */
#ifndef ANDREA_UTIL_PERF_H
#define ANDREA_UTIL_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "andrea.h"

double andrea_now(void); /* monotonic seconds */
/* Best GFLOP/s of one n x n x n product over ~seconds (at least 5 of them) on a backend's
 * matmul_forward: a lower bound on its peak, low when other work kept the cores busy. */
double andrea_perf_gemm_gflops(const andrea_backend *be, int n, double seconds);
/* The same on "cpu" (blas = 0) or "cpu-blas" (blas = 1; 0 when BLAS is not compiled in). */
double andrea_perf_sgemm_gflops(int n, double seconds, int blas);
/* Best memcpy bandwidth in GB/s (bytes read + written) on a buffer of `bytes`, all
 * threads copying their slice. */
double andrea_perf_copy_gbps(size_t bytes, double seconds);
/* Best read-only bandwidth in GB/s: all threads running decoding's dot product (dot.c)
 * over a buffer of `bytes` in 2 MiB pages, as batch-1 decoding reads the weights. */
double andrea_perf_read_gbps(size_t bytes, double seconds);
/* Peak resident memory of this process, bytes. */
int64_t andrea_perf_peak_rss(void);
/* Training FLOPs per token (forward + backward) at sequence length T: 6 N for the
 * matmul weights N = L 12 C^2 + V C, plus 6 L C T for causal attention (PaLM's
 * 12 L C T counts the masked upper triangle too, which no kernel here computes). */
double andrea_train_flops_per_token(const andrea_config *c, int T);

#endif
