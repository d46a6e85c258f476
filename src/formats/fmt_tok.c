/* fmt_tok.c - andrea's byte-level BPE tokenizers (byte, bpe, gpt2) as the strings
 * other programs keep: each token as GPT-2's bytes_to_unicode() characters (the
 * space byte is "Ġ"), each merge as "A B", BOS as "<|endoftext|>". That is what
 * GGUF's tokenizer.ggml.tokens/merges and Hugging Face's vocab.json/merges.txt hold. */
#include <stdlib.h>
#include <string.h>

#include "formats/fmt.h"
#include "util/error.h"
#include "util/le.h"
#include "util/utf8.h"

static const char EOT[] = "<|endoftext|>";

/* The code point standing for byte b: printable Latin-1 stands for itself, the other
 * 68 bytes take U+0100.. in byte order. */
static uint32_t byte_cp(uint8_t b) {
    int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    if (printable) return b;
    uint32_t n = 0;
    for (int c = 0; c < b; c++) {
        int p = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
        if (!p) n++;
    }
    return 256 + n;
}

int andrea_fmt_byte_char(uint8_t b, char out[3]) {
    uint32_t cp = byte_cp(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    out[2] = 0;
    return 2;
}

int andrea_fmt_token_string(const andrea_tokenizer *t, int32_t id, char *out, size_t cap) {
    if (id == andrea_tokenizer_bos(t)) {
        if (cap < sizeof EOT) return -1;
        memcpy(out, EOT, sizeof EOT);
        return 0;
    }
    size_t len, k = 0;
    const uint8_t *b = andrea_tokenizer_token_bytes(t, id, &len);
    if (!b) return -1;
    for (size_t i = 0; i < len; i++) {
        char c[3];
        int n = andrea_fmt_byte_char(b[i], c);
        if (k + (size_t)n + 1 > cap) return -1;
        memcpy(out + k, c, (size_t)n);
        k += (size_t)n;
    }
    out[k] = 0;
    return 0;
}

int andrea_fmt_tok_is_bpe(const andrea_tokenizer *t) {
    int k = andrea_tokenizer_kind(t);
    return k == ANDREA_TOK_BYTE || k == ANDREA_TOK_BPE || k == ANDREA_TOK_GPT2;
}

/* The .tok blob: 32-byte header (magic, version 1, kind, vocab, bos, payload bytes);
 * a bpe/gpt2 payload starts with u32 n_merges, 256 u32 byte ids, then (a, b, r) triples. */
int andrea_fmt_tok_merges(const andrea_tokenizer *t, int32_t **merges, int32_t *n_merges) {
    *merges = NULL;
    *n_merges = 0;
    if (andrea_tokenizer_kind(t) == ANDREA_TOK_BYTE) return 0;
    andrea_bytes blob = {0};
    if (andrea_tokenizer_serialize(t, &blob)) return -1;
    int rc = -1;
    if (blob.len < 32 + 4 + 1024) {
        andrea_set_error("tokenizer blob too short for a BPE payload");
        goto done;
    }
    uint32_t nm = get_u32(blob.data + 32);
    if ((uint64_t)32 + 4 + 1024 + 12ull * nm > blob.len) {
        andrea_set_error("tokenizer blob: %u merges do not fit", nm);
        goto done;
    }
    int32_t *m = malloc(((size_t)nm * 3 + 1) * sizeof *m);
    if (!m) {
        andrea_set_error("out of memory (%u merges)", nm);
        goto done;
    }
    for (size_t i = 0; i < 3 * (size_t)nm; i++) m[i] = (int32_t)get_u32(blob.data + 32 + 4 + 1024 + 4 * i);
    *merges = m;
    *n_merges = (int32_t)nm;
    rc = 0;
done:
    andrea_bytes_free(&blob);
    return rc;
}

typedef struct {
    const uint8_t *s;
    uint64_t len;
    int32_t id;
} tok_str;

static int cmp_str(const uint8_t *a, uint64_t la, const uint8_t *b, uint64_t lb) {
    uint64_t n = la < lb ? la : lb;
    int c = n ? memcmp(a, b, (size_t)n) : 0;
    if (c) return c;
    return la < lb ? -1 : la > lb;
}

static int cmp_tok(const void *a, const void *b) {
    const tok_str *x = a, *y = b;
    return cmp_str(x->s, x->len, y->s, y->len);
}

static int32_t find_tok(const tok_str *sorted, int32_t n, const uint8_t *s, uint64_t len) {
    int32_t lo = 0, hi = n - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = cmp_str(sorted[mid].s, sorted[mid].len, s, len);
        if (c == 0) return sorted[mid].id;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* The single byte a byte-level token string of one character stands for, or -1. */
static int string_byte(const uint8_t *s, uint64_t len) {
    uint32_t cp;
    int n = andrea_utf8_decode(s, (size_t)len, &cp);
    if (n <= 0 || (uint64_t)n != len) return -1;
    for (int b = 0; b < 256; b++)
        if (byte_cp((uint8_t)b) == cp) return b;
    return -1;
}

static andrea_tokenizer *build_blob(int kind, int32_t vocab, int32_t bos,
                                    const int32_t byte_to_id[256], const int32_t *triples,
                                    int64_t nm, const char *what) {
    andrea_wbuf w = {0};
    andrea_wb_put(&w, "ANDRTOK", 8);
    andrea_wb_u32(&w, 1);
    andrea_wb_u32(&w, (uint32_t)kind);
    andrea_wb_u32(&w, (uint32_t)vocab);
    andrea_wb_u32(&w, (uint32_t)bos);
    const char *special = kind == ANDREA_TOK_GPT2 ? EOT : "";
    uint64_t payload = 4 + 1024 + 12 * (uint64_t)nm + 4 + strlen(special);
    andrea_wb_u64(&w, payload);
    andrea_wb_u32(&w, (uint32_t)nm);
    for (int i = 0; i < 256; i++) andrea_wb_u32(&w, (uint32_t)byte_to_id[i]);
    for (int64_t i = 0; i < 3 * nm; i++) andrea_wb_u32(&w, (uint32_t)triples[i]);
    andrea_wb_u32(&w, (uint32_t)strlen(special));
    andrea_wb_str(&w, special);
    andrea_tokenizer *t = NULL;
    if (w.oom) andrea_set_error("out of memory (tokenizer of %s)", what);
    else t = andrea_tokenizer_deserialize(w.p, w.n, what);
    andrea_wb_free(&w);
    return t;
}

andrea_tokenizer *andrea_fmt_tok_from_strings(int kind, int32_t vocab, int32_t bos,
                                              const uint8_t *const *strs, const uint64_t *lens,
                                              const uint8_t *const *merges,
                                              const uint64_t *mlens, int64_t n_merges,
                                              const char *what) {
    if (vocab < 2 || bos < 0 || bos >= vocab || n_merges < 0 || n_merges >= vocab)
        return andrea_set_error("%s: tokenizer sizes do not fit (vocab %d, BOS %d, %lld merges)",
                                what, vocab, bos, (long long)n_merges), NULL;
    int32_t byte_to_id[256];
    for (int i = 0; i < 256; i++) byte_to_id[i] = -1;
    for (int32_t i = 0; i < vocab; i++) {
        if (i == bos) continue;
        int b = string_byte(strs[i], lens[i]);
        if (b >= 0 && byte_to_id[b] < 0) byte_to_id[b] = i;
    }
    if (kind == ANDREA_TOK_BYTE) {
        for (int i = 0; i < 256; i++)
            if (byte_to_id[i] != i || vocab != ANDREA_BYTE_VOCAB || bos != ANDREA_BYTE_BOS ||
                n_merges != 0)
                return andrea_set_error("%s: tokenizer says 'byte' but is not 256 bytes + BOS", what),
                       NULL;
        return andrea_tokenizer_byte();
    }
    tok_str *sorted = malloc((size_t)vocab * sizeof *sorted);
    int32_t *triples = malloc(((size_t)n_merges * 3 + 1) * sizeof *triples);
    uint8_t *cat = NULL;
    andrea_tokenizer *t = NULL;
    if (!sorted || !triples) {
        andrea_set_error("out of memory (tokenizer of %s)", what);
        goto done;
    }
    for (int32_t i = 0; i < vocab; i++) sorted[i] = (tok_str){strs[i], lens[i], i};
    qsort(sorted, (size_t)vocab, sizeof *sorted, cmp_tok);
    for (int64_t i = 0; i < n_merges; i++) {
        const uint8_t *s = merges[i], *sp = memchr(s, ' ', (size_t)mlens[i]);
        uint64_t la = sp ? (uint64_t)(sp - s) : 0, lb = sp ? mlens[i] - la - 1 : 0;
        int32_t a = sp ? find_tok(sorted, vocab, s, la) : -1;
        int32_t b = sp ? find_tok(sorted, vocab, sp + 1, lb) : -1;
        free(cat);
        cat = malloc((size_t)(la + lb + 1));
        if (!cat) {
            andrea_set_error("out of memory (tokenizer of %s)", what);
            goto done;
        }
        if (sp) {
            memcpy(cat, s, (size_t)la);
            memcpy(cat + la, sp + 1, (size_t)lb);
        }
        int32_t r = sp ? find_tok(sorted, vocab, cat, la + lb) : -1;
        if (a < 0 || b < 0 || r < 0) {
            char pr[84];
            andrea_set_error("%s: merge %lld ('%s') is not 'A B' over tokens of the vocabulary",
                             what, (long long)i, andrea_fmt_printable(s, (size_t)mlens[i], pr));
            goto done;
        }
        triples[3 * i] = a;
        triples[3 * i + 1] = b;
        triples[3 * i + 2] = r;
    }
    t = build_blob(kind, vocab, bos, byte_to_id, triples, n_merges, what);
done:
    free(sorted);
    free(triples);
    free(cat);
    return t;
}
