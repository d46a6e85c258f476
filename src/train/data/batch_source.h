/*
 * batch_source.h - where training batches come from. The trainer asks a source for
 * batches and, at every checkpoint, for its position as bytes (the BATC section); a
 * resume hands the bytes back. Today's source is one tokenized corpus with random
 * windows (corpus_source.c); a curriculum over many sources is another implementation
 * of the same struct, with whatever position it needs (several RNGs, offsets, a bandit).
 *
 * Adding a source: fill the function pointers, start its saved position with its kind
 * name (8 bytes, NUL-padded) so that a resume with another kind of source is refused,
 * and have the trainer's setup (run_setup.c) create it.
 */
#ifndef ANDREA_TRAIN_BATCH_SOURCE_H
#define ANDREA_TRAIN_BATCH_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "andrea.h"

typedef struct andrea_batch_source andrea_batch_source;
struct andrea_batch_source {
    const char *kind; /* at most 8 bytes: "corpus"; the first 8 bytes of its position */
    /* x, y (B, T): the next training batch, y = the tokens after x. 0 or -1 (error). */
    int (*next)(andrea_batch_source *s, int B, int T, int32_t *x, int32_t *y);
    /* The position as bytes, kind first (at most cap); returns the length. */
    size_t (*save)(const andrea_batch_source *s, uint8_t *out, size_t cap);
    /* Continues from a saved position; from names the checkpoint for errors. */
    int (*restore)(andrea_batch_source *s, const uint8_t *pos, size_t n, const char *from);
    /* One line for people: "'data.txt' 1115394 tokens". */
    void (*describe)(const andrea_batch_source *s, char *buf, size_t n);
    /* Tokens for training and for validation (the held-out part); validation returns
     * NULL (n = 0) when there is none. */
    void (*sizes)(const andrea_batch_source *s, int64_t *n_train, int64_t *n_val);
    const int32_t *(*validation)(const andrea_batch_source *s, int64_t *n);
    void (*free)(andrea_batch_source *s);
    void *state;
    /* Optional (NULL for the corpus): a source of several parts (the curriculum's sources).
     * observe: the loss of the step (1-based, completed) its batches were drawn for, with
     * log.jsonl to write its own lines to (may be NULL); 0 or -1. parts: how many parts
     * have a validation stream of their own; part_validation: part k's stream and name. */
    int (*observe)(andrea_batch_source *s, int step, float loss, FILE *log);
    int (*parts)(const andrea_batch_source *s);
    const int32_t *(*part_validation)(const andrea_batch_source *s, int k, int64_t *n,
                                      const char **name);
};

/* The corpus source: data_path tokenized by tok (owned by the caller, must outlive the
 * source); val_fraction of the tokens held out; batches are windows of T + 1 tokens at
 * uniformly random offsets drawn from an RNG seeded with seed. *tok may be NULL: made
 * from tokenizer_spec (see andrea_corpus_load) and returned. */
andrea_batch_source *andrea_corpus_source_open(const char *data_path, const char *tokenizer_spec,
                                               andrea_tokenizer **tok, float val_fraction, int T,
                                               uint64_t seed);

/* Data parallel: next(B) returns rows rank*B .. rank*B+B-1 of the global batch of
 * ranks*B rows (the RNG advances by all of them); only those windows are read. */
void andrea_corpus_source_share(andrea_batch_source *s, int rank, int ranks);

/* The corpus position codec (32 bytes: "corpus\0\0", data checksum, RNG state), shared
 * with the checkpoint code for version-1 files, which stored exactly these fields. */
#define ANDREA_CORPUS_POS_BYTES 32

/* The curriculum source ("sources", curriculum.c): the sources of the run manifest at
 * manifest_path, tokenized by tok (or by the manifest's tokenizer / tokenizer_spec when
 * *tok is NULL: made and returned), one chosen per step by the manifest's policy. */
andrea_batch_source *andrea_sources_open(const char *manifest_path, const char *tokenizer_spec,
                                         andrea_tokenizer **tok, float val_fraction, int T,
                                         uint64_t seed);
void andrea_corpus_position_encode(uint64_t data_checksum, const uint64_t rng[2], uint8_t *out);
int andrea_corpus_position_decode(const uint8_t *pos, size_t n, uint64_t *data_checksum,
                                  uint64_t rng[2]);

#endif
