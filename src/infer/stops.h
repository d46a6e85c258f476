/* stops.h - stop strings and hold-back for a text generated token by token (stops.c),
 * the one copy behind andrea_generate() (generate, chat, training's samples) and the
 * server's sequences. Internal to the library: not part of include/.
 *
 * A generated text is appended to `pend`; what can no longer be the start of a stop
 * string, and is not half of a UTF-8 character, may be released (streamed); a stop
 * string ends the text, and neither it nor anything after it is ever released.
 *
 *   andrea_stops st;
 *   andrea_stops_init(&st, stops, n_stops);
 *   per token:  andrea_stops_push(&st, bytes, n);
 *               int stop = andrea_stops_check(&st, &rel);   // emit pend.data[0, rel)
 *               andrea_stops_release(&st, stop ? st.pend.len : rel);
 *   at the end: the rest of pend (not a stop string: it can be released whole)
 *   andrea_stops_free(&st);
 */
#ifndef ANDREA_INFER_STOPS_H
#define ANDREA_INFER_STOPS_H

#include <stddef.h>

#include "andrea_tokenizer.h" /* andrea_bytes */

typedef struct {
    const char *const *stops; /* not owned; an empty one never matches */
    int n_stops;
    size_t hold;              /* the longest stop string less one: bytes that could begin one */
    andrea_bytes pend;        /* text not yet released */
    size_t scan_from;         /* stop strings are looked for from here (before it: an echo) */
} andrea_stops;

/* No text yet; stops stay the caller's and must outlive st. */
void andrea_stops_init(andrea_stops *st, const char *const *stops, int n_stops);
void andrea_stops_free(andrea_stops *st);
/* Appends a token's bytes: 0, or -1 on out of memory. */
int andrea_stops_push(andrea_stops *st, const void *bytes, size_t n);
/* Marks all of pend as an echoed prompt: released as it is, never part of a stop string. */
void andrea_stops_echoed(andrea_stops *st);
/* 1 when pend holds a stop string: *rel = the bytes before the earliest one. Otherwise 0,
 * and *rel = the bytes that may be released now (never half of a UTF-8 character). */
int andrea_stops_check(const andrea_stops *st, size_t *rel);
/* Drops the first n bytes of pend (they were released, or n = pend.len after a stop). */
void andrea_stops_release(andrea_stops *st, size_t n);

#endif
