/* utf8.h - strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above
 * U+10FFFF. */
#ifndef ANDREA_UTF8_H
#define ANDREA_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the code point at s (n bytes available) into *cp; returns its length 1-4,
 * or 0 when s does not start with a valid sequence (or n is too short for it). */
int andrea_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);
/* Writes cp (<= U+10FFFF, not a surrogate) to out; returns its length 1-4. */
int andrea_utf8_encode(uint32_t cp, uint8_t out[4]);

#endif
