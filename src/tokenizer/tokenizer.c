/* tokenizer.c - the andrea_tokenizer object: dispatch through each kind's ops, the .tok blob
 * format, load/save/open, decoding (common to every kind) and the checksum. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenizer/tok_internal.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/file.h"
#include "util/hash.h"

#define TOK_MAGIC "ANDRTOK" /* 8 bytes with the NUL */
#define TOK_VERSION 1u
#define TOK_HEADER 32

/* Every kind, by its number in files. */
static const andrea_tok_ops *const KINDS[] = {
    &andrea_tok_byte_ops, &andrea_tok_char_ops, &andrea_tok_bpe_ops, &andrea_tok_gpt2_ops,
    &andrea_tok_harris_ops,
};

static const andrea_tok_ops *kind_ops(uint32_t kind) {
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if ((uint32_t)KINDS[i]->kind == kind) return KINDS[i];
    return NULL;
}

const char *andrea_tokenizer_kind_name(int kind) {
    const andrea_tok_ops *ops = kind_ops((uint32_t)kind);
    return ops ? ops->name : "unknown";
}

andrea_tokenizer *andrea_tok_alloc(const andrea_tok_ops *ops, int32_t vocab, int32_t bos) {
    andrea_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        andrea_set_error("out of memory (tokenizer)");
        return NULL;
    }
    t->ops = ops;
    t->vocab = vocab;
    t->bos = bos;
    return t;
}

int andrea_tok_set_token_bytes(andrea_tokenizer *t, const uint8_t *const *ptrs, const uint32_t *lens) {
    size_t total = 0;
    for (int32_t i = 0; i < t->vocab; i++) total += lens[i];
    t->tok_off = malloc(((size_t)t->vocab + 1) * sizeof *t->tok_off);
    t->tok_arena = malloc(total ? total : 1);
    if (!t->tok_off || !t->tok_arena) return andrea_set_error("out of memory (token table)");
    size_t off = 0;
    for (int32_t i = 0; i < t->vocab; i++) {
        t->tok_off[i] = off;
        if (lens[i]) memcpy(t->tok_arena + off, ptrs[i], lens[i]);
        off += lens[i];
    }
    t->tok_off[t->vocab] = off;
    return 0;
}

void andrea_tokenizer_free(andrea_tokenizer *t) {
    if (!t) return;
    if (t->ops->free_state) t->ops->free_state(t);
    free(t->tok_off);
    free(t->tok_arena);
    free(t);
}

int andrea_tokenizer_kind(const andrea_tokenizer *t) { return t->ops->kind; }
int32_t andrea_tokenizer_vocab_size(const andrea_tokenizer *t) { return t->vocab; }
int32_t andrea_tokenizer_bos(const andrea_tokenizer *t) { return t->bos; }

/* ---- encode / decode ---------------------------------------------------------------------- */

int andrea_tokenizer_encode(const andrea_tokenizer *t, const void *text, size_t n, int flags,
                            andrea_ids *out) {
    return andrea_tokenizer_encode_part(t, text, n, 0, flags, out);
}

int andrea_tokenizer_encode_part(const andrea_tokenizer *t, const void *text, size_t n,
                                 uint64_t base, int flags, andrea_ids *out) {
    if ((flags & ANDREA_ENCODE_SPECIAL) && !t->ops->special)
        return andrea_set_error("a %s tokenizer has no special token to encode (ANDREA_ENCODE_SPECIAL "
                                "is for gpt2)", t->ops->name);
    return t->ops->encode(t, text, n, flags, base, out);
}

