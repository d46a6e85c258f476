/* corpus.c - text or token file + tokenizer -> token ids for training and evaluation. */
#include "train/data/corpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/data/data.h"
#include "util/error.h"
#include "util/file.h"
#include "util/hash.h"

int andrea_is_token_file(const char *path) {
    uint64_t size;
    FILE *f = andrea_file_fopen_regular(path, NULL, 0, &size);
    if (!f) return 0; /* the reader that follows says why */
    char magic[8];
    int yes = fread(magic, 1, 8, f) == 8 && memcmp(magic, "ANDRTOKS", 8) == 0;
    fclose(f);
    return yes;
}

/* A token file made by tok, mapped, its ids checked against the vocabulary. */
static andrea_token_file *open_checked(const char *path, const andrea_tokenizer *tok) {
    andrea_token_file *tf = andrea_token_file_open(path, 1);
    if (!tf) return NULL;
    if (!tok) {
        andrea_token_file_close(tf);
        return andrea_set_error("token file '%s': say which tokenizer made it with --tokenizer "
                                "(it is embedded in the checkpoint)", path), NULL;
    }
    if (andrea_token_file_checksum(tf) != andrea_tokenizer_checksum(tok) ||
        andrea_token_file_vocab(tf) != andrea_tokenizer_vocab_size(tok)) {
        andrea_token_file_close(tf);
        return andrea_set_error("token file '%s' was made by a different tokenizer than the one "
                                "given (checksum or vocabulary size differ)", path), NULL;
    }
    return tf;
}

andrea_token_file *andrea_corpus_map(const char *path, const char *spec, andrea_tokenizer **tok,
                                     uint64_t *checksum) {
    int made_tok = 0;
    if (!*tok && spec && strcmp(spec, "char") != 0) {
        if (!(*tok = andrea_tokenizer_open(spec))) return NULL;
        made_tok = 1;
    }
    andrea_token_file *tf = open_checked(path, *tok);
    /* the hash of the int32 stream, as andrea_corpus_load computes it, a chunk at a time */
    enum { CHUNK = 1 << 16 };
    int32_t *buf = tf ? malloc(sizeof(int32_t) * CHUNK) : NULL;
    uint64_t h = ANDREA_HASH_INIT, count = tf ? andrea_token_file_count(tf) : 0;
    for (uint64_t at = 0; buf && at < count; at += CHUNK) {
        size_t k = count - at < CHUNK ? (size_t)(count - at) : CHUNK;
        andrea_token_file_read(tf, at, k, buf);
        h = andrea_hash(h, buf, sizeof(int32_t) * k);
    }
    if (tf && !buf) andrea_set_error("out of memory");
    free(buf);
    if (tf && buf) {
        *checksum = h;
        return tf;
    }
    if (tf) andrea_token_file_close(tf);
    if (made_tok) {
        andrea_tokenizer_free(*tok);
        *tok = NULL;
    }
    return NULL;
}

static int from_token_file(const char *path, andrea_tokenizer **tok, int32_t **tokens,
                           int64_t *n) {
    andrea_token_file *tf = open_checked(path, *tok);
    if (!tf) return -1;
    uint64_t count = andrea_token_file_count(tf);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(count ? count : 1));
    if (!ids) {
        andrea_token_file_close(tf);
        return andrea_set_error("out of memory loading '%s' (%llu tokens)", path,
                                (unsigned long long)count);
    }
    int rc = count ? andrea_token_file_read(tf, 0, (size_t)count, ids) : 0;
    andrea_token_file_close(tf);
    if (rc) {
        free(ids);
        return -1;
    }
    *tokens = ids;
    *n = (int64_t)count;
    return 0;
}

int andrea_corpus_load(const char *data_path, const char *spec, andrea_tokenizer **tok,
                       int32_t **tokens, int64_t *n, uint64_t *checksum) {
    *tokens = NULL;
    *n = 0;
    int made_tok = 0;
    if (!*tok && spec && strcmp(spec, "char") != 0) {
        *tok = andrea_tokenizer_open(spec);
        if (!*tok) return -1;
        made_tok = 1;
    }
    int rc;
    if (andrea_is_token_file(data_path)) {
        rc = from_token_file(data_path, tok, tokens, n);
    } else {
        unsigned char *text;
        size_t len;
        rc = andrea_read_file(data_path, &text, &len);
        if (rc == 0 && len == 0) rc = andrea_set_error("training data '%s' is empty", data_path);
        if (rc == 0 && !*tok) {
            *tok = spec ? andrea_tokenizer_char_train(text, len) : andrea_tokenizer_byte();
            made_tok = 1;
            if (!*tok) rc = -1;
        }
        andrea_ids ids = {0};
        if (rc == 0 && andrea_tokenizer_encode(*tok, text, len, 0, &ids)) {
            rc = andrea_set_error("tokenizing '%s': %s", data_path, andrea_error());
            andrea_ids_free(&ids);
        }
        if (rc == 0) {
            *tokens = ids.data;
            *n = (int64_t)ids.len;
        }
        free(text);
    }
    if (rc) {
        if (made_tok) {
            andrea_tokenizer_free(*tok);
            *tok = NULL;
        }
        return -1;
    }
    *checksum = andrea_hash(ANDREA_HASH_INIT, *tokens, sizeof(int32_t) * (size_t)*n);
    return 0;
}
