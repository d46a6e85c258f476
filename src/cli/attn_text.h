/* attn_text.h - matrices of `andrea attention` and `andrea explain` as terminal text:
 * labels padded or cut to a column, scores with as many decimals as fit. */
#ifndef ANDREA_CLI_ATTN_TEXT_H
#define ANDREA_CLI_ATTN_TEXT_H

#include <stdio.h>

#include "andrea.h"
#include "andrea_inspect.h"

/* Display width of a UTF-8 string (code points; a stray byte counts as one). */
int attn_text_width(const char *s);
/* Writes s to f padded (right-aligned if right) or cut to exactly width columns. */
void attn_print_cell(FILE *f, const char *s, int width, int right);
/* Prints a finite score in a field of `width` >= 8 columns, with as many
 * decimals (3 down to 0) as fit when the largest |score| shown is maxabs;
 * infinities as -inf/inf. */
void attn_print_score(FILE *f, double x, double maxabs, int width);
/* The prompt's tokens for command cmd ("attention", "explain"), at most max_T of them;
 * an empty or too long prompt is refused in lang with one line on stderr. 0 or -1. */
int attn_prompt_tokens(const char *cmd, const char *lang, const andrea_tokenizer *tok,
                       const char *prompt, int bos, int max_T, andrea_attn_tokens *tk);

#endif
