/* json.c - JSON string escaping for logs and exports: quotes, backslashes, control
 * bytes, bad UTF-8 (judged by the one decoder, andrea_utf8_decode). */
#include "util/json.h"

#include <stdint.h>

#include "util/utf8.h"

int andrea_json_string(andrea_writer *w, const void *bytes, size_t n, unsigned flags) {
    const uint8_t *p = bytes;
    size_t run = 0; /* start of the bytes copied as they are, written in one call */
    andrea_write(w, "\"", 1);
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        uint32_t cp;
        int len = 1;
        char esc[8];
        const char *e = NULL;
        if (c == '"') e = "\\\"";
        else if (c == '\\') e = "\\\\";
        else if (c == '\n' && !(flags & ANDREA_JSON_HEX_CONTROLS)) e = "\\n";
        else if (c < 0x20 || c == 0x7F ||
                 ((flags & ANDREA_JSON_SCRIPT_SAFE) && (c == '<' || c == '>' || c == '&')))
            e = esc;
        else if ((len = andrea_utf8_decode(p + i, n - i, &cp)) == 0)
            e = (flags & ANDREA_JSON_KEEP_BYTES) ? esc : "\\ufffd";
        if (!e) {
            i += (size_t)len;
            continue;
        }
        if (e == esc) snprintf(esc, sizeof esc, "\\u%04x", c);
        andrea_write(w, p + run, i - run);
        andrea_write_str(w, e);
        run = ++i;
    }
    andrea_write(w, p + run, n - run);
    return andrea_write(w, "\"", 1);
}

void andrea_json_write_string(FILE *f, const void *bytes, size_t n) {
    andrea_writer w = andrea_writer_file(f);
    andrea_json_string(&w, bytes, n, 0);
}
