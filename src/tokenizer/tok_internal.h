/* tok_internal.h - what the tokenizer files share: the object layout, hash
 * maps and the GPT-2 pre-tokenizer (UTF-8 is util/utf8.h). Not part of the public API. */
#ifndef ANDREA_TOK_INTERNAL_H
#define ANDREA_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "andrea_tokenizer.h"
#include "util/error.h" /* ANDREA_PRINTF */
#include "util/le.h"
#include "util/utf8.h"

/* The largest tokenizer file read (.tok, encoder.json, vocab.bpe, harris JSON): GPT-2's
 * files are 1 MB and 0.5 MB; anything near this bound is not a tokenizer. */
#define ANDREA_TOK_FILE_MAX ((uint64_t)1 << 30)
/* Bounds on the token table a loaded tokenizer builds: no token longer than this, and no
 * more bytes in all (a merge list can double a token's length with every merge). */
#define ANDREA_TOK_TOKEN_MAX ((uint32_t)1 << 20)
#define ANDREA_TOK_TABLE_MAX ((uint64_t)1 << 28)

/* ---- hash maps ---------------------------------------------------------------- */

/* uint64 key -> uint32 value, open addressing; UINT64_MAX is reserved (empty). */
typedef struct {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap, n; /* cap is a power of two */
} u64map;
int andrea_u64map_init(u64map *m, size_t expected);
void andrea_u64map_free(u64map *m);
void andrea_u64map_clear(u64map *m);
/* Pointer to the value of key, or NULL. Valid until the next insert. */
uint32_t *andrea_u64map_get(const u64map *m, uint64_t key);
/* Pointer to the value of key, inserting it with value `init` if absent (*added = 1). */
uint32_t *andrea_u64map_upsert(u64map *m, uint64_t key, uint32_t init, int *added);

/* Byte strings -> dense ids 0, 1, 2, ... in insertion order (an interner). */
typedef struct {
    uint32_t *slots;   /* cap entries: id + 1, 0 = empty */
    uint64_t *hashes;  /* per id */
    uint64_t *offs;    /* per id: offset into arena */
    uint32_t *lens;    /* per id */
    uint8_t *arena;
    size_t arena_len, arena_cap;
    size_t n, n_cap, cap;
} strmap;
int andrea_strmap_init(strmap *m, size_t expected);
void andrea_strmap_free(strmap *m);
void andrea_strmap_clear(strmap *m);
/* id of the string, or -1. */
int64_t andrea_strmap_find(const strmap *m, const uint8_t *p, size_t n);
/* id of the string, adding it if absent (*added = 1); -1 on out of memory. */
int64_t andrea_strmap_intern(strmap *m, const uint8_t *p, size_t n, int *added);
static inline const uint8_t *strmap_key(const strmap *m, size_t id, size_t *len) {
    *len = m->lens[id];
    return m->arena + m->offs[id];
}


/* ---- GPT-2 pre-tokenization (pretok.c) ------------------------------------------ */

typedef struct pretok pretok;
/* NULL with andrea_error() when built without PCRE2. */
pretok *andrea_pretok_gpt2_create(void);
void andrea_pretok_free(pretok *p);
/* Calls cb on each piece in order; the pieces tile s exactly. Stops and returns
 * cb's value when it is non-zero. Not thread-safe (shares match data). */
typedef int (*pretok_cb)(void *ctx, const uint8_t *piece, size_t n);
int andrea_pretok_run(pretok *p, const uint8_t *s, size_t n, pretok_cb cb, void *ctx);

/* ---- the object ------------------------------------------------------------------- */

typedef struct bpe_state bpe_state;
typedef struct harris_state harris_state;

/* What makes a kind a kind: one table per kind, in that kind's file; tokenizer.c
 * dispatches through it and never switches on the kind. Decoding is common to
 * every kind (the token byte table below) and needs no hook. */
