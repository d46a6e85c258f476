/* gpt2.c - OpenAI's GPT-2 tokenizer from its two release files.
 *
 * encoder.json maps token strings to ids; each character of a token string
 * stands for one byte through GPT-2's bytes_to_unicode() table (printable
 * Latin-1 bytes stand for themselves, the other 68 bytes are shifted to
 * U+0100..U+0143, so the space is "Ġ"). vocab.bpe lists the 50,000 merges in
 * rank order as "A B" lines. We turn both into the byte-level form bpe.c uses:
 * the id of every byte, and merges (id A, id B) -> id AB. The entry
 * "<|endoftext|>" (id 50256) is the special token and our BOS; it is only
 * produced from text when ANDREA_ENCODE_SPECIAL is given.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"
#include "util/file.h"

#ifdef ANDREA_HAVE_JANSSON
#include <jansson.h>
#endif

/* bytes_to_unicode() inverted: code point -> byte, or -1. */
static void gpt2_unicode_to_byte(int32_t inv[324]) {
    for (int i = 0; i < 324; i++) inv[i] = -1;
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        if (printable) inv[b] = b;
        else inv[256 + n++] = b;
    }
}

/* Token string (UTF-8 of byte-standing characters) -> bytes. */
static int gpt2_token_bytes(const int32_t inv[324], const uint8_t *s, size_t n, andrea_bytes *out) {
    out->len = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = andrea_utf8_decode(s + i, n - i, &cp);
        if (!len || cp >= 324 || inv[cp] < 0) return -1;
        uint8_t byte = (uint8_t)inv[cp];
        if (andrea_bytes_append(out, &byte, 1)) return -1;
        i += (size_t)len;
    }
    return 0;
}

#ifdef ANDREA_HAVE_JANSSON

static const char GPT2_SPECIAL[] = "<|endoftext|>";

/* Both files are checked before parsing: jansson reports a missing file as an
 * error at "line -1 column -1". */
static int check_readable(const char *path) {
    uint64_t size;
    FILE *f = andrea_file_fopen_regular(path, NULL, ANDREA_TOK_FILE_MAX, &size);
    if (!f) {
        return andrea_set_error("GPT-2 tokenizer: %s (it needs encoder.json and vocab.bpe from "
                                "OpenAI's release)", andrea_error());
    }
    fclose(f);
    return 0;
}

