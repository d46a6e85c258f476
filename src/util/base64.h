/* base64.h - bytes as base64 (RFC 4648, with padding) into an andrea_writer: the report's
 * data: URIs and the server's base64 embeddings. */
#ifndef ANDREA_UTIL_BASE64_H
#define ANDREA_UTIL_BASE64_H

#include <stddef.h>

#include "andrea_writer.h"

void andrea_base64_write(andrea_writer *w, const void *bytes, size_t n);

#endif
