/*
 * isa.c - which instruction set the kernels run: the best this CPU has, capped by
 * the environment (ANDREA_ISA=avx512|avx2|neon|baseline, the CLI's --isa) and by the
 * caller's engine (andrea_cpu_engine.isa). Every dispatch point asks andrea_cpu_isa:
 * the matmul tiles, flash attention, decoding's dot products, the bf16 products. The
 * environment cap exists so one machine can measure and test every path: an AVX-512
 * CPU capped at avx2 runs exactly the code an AVX2-only CPU runs (not its speed: the
 * caches, clocks and ports stay the AVX-512 machine's).
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
/* F16C (f16 weights' vcvtph2ps): on every AVX2 CPU made, but a hypervisor may hide it */
static int has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

/* The CPU's own best level (no caps). */
static int cpu_best(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    if (__builtin_cpu_supports("avx512f") && avx2) return ANDREA_ISA_AVX512;
    if (avx2) return ANDREA_ISA_AVX2;
    return ANDREA_ISA_BASELINE;
#elif defined(__aarch64__)
    return ANDREA_ISA_NEON; /* Advanced SIMD is part of every AArch64 CPU */
#else
    return ANDREA_ISA_BASELINE;
#endif
}

int andrea_isa_parse(const char *name) {
    if (!name) return -1;
    if (strcmp(name, "avx512") == 0) return ANDREA_ISA_AVX512;
    if (strcmp(name, "avx2") == 0 || strcmp(name, "neon") == 0) return ANDREA_ISA_AVX2;
    if (strcmp(name, "baseline") == 0) return ANDREA_ISA_BASELINE;
    return -1;
}

const char *andrea_isa_name(int isa) {
#if defined(__aarch64__)
    return isa >= ANDREA_ISA_NEON ? "neon" : "baseline";
#else
    return isa >= ANDREA_ISA_AVX512 ? "avx512" : isa == ANDREA_ISA_AVX2 ? "avx2" : "baseline";
#endif
}

/* The machine's level under ANDREA_ISA, read once: a benign race (every thread computes
 * the same value), and no lookup on the hot paths that ask per call. */
int andrea_isa_machine(void) {
    static int cached = -1;
    if (cached < 0) {
        int isa = cpu_best(), cap = andrea_isa_parse(getenv("ANDREA_ISA"));
        cached = cap >= 0 && cap < isa ? cap : isa;
    }
    return cached;
}

int andrea_cpu_isa(int cap) {
    int isa = andrea_isa_machine();
    return cap >= 0 && cap < isa ? cap : isa;
}
