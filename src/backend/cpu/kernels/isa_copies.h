/*
 * isa_copies.h - one loop compiled once per instruction set, the copy picked at run time.
 *
 * A DEFINE(SFX, ATTR) macro is instantiated by ANDREA_DEFINE_ISA_COPIES for generic (the
 * baseline: SSE2 on x86-64, NEON on arm64), avx2 and avx512 (x86-64 only), ATTR being the
 * target attribute; ANDREA_ISA_PICK(isa, name) then names the copy for an ISA level
 * (andrea_cpu_isa's answer). Loops included from a header take the target from
 * ANDREA_PUSH_AVX2 / ANDREA_PUSH_AVX512 ... ANDREA_POP_TARGET instead.
 *
 * A copy must not open an OpenMP parallel region itself: clang outlines the region's
 * body into a function of its own that does not inherit the target attribute, so a
 * clang build ran the body at the baseline (GCC keeps the target). The parallel loop
 * stays in plain code and calls the copy once per chunk of rows or elements.
 */
#ifndef ANDREA_KERNELS_ISA_COPIES_H
#define ANDREA_KERNELS_ISA_COPIES_H

#include "backend/cpu/kernels/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ANDREA_X86_COPIES 1
#define ANDREA_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define ANDREA_TARGET_AVX512 __attribute__((target("avx512f,fma")))
#define ANDREA_DEFINE_ISA_COPIES(DEFINE)                                                      \
    DEFINE(generic, )                                                                         \
    DEFINE(avx2, ANDREA_TARGET_AVX2)                                                          \
    DEFINE(avx512, ANDREA_TARGET_AVX512)
#define ANDREA_ISA_PICK(isa, name)                                                            \
    ((isa) == ANDREA_ISA_AVX512 ? name##_avx512 : (isa) == ANDREA_ISA_AVX2 ? name##_avx2      \
                                                                           : name##_generic)
#ifdef __clang__
#define ANDREA_PUSH_AVX2                                                                      \
    _Pragma("clang attribute push(__attribute__((target(\"avx2,fma\"))), apply_to = function)")
#define ANDREA_PUSH_AVX512                                                                    \
    _Pragma("clang attribute push(__attribute__((target(\"avx512f,fma\"))), apply_to = function)")
#define ANDREA_POP_TARGET _Pragma("clang attribute pop")
#else
#define ANDREA_PUSH_AVX2 _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma\")")
#define ANDREA_PUSH_AVX512 _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f,fma\")")
#define ANDREA_POP_TARGET _Pragma("GCC pop_options")
#endif
#else
#define ANDREA_DEFINE_ISA_COPIES(DEFINE) DEFINE(generic, )
#define ANDREA_ISA_PICK(isa, name) ((void)(isa), name##_generic)
#endif

#endif
