/* json.h - write a byte string as a JSON string literal, to a FILE* or an andrea_writer. */
#ifndef ANDREA_UTIL_JSON_H
#define ANDREA_UTIL_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "andrea_writer.h"

/* Flags of andrea_json_string; 0 gives the log style of andrea_json_write_string. */
enum {
    /* < > & as \u003c \u003e \u0026, so the text can sit inside an HTML <script> */
    ANDREA_JSON_SCRIPT_SAFE = 1,
    /* a byte that starts no valid UTF-8 sequence becomes \u00XX (the code point of the
     * same value, so no byte is lost) instead of U+FFFD */
    ANDREA_JSON_KEEP_BYTES = 2,
    /* every control byte as \u00XX, \n included (no \n shorthand) */
    ANDREA_JSON_HEX_CONTROLS = 4,
};

/* Quotes included; valid UTF-8 (src/util/utf8.h) is written as is. 0 or -1 (w->err). */
int andrea_json_string(andrea_writer *w, const void *bytes, size_t n, unsigned flags);
/* The log style (flags 0) to a FILE*: invalid UTF-8 becomes U+FFFD, \n stays \n. */
void andrea_json_write_string(FILE *f, const void *bytes, size_t n);

#endif
