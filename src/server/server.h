/*
 * server.h - `andrea serve`: an OpenAI-compatible HTTP front end (docs/server.md).
 * The server is a front end like the CLI: it prints, logs and owns threads; the library
 * only decodes. Its parts, one file each:
 *   http.c       libmicrohttpd: the access handler (methods, auth, content types, body
 *                limits, CORS), connection limits, the header watchdog
 *   respond.c    answers: headers, OpenAI's error JSON, what a waiting connection knows
 *   routes.c     what each route answers
 *   request.c    one completion request's JSON, parsed and checked into serve_params
 *   transcript.c chat messages in ANDREA's turn format
 *   schema.c     JSON Schema and tools as GBNF (constrained decoding: src/infer/grammar.h)
 *   info.c       /v1/models, /props, /tokenize, /detokenize
 *   embeddings.c /v1/embeddings
 *   worker.c     the thread of full forward passes (embeddings, attention pages)
 *   scheduler.c  the thread that owns the batch: continuous batching, queue, timeouts,
 *                the prompt cache
 *   sequence.c   one sequence's next token and the text it may release
 *   sse.c        OpenAI's JSON: stream chunks (Server-Sent Events), whole responses, errors
 *   metrics.c    counters and histograms, written as Prometheus text
 *   explorer.c   GET/POST /attention: the library's attention explorer for a text
 *   page.html    the chat page at / (embedded at build time as serve_page_html)
 */
#ifndef ANDREA_SERVER_H
#define ANDREA_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "andrea.h"
#include "andrea_tokenizer.h"

typedef struct {
    const char *host;      /* address to bind (127.0.0.1) */
    int port;              /* 0: any free port (printed) */
    const char *api_key;   /* NULL: no auth; else "Authorization: Bearer KEY" on /v1 and /attention */
    const char *model_name;/* the id /v1/models lists */
    int parallel;          /* sequences decoded together (batch slots) */
    int queue;             /* requests waiting for a slot before 429 */
    size_t max_body;       /* bytes of a request body before 413 */
    int max_tokens;        /* the largest max_tokens a request may ask (and the default) */
    int max_prompt;        /* prompt tokens at most (also bounded by the context) */
    double timeout;        /* seconds a request may take, queue included */
    int conn_timeout;      /* seconds a connection may idle (MHD's timeout) */
    int header_timeout;    /* seconds to send a whole request (headers and body) */
    int max_conns;         /* open connections at most */
    int max_conns_per_client; /* open connections from one IP address at most */
    const char *cors;      /* NULL: no CORS headers; else the one origin allowed */
    int attn_max_tokens;   /* tokens of an /attention text (the last ones are kept) */
    andrea_sampler sampler;/* defaults for fields a request leaves out */
    const andrea_model *m;
    const andrea_tokenizer *tok;
} serve_config;

/* Serves until SIGINT/SIGTERM. Returns 0, or 1 after printing why it could not start. */
int serve_run(const serve_config *cfg);

extern const unsigned char serve_page_html[]; /* generated from page.html */
extern const size_t serve_page_html_len;

#endif
