/* utf8.c - the one UTF-8 decoder and encoder of the library (tokenizers, the coherence
 * gate, the attention renderers and the JSON writer all use these). */
#include "util/utf8.h"

int andrea_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len;
    uint32_t v, min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2; v = c & 0x1f; min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3; v = c & 0x0f; min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4; v = c & 0x07; min = 0x10000;
    } else {
        return 0;
    }
    if ((size_t)len > n) return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

int andrea_utf8_encode(uint32_t cp, uint8_t out[4]) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xc0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xe0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (uint8_t)(0xf0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}
