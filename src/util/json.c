/* json.c - JSON string escaping for logs: quotes, backslashes, control bytes, bad UTF-8. */
#include "util/json.h"

#include <stdint.h>

#include "util/utf8.h"

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
            uint32_t cp;
            size_t len = (size_t)andrea_utf8_decode(p + i, n - i, &cp);
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
