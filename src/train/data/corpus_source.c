/*
 * corpus_source.c - the batch source of one tokenized corpus: the last val_fraction of
 * the tokens is validation, training batches are windows at uniformly random offsets
 * (nanoGPT's sampler), so the position is the sampler's RNG state plus the data's
 * checksum (a resume on other data is refused).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/data/batch_source.h"
#include "train/data/corpus.h"
#include "train/data/data.h"
#include "util/error.h"
#include "util/le.h"

typedef struct {
    andrea_dataset data;
    andrea_rng rng;
    char *path;
    int rank, ranks; /* this process's share of each batch (andrea_corpus_source_share) */
} corpus;

static const char KIND[8] = "corpus";

void andrea_corpus_position_encode(uint64_t data_checksum, const uint64_t rng[2], uint8_t *out) {
    memcpy(out, KIND, 8);
    put_u64(out + 8, data_checksum);
    put_u64(out + 16, rng[0]);
    put_u64(out + 24, rng[1]);
}

int andrea_corpus_position_decode(const uint8_t *pos, size_t n, uint64_t *data_checksum,
                                  uint64_t rng[2]) {
    if (n != ANDREA_CORPUS_POS_BYTES || memcmp(pos, KIND, 8) != 0) return -1;
    *data_checksum = get_u64(pos + 8);
    rng[0] = get_u64(pos + 16);
    rng[1] = get_u64(pos + 24);
    return 0;
}

static int next(andrea_batch_source *s, int B, int T, int32_t *x, int32_t *y) {
    corpus *c = s->state;
    andrea_dataset_train_rows(&c->data, &c->rng, B * c->ranks, B * c->rank, B, T, x, y);
    return 0;
}

void andrea_corpus_source_share(andrea_batch_source *s, int rank, int ranks) {
    corpus *c = s->state;
    c->rank = rank;
    c->ranks = ranks;
}

static size_t save(const andrea_batch_source *s, uint8_t *out, size_t cap) {
    const corpus *c = s->state;
    if (cap < ANDREA_CORPUS_POS_BYTES) return 0;
    andrea_corpus_position_encode(c->data.checksum, c->rng.s, out);
    return ANDREA_CORPUS_POS_BYTES;
}

static int restore(andrea_batch_source *s, const uint8_t *pos, size_t n, const char *from) {
    corpus *c = s->state;
    uint64_t sum, rng[2];
    if (andrea_corpus_position_decode(pos, n, &sum, rng))
        return andrea_set_error("%s: its batch position (%zu bytes, kind '%.8s') is not a "
                                "corpus position", from, n, n >= 8 ? (const char *)pos : "");
    if (sum != c->data.checksum)
        return andrea_set_error("'%s' is not the data %s was trained on (checksum differs)",
                                c->path, from);
    c->rng.s[0] = rng[0];
    c->rng.s[1] = rng[1];
    return 0;
}

static void describe(const andrea_batch_source *s, char *buf, size_t n) {
    const corpus *c = s->state;
    snprintf(buf, n, "'%s' %lld tokens", c->path, (long long)c->data.n);
}

static void sizes(const andrea_batch_source *s, int64_t *n_train, int64_t *n_val) {
    const corpus *c = s->state;
    *n_train = c->data.n_train;
    *n_val = c->data.n - c->data.n_train;
}

static const int32_t *validation(const andrea_batch_source *s, int64_t *n) {
    const corpus *c = s->state;
    *n = c->data.n - c->data.n_train;
    return *n ? andrea_dataset_val(&c->data) : NULL;
}

static void source_free(andrea_batch_source *s) {
    if (!s) return;
    corpus *c = s->state;
    andrea_dataset_free(&c->data);
    free(c->path);
    free(c);
    free(s);
}

andrea_batch_source *andrea_corpus_source_open(const char *data_path, const char *tokenizer_spec,
                                               andrea_tokenizer **tok, float val_fraction, int T,
                                               uint64_t seed) {
    andrea_batch_source *s = calloc(1, sizeof *s);
    corpus *c = calloc(1, sizeof *c);
    char *path = strdup(data_path);
    if (!s || !c || !path) {
        free(s);
        free(c);
        free(path);
        return andrea_set_error("out of memory"), NULL;
    }
    int32_t *tokens;
    int64_t n;
    uint64_t sum;
    andrea_token_file *tf = NULL; /* token files stay mapped: no copy of the training part */
    int bad = andrea_is_token_file(data_path)
                  ? !(tf = andrea_corpus_map(data_path, tokenizer_spec, tok, &sum)) ||
                        andrea_dataset_init_mapped(&c->data, tf, val_fraction, T, sum, data_path)
                  : andrea_corpus_load(data_path, tokenizer_spec, tok, &tokens, &n, &sum) ||
                        andrea_dataset_init(&c->data, tokens, n, val_fraction, T, sum, data_path);
    if (bad) {
        if (tf && !c->data.tf) andrea_token_file_close(tf);
        free(s);
        free(c);
        free(path);
        return NULL;
    }
    c->path = path;
    c->ranks = 1;
    andrea_rng_seed(&c->rng, seed ^ 0xD1B54A32D192ED03ull);
    *s = (andrea_batch_source){"corpus", next, save, restore, describe, sizes, validation,
                               source_free, c, NULL, NULL, NULL};
    return s;
}
