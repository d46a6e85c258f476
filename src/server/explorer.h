/* explorer.h - the attention explorer of `andrea attention --html` for a text (explorer.c). */
#ifndef ANDREA_SERVER_EXPLORER_H
#define ANDREA_SERVER_EXPLORER_H

#include "andrea_writer.h"
#include "request.h"
#include "server.h"

/* The explorer page of text (n bytes; its last cfg->attn_max_tokens tokens) into out, on
 * the worker thread. 0, or -1 with e (429 when the worker's queue is full, 408 when
 * give_up(user) said so while it waited). */
int serve_explorer(const serve_config *cfg, const char *text, size_t n, andrea_buffer *out,
                   serve_error *e, int (*give_up)(void *user), void *user);

#endif