size_t andrea_tokenizer_safe_cut_flags(const void *text, size_t n, int flags) {
    /* Why this point is safe for GPT-2's regex: a piece holding '\n' is all
     * whitespace, so none crosses into the visible character after it; and the
     * whitespace run before the cut, now at the end of a string, is matched by
     * \s+(?!\S) exactly as far as it was when the '\n' followed it. With special
     * tokens the text is split at "<|endoftext|>" before the regex, so the whitespace
     * run before one ends there ("\n\n<|endoftext|>" is the one piece "\n\n"): a cut
     * inside that run would make two pieces, so no '\n' before a '<' is a cut then. */
    const uint8_t *s = text;
    int special = (flags & ANDREA_ENCODE_SPECIAL) != 0;
    for (size_t k = n >= 2 ? n - 2 : 0; k > 0; k--)
        if (s[k] == '\n' && s[k + 1] > 0x20 && s[k + 1] < 0x7f && !(special && s[k + 1] == '<'))
            return k;
    return 0;
}

size_t andrea_tokenizer_safe_cut(const void *text, size_t n) {
    return andrea_tokenizer_safe_cut_flags(text, n, 0);
}

const uint8_t *andrea_tokenizer_token_bytes(const andrea_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->vocab) return NULL;
    *len = (size_t)(t->tok_off[id + 1] - t->tok_off[id]);
    return t->tok_arena + t->tok_off[id];
}

int andrea_tokenizer_decode(const andrea_tokenizer *t, const int32_t *ids, size_t n,
                            andrea_bytes *out) {
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *p = andrea_tokenizer_token_bytes(t, ids[i], &len);
        if (!p)
            return andrea_set_error("decode: token %zu is %d, outside the vocabulary [0, %d) of "
                                    "this %s tokenizer",
                                    i, ids[i], t->vocab, t->ops->name);
        if (andrea_bytes_append(out, p, len)) return -1;
    }
    return 0;
}

/* ---- blob ----------------------------------------------------------------------------------- */

int andrea_tokenizer_serialize(const andrea_tokenizer *t, andrea_bytes *out) {
    size_t start = out->len;
    uint8_t h[TOK_HEADER] = {0};
    memcpy(h, TOK_MAGIC, 8);
    put_u32(h + 8, TOK_VERSION);
    put_u32(h + 12, (uint32_t)t->ops->kind);
    put_u32(h + 16, (uint32_t)t->vocab);
    put_u32(h + 20, (uint32_t)t->bos);
    if (andrea_bytes_append(out, h, sizeof h)) return -1;
    int rc = t->ops->serialize ? t->ops->serialize(t, out) : 0;
    if (rc) return -1;
    put_u64(out->data + start + 24, (uint64_t)(out->len - start - TOK_HEADER));
    return 0;
}

andrea_tokenizer *andrea_tokenizer_deserialize(const void *blob, size_t n, const char *what) {
    const uint8_t *p = blob;
    if (!what) what = "tokenizer";
    if (n < TOK_HEADER)
        return andrea_set_error("%s: %zu bytes, too short for a tokenizer header (%d)", what, n,
                                TOK_HEADER), NULL;
    if (memcmp(p, TOK_MAGIC, 8) != 0)
        return andrea_set_error("%s: not an andrea tokenizer (bad magic)", what), NULL;
    uint32_t version = get_u32(p + 8), kind = get_u32(p + 12);
    uint32_t vocab = get_u32(p + 16), bos = get_u32(p + 20);
    uint64_t plen = get_u64(p + 24);
    if (version != TOK_VERSION)
        return andrea_set_error("%s: tokenizer format version %u, this andrea reads %u", what,
                                version, TOK_VERSION), NULL;
    if (plen != n - TOK_HEADER)
        return andrea_set_error("%s: header says %llu payload bytes, found %zu (truncated?)", what,
                                (unsigned long long)plen, n - TOK_HEADER), NULL;
    if (vocab < 2 || vocab > (1u << 30) || bos >= vocab)
        return andrea_set_error("%s: bad sizes (vocab %u, bos %u)", what, vocab, bos), NULL;
    const andrea_tok_ops *ops = kind_ops(kind);
    if (!ops) return andrea_set_error("%s: unknown tokenizer kind %u", what, kind), NULL;
    andrea_tokenizer *t = ops->deserialize(vocab, bos, p + TOK_HEADER, (size_t)plen, what);
    if (!t && strncmp(andrea_error(), what, strlen(what)) != 0) { /* name the file */
        andrea_set_error("%s: %s", what, andrea_error());
    }
    if (t && (t->vocab != (int32_t)vocab || t->bos != (int32_t)bos)) {
        andrea_set_error("%s: header (vocab %u, bos %u) disagrees with the payload", what, vocab, bos);
        andrea_tokenizer_free(t);
        return NULL;
    }
    return t;
}

