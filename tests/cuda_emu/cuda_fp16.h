/* cuda_fp16.h (the emulator's) - __half and the conversions the backend uses, through the
 * compiler's _Float16 (IEEE binary16, conversions rounded to nearest even as
 * __float2half_rn is). tests/cuda_emu/README.md. */
#ifndef ANDREA_CUDA_EMU_FP16_H
#define ANDREA_CUDA_EMU_FP16_H

#include <stdint.h>
#include <string.h>

struct __half {
    unsigned short bits;
};

static inline __half __float2half_rn(float f) {
    _Float16 h = (_Float16)f;
    __half r;
    memcpy(&r.bits, &h, sizeof r.bits);
    return r;
}
static inline __half __float2half(float f) { return __float2half_rn(f); }
static inline float __half2float(__half h) {
    _Float16 v;
    memcpy(&v, &h.bits, sizeof v);
    return (float)v;
}
static inline unsigned short __half_as_ushort(__half h) { return h.bits; }
static inline __half __ushort_as_half(unsigned short u) {
    __half r;
    r.bits = u;
    return r;
}

#endif
