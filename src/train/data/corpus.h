/*
 * corpus.h - turn what the user gave (a text file or a token file from
 * `andrea prepare`, and a tokenizer spec) into one int32 token stream.
 */
#ifndef ANDREA_TRAIN_CORPUS_H
#define ANDREA_TRAIN_CORPUS_H

#include <stdint.h>

#include "andrea_tokenizer.h"

/* *tok: if non-NULL on entry it is used (resume: the checkpoint's tokenizer);
 * else it is made from spec: "byte" (NULL = byte), "char" (trained on the
 * text), or anything andrea_tokenizer_open() accepts. Token files carry the
 * checksum of the tokenizer that made them; a mismatch is an error.
 * checksum identifies the token stream (hash of the int32 ids). */
int andrea_corpus_load(const char *data_path, const char *spec, andrea_tokenizer **tok,
                       int32_t **tokens, int64_t *n, uint64_t *checksum);

/* A token file left mapped, for training that reads only the windows it uses: *tok as in
 * andrea_corpus_load, checksum the same as andrea_corpus_load's. NULL on error. */
andrea_token_file *andrea_corpus_map(const char *path, const char *spec, andrea_tokenizer **tok,
                                     uint64_t *checksum);

/* Is this file a token file (magic "ANDRTOKS")? */
int andrea_is_token_file(const char *path);

#endif
