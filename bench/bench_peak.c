/*
 * bench_peak.c - what one core can do at each ISA level it has (under ANDREA_ISA): fp32
 * FMA with AVX-512 (zmm), AVX2+FMA (ymm) and the baseline's SSE2 multiply + add (xmm),
 * and bf16 dot products (vdpbf16ps), as a function of the number of independent
 * accumulators. This is how the matmul tiles were sized (8 x 32 on AVX-512: 16
 * accumulators; 6 x 16 on AVX2: 12): with throughput T per cycle and latency L, a loop
 * needs >= T x L independent accumulators to keep the units busy.
 *
 *   build/bench/bench_peak            (one core; run two at once to see both cores)
 *   ANDREA_ISA=avx2 build/bench/bench_peak   (the AVX2 rows only)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/kernels.h"
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

/* The same chains in a narrower register: VT, its set1, the op, flops per op. */
#define CHAINS_V(N, ATTR, VT, SET1, OP, FLOPS, NAME)                                         \
    ATTR __attribute__((noinline)) static double NAME(void) {                                 \
        VT acc[N];                                                                            \
        VT a = SET1(1e-8f), b = SET1(1.0f);                                                   \
        for (int i = 0; i < N; i++) {                                                         \
            acc[i] = SET1((float)i);                                                          \
            __asm__ volatile("" : "+x"(acc[i]));                                              \
        }                                                                                     \
        double t0 = andrea_now();                                                             \
        for (long it = 0; it < ITERS; it++) {                                                 \
            _Pragma("GCC unroll 32") for (int i = 0; i < N; i++) acc[i] = OP;                 \
        }                                                                                     \
        double dt = andrea_now() - t0;                                                        \
        float sink = 0.0f, lanes[16];                                                         \
        for (int i = 0; i < N; i++) {                                                         \
            memcpy(lanes, &acc[i], sizeof(VT));                                               \
            sink += lanes[0];                                                                 \
        }                                                                                     \
        volatile float vs = sink;                                                             \
        (void)vs, (void)a, (void)b;                                                           \
        return (double)ITERS * N * (FLOPS) / dt * 1e-9;                                       \
    }
#define AVX2_ATTR __attribute__((target("avx2,fma")))
#define YMM_FMA _mm256_fmadd_ps(a, b, acc[i])
CHAINS_V(4, AVX2_ATTR, __m256, _mm256_set1_ps, YMM_FMA, 16, ymm4)
CHAINS_V(8, AVX2_ATTR, __m256, _mm256_set1_ps, YMM_FMA, 16, ymm8)
CHAINS_V(12, AVX2_ATTR, __m256, _mm256_set1_ps, YMM_FMA, 16, ymm12)
/* SSE2 has no FMA: a multiply and a dependent add, 8 flops per 2 instructions */
#define XMM_MULADD _mm_add_ps(_mm_mul_ps(a, b), acc[i])
CHAINS_V(4, , __m128, _mm_set1_ps, XMM_MULADD, 8, xmm4)
CHAINS_V(8, , __m128, _mm_set1_ps, XMM_MULADD, 8, xmm8)
CHAINS_V(12, , __m128, _mm_set1_ps, XMM_MULADD, 8, xmm12)

int main(void) {
    int isa = andrea_cpu_isa(-1);
    printf("ISA %s (ANDREA_ISA caps it), one core\n", andrea_isa_name(isa));
    if (isa >= ANDREA_ISA_AVX512) {
        printf("fp32 FMA (zmm), GFLOP/s per core by accumulators: 4 %.0f | 8 %.0f | 12 %.0f | 16 %.0f\n",
               fma4(), fma8(), fma12(), fma16());
        if (andrea_bf16_supported())
            printf("bf16 vdpbf16ps (zmm), GFLOP/s per core: 4 %.0f | 8 %.0f | 12 %.0f | 16 %.0f | 24 %.0f\n",
                   dot4(), dot8(), dot12(), dot16(), dot24());
    }
    if (isa >= ANDREA_ISA_AVX2)
        printf("fp32 FMA (ymm, AVX2), GFLOP/s per core by accumulators: 4 %.0f | 8 %.0f | 12 %.0f\n",
               ymm4(), ymm8(), ymm12());
    printf("fp32 mul+add (xmm, SSE2), GFLOP/s per core by accumulators: 4 %.0f | 8 %.0f | 12 %.0f\n",
           xmm4(), xmm8(), xmm12());
    return 0;
}
#else
int main(void) {
    printf("bench_peak: x86-64 only\n");
    return 0;
}
#endif