typedef struct {
    int kind;         /* ANDREA_TOK_*, stored in files */
    const char *name; /* "byte", "char", ... */
    /* Appends the ids of s[0..n); flags: ANDREA_ENCODE_SPECIAL (kinds with a
     * special token only: special == 1). s starts at byte `base` of the caller's
     * whole text: error messages name offsets in that text. */
    int (*encode)(const andrea_tokenizer *t, const uint8_t *s, size_t n, int flags, uint64_t base,
                  andrea_ids *out);
    int special;
    /* The .tok payload after the common header: appended to out / parsed from p[0..n),
     * checked against the header's vocab and bos; `what` names the blob in errors. */
    int (*serialize)(const andrea_tokenizer *t, andrea_bytes *out);
    andrea_tokenizer *(*deserialize)(uint32_t vocab, uint32_t bos, const uint8_t *p, size_t n,
                                     const char *what);
    void (*free_state)(andrea_tokenizer *t); /* the kind's own fields */
} andrea_tok_ops;

extern const andrea_tok_ops andrea_tok_byte_ops, andrea_tok_char_ops, andrea_tok_bpe_ops,
    andrea_tok_gpt2_ops, andrea_tok_harris_ops;

struct andrea_tokenizer {
    const andrea_tok_ops *ops; /* the kind */
    int32_t vocab, bos;
    /* bytes of every token, for decode: token i is arena[off[i] .. off[i+1]) */
    uint64_t *tok_off; /* vocab + 1 */
    uint8_t *tok_arena;
    /* char */
    uint32_t *chars;   /* n_chars sorted code points; id = index */
    int32_t n_chars;
    u64map char_ids;   /* code point -> id */
    /* bpe, gpt2 */
    bpe_state *bpe;
    /* harris */
    harris_state *harris;
};

/* Allocates an empty object of this kind. */
andrea_tokenizer *andrea_tok_alloc(const andrea_tok_ops *ops, int32_t vocab, int32_t bos);
/* Fills tok_off/tok_arena from per-token byte strings (lens[i] bytes at ptrs[i]). */
int andrea_tok_set_token_bytes(andrea_tokenizer *t, const uint8_t *const *ptrs, const uint32_t *lens);

andrea_tokenizer *andrea_char_from_codepoints(const uint32_t *cps, int32_t n);

/* bpe.c: the merge table shared by gpt2 and trained bpe. merges[i] = (a, b, result). */
andrea_tokenizer *andrea_bpe_build(const andrea_tok_ops *ops, int32_t vocab, int32_t bos, const int32_t byte_to_id[256],
                            const int32_t *merges, int32_t n_merges, const uint8_t *special,
                            size_t special_len);
/* One pre-tokenized piece's merges, appended to out. AUTO picks SCAN (GPT-2's loop,
 * O(len * merges)) for short pieces and HEAP (O(len log len)) for long ones; the
 * two give the same ids (tests/test_tok_gpt2.c compares them). */
enum { ANDREA_BPE_MERGE_AUTO, ANDREA_BPE_MERGE_SCAN, ANDREA_BPE_MERGE_HEAP };
int andrea_bpe_merge_piece(const andrea_tokenizer *t, const uint8_t *p, size_t n, int method,
                           andrea_ids *out);
/* One merge applied to a symbol sequence in place: every (a, b), from the left, becomes
 * r; returns the new length. The encoder's scan and the trainer (bpe_train.c) share it,
 * so that learned merges encode as they were learned. */
static inline size_t andrea_bpe_replace_pair(int32_t *sym, size_t n, int32_t a, int32_t b, int32_t r) {
    size_t j = 0;
    for (size_t i = 0; i < n;) {
        if (i + 1 < n && sym[i] == a && sym[i + 1] == b) {
            sym[j++] = r;
            i += 2;
        } else {
            sym[j++] = sym[i++];
        }
    }
    return j;
}

/* harris.c */
andrea_tokenizer *andrea_harris_build(const uint8_t *const *segs, const uint32_t *lens, int32_t n);

int andrea_bytes_put_u32(andrea_bytes *b, uint32_t v);

/* Formats one progress line and hands it to fn (nothing when fn is NULL). */
void andrea_tok_progress(andrea_tokenizer_progress_fn fn, void *user, const char *fmt, ...)
    ANDREA_PRINTF(3, 4);

#endif
