/*
 * docset.h - one source of a manifest as documents of token ids, kept apart so that each
 * has an index (the curriculum's coverage counts them). Document boundaries:
 *   text    the file (or its byte range) cut by the source's split (manifest.h): none,
 *           line, paragraph (blank lines), book (two or more blank lines) or separator;
 *           consecutive pieces merged until min_bytes
 *   chat    one JSONL line = one conversation, rendered in ANDREA's turn format:
 *           "> user text\n" and "< assistant text\n", one line per message
 *   tokens  a token file from `andrea prepare`: the runs between BOS tokens
 * The last val_fraction of the documents (at least one, at most all but one) are held
 * out for validation; a source of one document holds out the tail of its tokens instead.
 */
#ifndef ANDREA_TRAIN_DOCSET_H
#define ANDREA_TRAIN_DOCSET_H

#include <stdint.h>

#include "andrea_tokenizer.h"
#include "train/curriculum/manifest.h"

typedef struct {
    int32_t *tok;       /* every document's tokens, in file order, no separators */
    int64_t *start;     /* document d is tok[start[d], start[d + 1]); (n_docs + 1) */
    int64_t n_docs, n_train; /* documents [0, n_train) train, [n_train, n_docs) validation */
    int32_t *val;       /* validation stream: BOS doc BOS doc ... BOS (n_val tokens) */
    int64_t n_val;
    uint64_t checksum;  /* of the tokens and the boundaries: the data's identity */
} andrea_docset;

/* Loads source s with tokenizer tok; 0 or -1 (errors name the source and file). */
int andrea_docset_load(andrea_docset *d, const andrea_manifest_source *s,
                       const andrea_tokenizer *tok, double val_fraction);
void andrea_docset_free(andrea_docset *d);

/* One JSONL chat line ({"messages": [{"role": "user"|"assistant", "content": ...}]})
 * appended to out in the turn format above. 0, or -1 with andrea_error() saying what is
 * wrong with the line (without its number). Needs jansson. */
int andrea_chat_render(const char *line, size_t n, andrea_bytes *out);

#endif