uint64_t andrea_tokenizer_checksum(const andrea_tokenizer *t) {
    andrea_bytes b = {0};
    uint64_t h = 0;
    if (andrea_tokenizer_serialize(t, &b) == 0) h = andrea_fnv1a64(ANDREA_HASH_INIT, b.data, b.len);
    andrea_bytes_free(&b);
    return h;
}

int andrea_tokenizer_save(const andrea_tokenizer *t, const char *path) {
    andrea_bytes b = {0};
    if (andrea_tokenizer_serialize(t, &b)) return -1;
    andrea_atomic_file af; /* whole or not at all, and never over a device or a FIFO */
    FILE *f = andrea_atomic_open(&af, path);
    if (!f) {
        andrea_bytes_free(&b);
        return -1;
    }
    int short_write = fwrite(b.data, 1, b.len, f) != b.len;
    andrea_bytes_free(&b);
    if (short_write) {
        andrea_atomic_abort(&af);
        return andrea_set_error("'%s': write failed (disk full?)", path);
    }
    return andrea_atomic_commit(&af);
}

andrea_tokenizer *andrea_tokenizer_load(const char *path) {
    andrea_bytes b = {0};
    if (andrea_file_read_max(path, ANDREA_TOK_FILE_MAX, &b)) return NULL;
    andrea_tokenizer *t = andrea_tokenizer_deserialize(b.data, b.len, path);
    andrea_bytes_free(&b);
    return t;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static andrea_tokenizer *gpt2_from_dir(const char *dir) {
    size_t n = strlen(dir) + 16;
    char *enc = malloc(n), *bpe = malloc(n);
    andrea_tokenizer *t = NULL;
    if (enc && bpe) {
        snprintf(enc, n, "%s/encoder.json", dir);
        snprintf(bpe, n, "%s/vocab.bpe", dir);
        t = andrea_tokenizer_gpt2_load(enc, bpe);
    } else {
        andrea_set_error("out of memory");
    }
    free(enc);
    free(bpe);
    return t;
}

andrea_tokenizer *andrea_tokenizer_open(const char *spec) {
    if (!spec || strcmp(spec, "byte") == 0) return andrea_tokenizer_byte();
    if (strcmp(spec, "gpt2") == 0) {
        const char *env = getenv("ANDREA_DATA_DIR");
        if (env && *env && strlen(env) < 4000) {
            char dir[4096];
            snprintf(dir, sizeof dir, "%s/gpt2", env);
            if (is_dir(dir)) return gpt2_from_dir(dir);
        }
        const char *guesses[] = {"../shared/data/gpt2", "shared/data/gpt2", "../../shared/data/gpt2"};
        for (size_t i = 0; i < sizeof guesses / sizeof guesses[0]; i++)
            if (is_dir(guesses[i])) return gpt2_from_dir(guesses[i]);
        andrea_set_error("tokenizer 'gpt2': no encoder.json/vocab.bpe found in $ANDREA_DATA_DIR/gpt2 "
                         "or ../shared/data/gpt2; use 'gpt2:DIR'");
        return NULL;
    }
    if (strncmp(spec, "gpt2:", 5) == 0) return gpt2_from_dir(spec + 5);
    if (strcmp(spec, "char") == 0) { /* not a file named 'char' */
        andrea_set_error("tokenizer 'char' is made from a training text, so it has no standalone "
                         "form here: give byte, gpt2[:DIR], a .tok file (andrea tokenizer "
                         "export) or harris_segments.json");
        return NULL;
    }
    size_t n = strlen(spec);
    if (n >= 5 && strcmp(spec + n - 5, ".json") == 0) return andrea_tokenizer_harris_import(spec);
    return andrea_tokenizer_load(spec);
}
