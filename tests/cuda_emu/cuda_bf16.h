/* cuda_bf16.h (the emulator's) - __nv_bfloat16 and its conversions: round to nearest even
 * (what __float2bfloat16 does), NaN kept a NaN. tests/cuda_emu/README.md. */
#ifndef ANDREA_CUDA_EMU_BF16_H
#define ANDREA_CUDA_EMU_BF16_H

#include <stdint.h>
#include <string.h>

struct __nv_bfloat16 {
    unsigned short bits;
};

static inline __nv_bfloat16 __float2bfloat16(float f) {
    unsigned u;
    memcpy(&u, &f, sizeof u);
    __nv_bfloat16 r;
    if ((u & 0x7fffffffu) > 0x7f800000u) r.bits = (unsigned short)((u >> 16) | 0x40u);
    else r.bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return r;
}
static inline float __bfloat162float(__nv_bfloat16 h) {
    unsigned u = (unsigned)h.bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
