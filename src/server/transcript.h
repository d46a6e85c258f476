/* transcript.h - chat messages as ANDREA's turn format (transcript.c). */
#ifndef ANDREA_SERVER_TRANSCRIPT_H
#define ANDREA_SERVER_TRANSCRIPT_H

#include <jansson.h>

#include "andrea.h"
#include "request.h"

/* messages -> ANDREA's turn format, ending with "< " for the reply, appended to t. A
 * tool's answer is a turn of the user's side ("> tool NAME: text"); a `name` prefixes the
 * text ("NAME: "). 0, or -1 with e (400 naming messages[i], or 500). */
int serve_chat_transcript(json_t *msgs, andrea_bytes *t, serve_error *e);

#endif
