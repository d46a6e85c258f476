/*
 * bench_peak.c - what one core can do: fp32 FMA and bf16 dot-product (vdpbf16ps)
 * throughput as a function of the number of independent accumulators. This is how
 * the matmul tiles (8 x 32: 16 accumulators) were sized: with throughput T per cycle and latency L,
 * a loop needs >= T x L independent accumulators to keep the units busy.
 *
 *   build/bench/bench_peak            (one core; run two at once to see both cores)
 */
#include <stdio.h>
#include <stdlib.h>

#include "util/perf.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ITERS 20000000L

/* N accumulator chains, each a dependent sequence of FMAs (or vdpbf16ps). The asm
 * barriers keep the compiler from merging identical chains. */
#define CHAINS(N, OP, FLOPS, NAME)                                                            \
    __attribute__((target("avx512f,avx512bf16"), noinline)) static double NAME(void) {        \
        __m512 acc[N];                                                                        \
        __m512 a = _mm512_set1_ps(1e-8f), b = _mm512_set1_ps(1.0f);                           \
        __m512bh ah = (__m512bh)_mm512_set1_epi32(0x3f803f80), bh = ah;                       \
        for (int i = 0; i < N; i++) {                                                         \
            acc[i] = _mm512_set1_ps((float)i);                                                \
            __asm__ volatile("" : "+v"(acc[i]));                                              \
        }                                                                                     \
        double t0 = andrea_now();                                                             \
        for (long it = 0; it < ITERS; it++) {                                                 \
            _Pragma("GCC unroll 32") for (int i = 0; i < N; i++) acc[i] = OP;                 \
        }                                                                                     \
        double dt = andrea_now() - t0;                                                        \
        __m512 s = acc[0];                                                                    \
        for (int i = 1; i < N; i++) s = _mm512_add_ps(s, acc[i]);                             \
        volatile float sink = _mm512_reduce_add_ps(s);                                        \
        (void)sink, (void)a, (void)b, (void)ah, (void)bh;                                     \
        return (double)ITERS * N * (FLOPS) / dt * 1e-9;                                       \
    }
#define FMA_OP _mm512_fmadd_ps(a, b, acc[i])
#define DOT_OP _mm512_dpbf16_ps(acc[i], ah, bh)
CHAINS(4, FMA_OP, 32, fma4)
CHAINS(8, FMA_OP, 32, fma8)
CHAINS(12, FMA_OP, 32, fma12)
CHAINS(16, FMA_OP, 32, fma16)
CHAINS(4, DOT_OP, 64, dot4)
CHAINS(8, DOT_OP, 64, dot8)
CHAINS(12, DOT_OP, 64, dot12)
CHAINS(16, DOT_OP, 64, dot16)
CHAINS(24, DOT_OP, 64, dot24)

int main(void) {
    if (!__builtin_cpu_supports("avx512f")) {
        printf("bench_peak: needs AVX-512\n");
        return 0;
    }
    printf("fp32 FMA (zmm), GFLOP/s per core by accumulators: 4 %.0f | 8 %.0f | 12 %.0f | 16 %.0f\n",
           fma4(), fma8(), fma12(), fma16());
    if (__builtin_cpu_supports("avx512bf16"))
        printf("bf16 vdpbf16ps (zmm), GFLOP/s per core: 4 %.0f | 8 %.0f | 12 %.0f | 16 %.0f | 24 %.0f\n",
               dot4(), dot8(), dot12(), dot16(), dot24());
    return 0;
}
#else
int main(void) {
    printf("bench_peak: x86-64 only\n");
    return 0;
}
#endif