andrea_tokenizer *andrea_tokenizer_gpt2_load(const char *encoder_json, const char *vocab_bpe) {
    int32_t inv[324];
    gpt2_unicode_to_byte(inv);
    andrea_tokenizer *t = NULL;
    json_t *root = NULL;
    strmap tokens = {0};       /* token bytes -> strmap id */
    int32_t *tok_id = NULL;    /* strmap id -> GPT-2 id */
    int32_t *merges = NULL;
    andrea_bytes vb = {0}, tmp = {0}, tmp2 = {0};
    int32_t byte_to_id[256];
    for (int i = 0; i < 256; i++) byte_to_id[i] = -1;

    if (check_readable(encoder_json) || check_readable(vocab_bpe)) goto done;
    json_error_t jerr;
    /* read through util/file.c (regular files only, bounded), then parse */
    if (andrea_file_read_max(encoder_json, ANDREA_TOK_FILE_MAX, &tmp)) goto done;
    root = json_loadb((const char *)tmp.data, tmp.len, JSON_REJECT_DUPLICATES, &jerr);
    tmp.len = 0;
    if (!root) {
        andrea_set_error("'%s': line %d column %d: %s", encoder_json, jerr.line, jerr.column, jerr.text);
        goto done;
    }
    if (!json_is_object(root)) {
        andrea_set_error("'%s': expected a JSON object of token -> id", encoder_json);
        goto done;
    }
    size_t V = json_object_size(root);
    if (V < 257 || V > (1u << 24)) {
        andrea_set_error("'%s': %zu entries; a GPT-2 vocabulary has 256 bytes + merges + 1", encoder_json, V);
        goto done;
    }
    if (andrea_strmap_init(&tokens, V) || !(tok_id = malloc(V * sizeof *tok_id))) {
        andrea_set_error("out of memory (GPT-2 vocabulary)");
        goto done;
    }
    int32_t bos = -1;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        json_int_t id = json_is_integer(val) ? json_integer_value(val) : -1;
        if (id < 0 || (size_t)id >= V) {
            andrea_set_error("'%s': entry \"%s\": id must be an integer in [0, %zu)", encoder_json, key, V);
            goto done;
        }
        if (strcmp(key, GPT2_SPECIAL) == 0) {
            bos = (int32_t)id;
            continue;
        }
        if (gpt2_token_bytes(inv, (const uint8_t *)key, strlen(key), &tmp)) {
            andrea_set_error("'%s': entry \"%s\" has a character outside GPT-2's byte alphabet", encoder_json, key);
            goto done;
        }
        int added;
        int64_t sid = andrea_strmap_intern(&tokens, tmp.data, tmp.len, &added);
        if (sid < 0) goto done;
        if (!added) {
            andrea_set_error("'%s': entry \"%s\" repeats the bytes of another entry", encoder_json, key);
            goto done;
        }
        tok_id[sid] = (int32_t)id;
        if (tmp.len == 1) byte_to_id[tmp.data[0]] = (int32_t)id;
    }
    if (bos < 0) {
        andrea_set_error("'%s': no \"%s\" entry", encoder_json, GPT2_SPECIAL);
        goto done;
    }
    for (int i = 0; i < 256; i++)
        if (byte_to_id[i] < 0) {
            andrea_set_error("'%s': no token for byte %d", encoder_json, i);
            goto done;
        }

    if (andrea_file_read_max(vocab_bpe, ANDREA_TOK_FILE_MAX, &vb)) goto done;
    int32_t n_expected = (int32_t)V - 257, nm = 0;
    merges = malloc((size_t)(n_expected ? n_expected : 1) * 3 * sizeof *merges);
    if (!merges) {
        andrea_set_error("out of memory (GPT-2 merges)");
        goto done;
    }
    size_t pos = 0;
    for (int line = 1; pos < vb.len; line++) {
        const uint8_t *ls = vb.data + pos;
        const uint8_t *nl = memchr(ls, '\n', vb.len - pos);
        size_t ll = nl ? (size_t)(nl - ls) : vb.len - pos;
        pos += ll + (nl ? 1 : 0);
        if (ll && ls[ll - 1] == '\r') ll--;
        if (ll == 0 || (line == 1 && ll >= 8 && memcmp(ls, "#version", 8) == 0)) continue;
        const uint8_t *sp = memchr(ls, ' ', ll);
        if (!sp || sp == ls || sp == ls + ll - 1 || memchr(sp + 1, ' ', ll - (size_t)(sp + 1 - ls))) {
            andrea_set_error("'%s': line %d: expected two tokens 'A B'", vocab_bpe, line);
            goto done;
        }
        if (nm >= n_expected) {
            andrea_set_error("'%s': line %d: more merges than encoder.json has tokens for (%d)",
                             vocab_bpe, line, n_expected);
            goto done;
        }
        int64_t ia, ib, iab;
        if (gpt2_token_bytes(inv, ls, (size_t)(sp - ls), &tmp) ||
            (ia = andrea_strmap_find(&tokens, tmp.data, tmp.len)) < 0 ||
            gpt2_token_bytes(inv, sp + 1, ll - (size_t)(sp + 1 - ls), &tmp2) ||
            (ib = andrea_strmap_find(&tokens, tmp2.data, tmp2.len)) < 0 ||
            andrea_bytes_append(&tmp, tmp2.data, tmp2.len) ||
            (iab = andrea_strmap_find(&tokens, tmp.data, tmp.len)) < 0) {
            andrea_set_error("'%s': line %d: a token of this merge (or their concatenation) is not "
                             "in encoder.json", vocab_bpe, line);
            goto done;
        }
        merges[3 * nm] = tok_id[ia];
        merges[3 * nm + 1] = tok_id[ib];
        merges[3 * nm + 2] = tok_id[iab];
        nm++;
    }
    if (nm != n_expected) {
        andrea_set_error("'%s': %d merges, but encoder.json has %zu tokens (needs %d merges)",
                         vocab_bpe, nm, V, n_expected);
        goto done;
    }
    t = andrea_bpe_build(&andrea_tok_gpt2_ops, (int32_t)V, bos, byte_to_id, merges, nm,
                  (const uint8_t *)GPT2_SPECIAL, strlen(GPT2_SPECIAL));
    if (!t) {
        andrea_set_error("'%s' + '%s': %s", encoder_json, vocab_bpe, andrea_error());
    }
done:
    json_decref(root);
    andrea_strmap_free(&tokens);
    free(tok_id);
    free(merges);
    andrea_bytes_free(&vb);
    andrea_bytes_free(&tmp);
    andrea_bytes_free(&tmp2);
    return t;
}

#else

andrea_tokenizer *andrea_tokenizer_gpt2_load(const char *encoder_json, const char *vocab_bpe) {
    (void)vocab_bpe;
    (void)gpt2_token_bytes;
    (void)gpt2_unicode_to_byte;
    andrea_set_error("'%s': reading GPT-2's encoder.json needs jansson, and this andrea was built "
                     "without it; install libjansson-dev and rebuild", encoder_json);
    return NULL;
}

#endif
