/* char.c - the character tokenizer of nanoGPT's shakespeare_char, for teaching:
 * the vocabulary is the sorted distinct characters (Unicode code points) of
 * the training text, id = rank in that order, and BOS = number of characters
 * (last, as in microgpt). A character never seen in training cannot be
 * encoded: that is an error naming its offset, not a silent substitute. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"

andrea_tokenizer *andrea_char_from_codepoints(const uint32_t *cps, int32_t n) {
    if (n < 1) return andrea_set_error("char tokenizer: empty character set"), NULL;
    for (int32_t i = 0; i < n; i++) {
        uint8_t tmp[4];
        uint32_t back;
        if (cps[i] > 0x10ffff || (cps[i] >= 0xd800 && cps[i] <= 0xdfff) ||
            (i > 0 && cps[i] <= cps[i - 1]) || !andrea_utf8_decode(tmp, (size_t)andrea_utf8_encode(cps[i], tmp), &back))
            return andrea_set_error("char tokenizer: character %d (U+%04X) is not a valid code point "
                                    "in strictly increasing order", i, cps[i]), NULL;
    }
    andrea_tokenizer *t = andrea_tok_alloc(&andrea_tok_char_ops, n + 1, n);
    if (!t) return NULL;
    t->chars = malloc((size_t)n * sizeof *t->chars);
    uint8_t *utf = malloc((size_t)n * 4);
    const uint8_t **ptrs = malloc(((size_t)n + 1) * sizeof *ptrs);
    uint32_t *lens = malloc(((size_t)n + 1) * sizeof *lens);
    int ok = t->chars && utf && ptrs && lens && andrea_u64map_init(&t->char_ids, (size_t)n) == 0;
    if (ok) {
        memcpy(t->chars, cps, (size_t)n * sizeof *cps);
        t->n_chars = n;
        for (int32_t i = 0; i < n && ok; i++) {
            ptrs[i] = utf + 4 * i;
            lens[i] = (uint32_t)andrea_utf8_encode(cps[i], utf + 4 * i);
            ok = andrea_u64map_upsert(&t->char_ids, cps[i], (uint32_t)i, NULL) != NULL;
        }
        ptrs[n] = NULL;
        lens[n] = 0;
        ok = ok && andrea_tok_set_token_bytes(t, ptrs, lens) == 0;
    } else {
        andrea_set_error("out of memory (char tokenizer)");
    }
    free(utf);
    free(ptrs);
    free(lens);
    if (!ok) {
        andrea_tokenizer_free(t);
        return NULL;
    }
    return t;
}

andrea_tokenizer *andrea_tokenizer_char_train(const void *text, size_t n) {
    const uint8_t *s = text;
    /* presence bitmap over all code points: 136 KiB */
    uint8_t *seen = calloc(0x110000 / 8, 1);
    if (!seen) return andrea_set_error("out of memory"), NULL;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = andrea_utf8_decode(s + i, n - i, &cp);
        if (!len) {
            free(seen);
            return andrea_set_error("char tokenizer: invalid UTF-8 at byte offset %zu (byte 0x%02X); "
                                    "use the byte tokenizer for binary data", i, s[i]), NULL;
        }
        seen[cp >> 3] |= (uint8_t)(1u << (cp & 7));
        i += (size_t)len;
    }
    int32_t count = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) count += (seen[cp >> 3] >> (cp & 7)) & 1;
    uint32_t *cps = malloc((size_t)(count ? count : 1) * sizeof *cps);
    if (!cps) {
        free(seen);
        return andrea_set_error("out of memory"), NULL;
    }
    int32_t k = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++)
        if ((seen[cp >> 3] >> (cp & 7)) & 1) cps[k++] = cp;
    free(seen);
    andrea_tokenizer *t = andrea_char_from_codepoints(cps, count);
    free(cps);
    return t;
}

static int char_encode(const andrea_tokenizer *t, const uint8_t *s, size_t n, int flags,
                       uint64_t base, andrea_ids *out) {
    (void)flags;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = andrea_utf8_decode(s + i, n - i, &cp);
        if (!len)
            return andrea_set_error("char tokenizer: invalid UTF-8 at byte offset %llu (byte 0x%02X)",
                                    (unsigned long long)(base + i), s[i]);
        uint32_t *id = andrea_u64map_get(&t->char_ids, cp);
        if (!id) {
            uint8_t u[5] = {0};
            andrea_utf8_encode(cp, u);
            return andrea_set_error("char tokenizer: character U+%04X '%s' at byte offset %llu is not "
                                    "in its %d-character vocabulary", cp, (char *)u,
                                    (unsigned long long)(base + i), t->n_chars);
        }
        if (andrea_ids_push(out, (int32_t)*id)) return -1;
        i += (size_t)len;
    }
    return 0;
}

/* ---- the .tok payload: u32 character count, then the code points ------------------------- */

static int char_serialize(const andrea_tokenizer *t, andrea_bytes *out) {
    int rc = andrea_bytes_put_u32(out, (uint32_t)t->n_chars);
    for (int32_t i = 0; i < t->n_chars && !rc; i++) rc = andrea_bytes_put_u32(out, t->chars[i]);
    return rc;
}

static andrea_tokenizer *char_deserialize(uint32_t vocab, uint32_t bos, const uint8_t *q,
                                          size_t plen, const char *what) {
    if (plen < 4 || get_u32(q) != vocab - 1 || plen != 4 + 4 * (uint64_t)(vocab - 1) ||
        bos != vocab - 1)
        return andrea_set_error("%s: char payload does not match vocab %u", what, vocab), NULL;
    uint32_t *cps = malloc(4 * (size_t)vocab);
    if (!cps) return andrea_set_error("out of memory"), NULL;
    for (uint32_t i = 0; i + 1 < vocab; i++) cps[i] = get_u32(q + 4 + 4 * (size_t)i);
    andrea_tokenizer *t = andrea_char_from_codepoints(cps, (int32_t)(vocab - 1));
    free(cps);
    return t;
}

static void char_free(andrea_tokenizer *t) {
    free(t->chars);
    andrea_u64map_free(&t->char_ids);
}

const andrea_tok_ops andrea_tok_char_ops = {
    .kind = ANDREA_TOK_CHAR,
    .name = "char",
    .encode = char_encode,
    .serialize = char_serialize,
    .deserialize = char_deserialize,
    .free_state = char_free,
};
