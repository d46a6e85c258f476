/* json.c - JSON string escaping for logs: quotes, backslashes, control bytes, bad UTF-8. */
#include "util/json.h"

#include <stdint.h>

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if it is not valid. */
static size_t utf8_len(const uint8_t *p, size_t n) {
    uint8_t c = p[0];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    if (len == 2 && c < 0xC2) return 0;                         /* overlong */
    if (len == 3 && c == 0xE0 && p[1] < 0xA0) return 0;         /* overlong */
    if (len == 3 && c == 0xED && p[1] >= 0xA0) return 0;        /* surrogate */
    if (len == 4 && (c > 0xF4 || (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90)))
        return 0;
    return len;
}

void andrea_json_write_string(FILE *f, const void *bytes, size_t n) {
    const uint8_t *p = bytes;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c == '\n') {
            fputs("\\n", f);
            i++;
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            size_t len = utf8_len(p + i, n - i);
            if (len == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(p + i, 1, len, f);
                i += len;
            }
        }
    }
    fputc('"', f);
}
