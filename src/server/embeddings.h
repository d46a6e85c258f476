/* embeddings.h - POST /v1/embeddings (embeddings.c). */
#ifndef ANDREA_SERVER_EMBEDDINGS_H
#define ANDREA_SERVER_EMBEDDINGS_H

#include "andrea_writer.h"
#include "request.h"
#include "server.h"

/* The response of an embeddings request body into out, computed on the worker thread.
 * 0, or -1 with e (400 for the request, 429, or 408 when give_up(user) said so). */
int serve_embeddings(const serve_config *cfg, const char *body, size_t len, andrea_buffer *out,
                     serve_error *e, int (*give_up)(void *user), void *user);

#endif
