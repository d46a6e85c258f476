/* explorer.h - the attention explorer of `andrea attention --html` for a text (explorer.c). */
#ifndef ANDREA_SERVER_EXPLORER_H
#define ANDREA_SERVER_EXPLORER_H

#include "andrea_writer.h"
#include "request.h"
#include "server.h"

/* The explorer page of text (n bytes; its last cfg->attn_max_tokens tokens) into out.
 * 0, or -1 with e. */
int serve_explorer(const serve_config *cfg, const char *text, size_t n, andrea_buffer *out,
                   serve_error *e);

#endif
