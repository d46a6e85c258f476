/*
 * mma.h (the emulator's) - the warp matrix functions (nvcuda::wmma) for 16 x 16 x 16 tiles.
 * On a GPU a fragment is spread over the 32 lanes of a warp in an unspecified layout and
 * every call is collective, the lanes in step; here each thread holds the whole tile and
 * computes the whole product, which gives every lane the result the warp computes together,
 * as long as the kernel touches fragments only through these calls (as portable WMMA code
 * must). Each call starts with a warp barrier, so that the lanes stay in step as on a GPU:
 * no lane stores a tile before every lane has loaded what the store overwrites. Products
 * are bf16 x bf16 summed in fp32 (the tensor cores' contract; their summation order is not
 * reproduced). tests/cuda_emu/README.md.
 */
#ifndef ANDREA_CUDA_EMU_MMA_H
#define ANDREA_CUDA_EMU_MMA_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_runtime.h"

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
    static constexpr int num_elements = 256; /* 16 x 16, row-major here */
    T x[256];
};

template <class T> static inline float as_float(T v) { return __bfloat162float(v); }
static inline float as_float(float v) { return v; }

/* what the GPU requires of a tile's address and leading dimension: 256-bit alignment, and
 * rows a multiple of 16 bytes (a GPU faults, "misaligned address", or computes garbage) */
static inline void check_tile(const void *p, unsigned ldm, size_t elem, const char *fn) {
    if ((uintptr_t)p % 32 != 0 || ldm * elem % 16 != 0) {
        fprintf(stderr, "cuda_emu: wmma::%s: tile %p, ldm %u: not 32-byte aligned or rows not "
                "a multiple of 16 bytes\n", fn, p, ldm);
        abort();
    }
}

/* a 16 x 16 tile at p (leading dimension ldm, in elements): row-major or column-major */
template <class Use, class T, class L>
static inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> &f, const T *p,
                                    unsigned ldm) {
    constexpr bool col = std::is_same<L, col_major>::value;
    cuda_emu::syncwarp();
    check_tile(p, ldm, sizeof(T), "load_matrix_sync");
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            f.x[r * 16 + c] = p[col ? (size_t)c * ldm + r : (size_t)r * ldm + c];
}
static inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p,
                                    unsigned ldm, layout_t l) {
    cuda_emu::syncwarp();
    check_tile(p, ldm, sizeof(float), "load_matrix_sync");
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            f.x[r * 16 + c] = l == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
}
static inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,
                                     unsigned ldm, layout_t l) {
    cuda_emu::syncwarp();
    check_tile(p, ldm, sizeof(float), "store_matrix_sync");
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++) {
            size_t at = l == mem_row_major ? (size_t)r * ldm + c : (size_t)c * ldm + r;
            p[at] = f.x[r * 16 + c];
        }
}
template <class Use, class T, class L>
static inline void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, T v) {
    for (int i = 0; i < 256; i++) f.x[i] = v;
}
/* d = a b + c */
template <class T, class LA, class LB>
static inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                            const fragment<matrix_a, 16, 16, 16, T, LA> &a,
                            const fragment<matrix_b, 16, 16, 16, T, LB> &b,
                            const fragment<accumulator, 16, 16, 16, float> &c) {
    cuda_emu::syncwarp();
    float out[256];
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 16; n++) {
            float s = c.x[r * 16 + n];
            for (int k = 0; k < 16; k++) s += as_float(a.x[r * 16 + k]) * as_float(b.x[k * 16 + n]);
            out[r * 16 + n] = s;
        }
    for (int i = 0; i < 256; i++) d.x[i] = out[i];
}
} // namespace wmma
} // namespace nvcuda

#endif
