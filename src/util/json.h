/* json.h - write a byte string as a JSON string literal (invalid UTF-8 becomes U+FFFD). */
#ifndef ANDREA_UTIL_JSON_H
#define ANDREA_UTIL_JSON_H

#include <stddef.h>
#include <stdio.h>

void andrea_json_write_string(FILE *f, const void *bytes, size_t n);

#endif
