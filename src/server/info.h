/* info.h - the routes that describe the model and its tokenizer (info.c): /v1/models,
 * /v1/models/{id}, /props, POST /tokenize and /detokenize. No forward pass: they answer
 * on the connection's thread. */
#ifndef ANDREA_SERVER_INFO_H
#define ANDREA_SERVER_INFO_H

#include "andrea_writer.h"
#include "request.h"
#include "server.h"

/* The model object of /v1/models/{id}, or with list the {"object":"list"} of /v1/models. */
void serve_models_json(const serve_config *cfg, andrea_writer *w, int list);
/* llama-server's /props: the model, context, slots, tokenizer, default sampling. */
void serve_props_json(const serve_config *cfg, andrea_writer *w, int queued, int active);
/* {"content": text, "with_pieces": bool} -> {"tokens": [...]}; 0, or -1 with e. */
int serve_tokenize(const serve_config *cfg, const char *body, size_t len, andrea_writer *w,
                   serve_error *e);
/* {"tokens": [ids]} -> {"content": text}; 0, or -1 with e. */
int serve_detokenize(const serve_config *cfg, const char *body, size_t len, andrea_writer *w,
                     serve_error *e);

#endif
