/* byte.c - the default tokenizer: the 256 bytes as tokens 0..255, BOS 256. */
#include "tokenizer/tok_internal.h"
#include "util/error.h"

static int byte_encode(const andrea_tokenizer *t, const uint8_t *s, size_t n, int flags,
                       uint64_t base, andrea_ids *out) {
    (void)base;
    (void)t;
    (void)flags;
    if (n > SIZE_MAX / 4 - out->len) return andrea_set_error("input too large");
    for (size_t i = 0; i < n; i++)
        if (andrea_ids_push(out, s[i])) return -1;
    return 0;
}

/* No payload: the header's kind says it all. */
static andrea_tokenizer *byte_deserialize(uint32_t vocab, uint32_t bos, const uint8_t *p,
                                          size_t plen, const char *what) {
    (void)p;
    if (vocab != ANDREA_BYTE_VOCAB || bos != ANDREA_BYTE_BOS || plen != 0)
        return andrea_set_error("%s: byte tokenizer must have V 257, BOS 256, no payload", what),
               NULL;
    return andrea_tokenizer_byte();
}

const andrea_tok_ops andrea_tok_byte_ops = {
    .kind = ANDREA_TOK_BYTE,
    .name = "byte",
    .encode = byte_encode,
    .deserialize = byte_deserialize,
};

andrea_tokenizer *andrea_tokenizer_byte(void) {
    andrea_tokenizer *t = andrea_tok_alloc(&andrea_tok_byte_ops, ANDREA_BYTE_VOCAB, ANDREA_BYTE_BOS);
    if (!t) return NULL;
    uint8_t all[256];
    const uint8_t *ptrs[ANDREA_BYTE_VOCAB];
    uint32_t lens[ANDREA_BYTE_VOCAB];
    for (int i = 0; i < 256; i++) {
        all[i] = (uint8_t)i;
        ptrs[i] = &all[i];
        lens[i] = 1;
    }
    ptrs[ANDREA_BYTE_BOS] = NULL;
    lens[ANDREA_BYTE_BOS] = 0;
    if (andrea_tok_set_token_bytes(t, ptrs, lens)) {
        andrea_tokenizer_free(t);
        return NULL;
    }
    return t;
}
