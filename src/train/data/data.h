/*
 * data.h - a tokenized corpus split into training and validation parts, and
 * the batches drawn from it. Training batches are windows at uniformly random
 * offsets (nanoGPT's sampler), so the data position is the sampler's RNG
 * state, which checkpoints save. Validation walks the held-out tail in
 * consecutive windows, always the same ones.
 */
#ifndef ANDREA_TRAIN_DATA_H
#define ANDREA_TRAIN_DATA_H

#include <stdint.h>

#include "andrea.h"
#include "andrea_tokenizer.h"

typedef struct {
    int32_t *tokens;  /* all tokens: [0, n_train) train, [n_train, n) validation; NULL when
                       * mapped */
    int64_t n, n_train;
    uint64_t checksum; /* hash of the source bytes */
    /* a token file left mapped (owned): training windows are read from the map, and only
     * the validation tokens [n_train, n) are in memory, in val */
    andrea_token_file *tf;
    int32_t *val;
} andrea_dataset;

/* Reads a whole file (any bytes). Errors name the file. */
int andrea_read_file(const char *path, unsigned char **data, size_t *len);
/* Takes ownership of tokens (malloc'd). The last val_fraction of tokens is validation.
 * Both parts must hold at least one window of T + 1 tokens. */
int andrea_dataset_init(andrea_dataset *d, int32_t *tokens, int64_t n, float val_fraction, int T,
                        uint64_t checksum, const char *what);
void andrea_dataset_free(andrea_dataset *d);
/* A token file, kept mapped (owned on success): no copy of the training tokens. */
int andrea_dataset_init_mapped(andrea_dataset *d, andrea_token_file *tf, float val_fraction, int T,
                               uint64_t checksum, const char *what);
/* The validation tokens: n - n_train of them. */
const int32_t *andrea_dataset_val(const andrea_dataset *d);

/* x, y (B, T): random training windows, y = x shifted by one. */
void andrea_dataset_train_batch(const andrea_dataset *d, andrea_rng *rng, int B, int T,
                                int32_t *x, int32_t *y);
/* Rows row0..row0+nrows-1 of that batch of B rows (the RNG advances by all B): one
 * rank's share of a global batch, reading only its own windows. */
void andrea_dataset_train_rows(const andrea_dataset *d, andrea_rng *rng, int B, int row0,
                               int nrows, int T, int32_t *x, int32_t *y);
/* Number of consecutive validation windows of T + 1 tokens. */
int64_t andrea_dataset_val_windows(const andrea_dataset *d, int T);
/* Windows first..first+B-1; past the end rows are padding (targets -1, ignored). */
void andrea_dataset_val_batch(const andrea_dataset *d, int64_t first, int B, int T, int32_t *x,
                              int32_t *y);

#endif
