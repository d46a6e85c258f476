/* request.h - a completion or chat request, parsed and checked (request.c), and the
 * OpenAI-style error every check reports. */
#ifndef ANDREA_SERVER_REQUEST_H
#define ANDREA_SERVER_REQUEST_H

#include <stdint.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "infer/grammar.h"
#include "server.h"

enum { SERVE_COMPLETION = 0, SERVE_CHAT = 1 };
enum { SERVE_MAX_STOPS = 5, SERVE_MAX_TOP = 20, SERVE_MAX_N = 8, SERVE_MAX_BIAS = 300 };

/* {"error":{"message","type","param","code"}} with this HTTP status */
typedef struct {
    int status;
    char message[320];
    const char *type;  /* "invalid_request_error", "authentication_error", ... */
    char param[64];    /* the field at fault, or "" (a copy: a request's keys go with it) */
    const char *code;  /* NULL or a short machine name ("context_length_exceeded") */
} serve_error;

/* Fills e and returns -1 (so checks read `return serve_fail(...)`). */
#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
int serve_fail(serve_error *e, int status, const char *type, const char *param, const char *code,
               const char *fmt, ...);

/* A request's "model" (NULL: none given): 0, or 404 model_not_found unless it is ours. */
int serve_check_model(const serve_config *cfg, const char *name, serve_error *e);

typedef struct {
    int kind;              /* SERVE_COMPLETION or SERVE_CHAT */
    int stream, include_usage;
    int n;                 /* choices */
    int max_tokens;
    andrea_sampler sampler;
    uint64_t seed;
    int seed_given;
    char *stops[SERVE_MAX_STOPS]; /* owned; chat adds "\n>" (the next user turn) */
    int n_stops;
    int logprobs;          /* 1: report the chosen tokens' log-probabilities */
    int top_logprobs;      /* and this many alternatives (0..SERVE_MAX_TOP) */
    int echo;              /* completions: the prompt comes back before the completion, with
                            * its tokens' log-probabilities when logprobs is set */
    float frequency_penalty, presence_penalty; /* OpenAI's, over the generated tokens */
    int n_bias;            /* logit_bias: added to these tokens' logits before sampling */
    int32_t bias_id[SERVE_MAX_BIAS];
    float bias[SERVE_MAX_BIAS];
    andrea_ids prompt;     /* the prompt's tokens (chat: the transcript in ANDREA's format) */
    andrea_grammar *grammar; /* owned, or NULL: constrained decoding (response_format,
                              * grammar, tools) */
    int tools;             /* chat: the answer may be a function call (tool_calls) */
    int cache_prompt;      /* reuse a slot's cache whose tokens start the prompt (default 1) */
} serve_params;

/* Parses body as a request of this kind against the server's limits. 0, or -1 with e. */
int serve_parse_request(const serve_config *cfg, int kind, const char *body, size_t len,
                        serve_params *out, serve_error *e);
void serve_params_free(serve_params *p);

#endif
