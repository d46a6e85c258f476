/* hash.c - FNV-1a 64: h = (h ^ unit) * 0x100000001b3 over 64-bit words, or over bytes. */
#include "util/hash.h"

#include <string.h>

uint64_t andrea_hash(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8); /* little-endian hosts only (checked at build time) */
        h = (h ^ w) * 0x100000001b3ull;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, p + i, n - i);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return h;
}

uint64_t andrea_fnv1a64(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "andrea's file formats are little-endian; big-endian hosts are not supported"
#endif
