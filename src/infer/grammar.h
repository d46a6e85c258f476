/* grammar.h - GBNF grammars over bytes, for constrained decoding (grammar.c).
 *
 * The notation is llama.cpp's GBNF: rules `name ::= alternatives`, literals "...",
 * character classes [a-z] [^"\\], `.`, groups ( ), repetition * + ? {m} {m,} {m,n},
 * comments from #. `root` is where a text starts. Classes and `.` are sets of Unicode
 * code points, compiled to their UTF-8 byte sequences, so the matcher sees bytes only
 * and a token may end in the middle of a character.
 *
 *   andrea_grammar *g = andrea_grammar_parse(text, len);       // NULL: andrea_error()
 *   andrea_grammar_state *s = andrea_grammar_start(g);
 *   if (andrea_grammar_allows(g, s, bytes, n)) andrea_grammar_advance(g, s, bytes, n);
 *   andrea_grammar_can_end(s);  // the text so far is a whole sentence of the grammar
 */
#ifndef ANDREA_INFER_GRAMMAR_H
#define ANDREA_INFER_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

typedef struct andrea_grammar andrea_grammar;
typedef struct andrea_grammar_state andrea_grammar_state;

/* NULL with andrea_error() naming the line and column of the fault. */
andrea_grammar *andrea_grammar_parse(const char *text, size_t n);
void andrea_grammar_free(andrea_grammar *g);

/* Where every text starts; NULL on out of memory (or a grammar that recurses on its left). */
andrea_grammar_state *andrea_grammar_start(const andrea_grammar *g);
void andrea_grammar_state_free(andrea_grammar_state *s);
/* 1 when bytes (n > 0) can come next, 0 when they break the grammar, -1 on out of memory. */
int andrea_grammar_allows(const andrea_grammar *g, const andrea_grammar_state *s,
                          const uint8_t *bytes, size_t n);
/* Moves s past bytes: 0, or -1 (s unchanged) when they break the grammar or memory ran out. */
int andrea_grammar_advance(const andrea_grammar *g, andrea_grammar_state *s,
                           const uint8_t *bytes, size_t n);
/* 1 when the text so far is complete (it may end here). */
int andrea_grammar_can_end(const andrea_grammar_state *s);
/* 1 when some byte may still follow. */
int andrea_grammar_can_continue(const andrea_grammar_state *s);

#endif
