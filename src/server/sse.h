/* sse.h - OpenAI's response JSON (sse.c): streamed chunks as Server-Sent Events, whole
 * responses, usage and errors, written into an andrea_writer. */
#ifndef ANDREA_SERVER_SSE_H
#define ANDREA_SERVER_SSE_H

#include "andrea_writer.h"
#include "scheduler.h"

/* "data: {chunk}\n\n" for choice `index`: text (n bytes), its tokens' log-probabilities,
 * finish (NULL while running). first: the chat stream's opening chunk (role). */
int sse_chunk(andrea_writer *w, const serve_job *j, const andrea_tokenizer *tok, int index,
              const void *text, size_t n, const serve_tokprob *lp, int n_lp, const char *finish,
              int first);
/* A finished choice of a streamed request with tools (held back until it ended): its
 * tool_calls delta, or its whole text as one delta, then the finish chunk. */
int sse_tool_answer(andrea_writer *w, const serve_job *j, const andrea_tokenizer *tok, int index);
/* The closing events: usage (when stream_options.include_usage) and "data: [DONE]". */
int sse_end(andrea_writer *w, const serve_job *j);
/* An error in the middle of a stream, then [DONE]. */
int sse_error(andrea_writer *w, const serve_error *e);
/* The whole response of a finished, non-streamed job. */
int serve_response_json(andrea_writer *w, const serve_job *j, const andrea_tokenizer *tok);
/* {"error":{"message","type","param","code"}} */
int serve_error_json(andrea_writer *w, const serve_error *e);

#endif
