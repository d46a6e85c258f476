/* transpose.h - 16 x 16 (AVX-512) and 8 x 8 (AVX) register transposes of 32-bit elements, for packing
 * transposed operands: the forward's B = w^T in fp32 (matmul.c) and, as bf16 pairs, in
 * bf16 (matmul_bf16.c). Shuffles move bits only, so any 32-bit payload goes through. */
#ifndef ANDREA_KERNELS_TRANSPOSE_H
#define ANDREA_KERNELS_TRANSPOSE_H

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ANDREA_HAVE_TRANSPOSE16 1

/* dst[i lds + j] = src[j lsrc + i] for i, j < 16: unpack, then shuffles within and across
 * 128-bit lanes (64 instructions for 256 elements, against 512 scalar loads and stores). */
__attribute__((target("avx512f"))) static inline void transpose16(float *dst, long lds,
                                                                  const float *src, long lsrc) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * lsrc);
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 2; i++)
        for (int q = 0; q < 4; q++) {
            t[8 * i + q] = _mm512_shuffle_f32x4(r[8 * i + q], r[8 * i + 4 + q], 0x88);
            t[8 * i + 4 + q] = _mm512_shuffle_f32x4(r[8 * i + q], r[8 * i + 4 + q], 0xDD);
        }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    }
    for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + i * lds, r[i]);
}

/* The same for 8 x 8 (AVX): the AVX2 tile's transposed B in fp32 (matmul.c). */
__attribute__((target("avx2"))) static inline void transpose8(float *dst, long lds, const float *src,
                                                       long lsrc) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * lsrc);
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        r[4 * i + 0] = _mm256_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm256_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
    }
    for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + i * lds, t[i]);
}

#endif

#endif
