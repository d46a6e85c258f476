/* base64.c - see base64.h. */
#include "util/base64.h"

#include <stdint.h>

void andrea_base64_write(andrea_writer *w, const void *bytes, size_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = bytes;
    char out[4];
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        out[0] = A[v >> 18 & 63];
        out[1] = A[v >> 12 & 63];
        out[2] = i + 1 < n ? A[v >> 6 & 63] : '=';
        out[3] = i + 2 < n ? A[v & 63] : '=';
        andrea_write(w, out, 4);
    }
}
