/* pretok.c - GPT-2's pre-tokenization: the regex that cuts text into pieces
 * before BPE merges run inside each piece.
 *
 * GPT-2's pattern is
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * We compile it with PCRE2 in UTF mode, with \p{L} and \p{N} as Unicode
 * general categories. \s differs between regex engines (PCRE2 with UCP: Z
 * categories + \t\n\v\f\r; JavaScript: those plus U+FEFF; Python's regex and
 * Rust's fancy-regex: White_Space, which has U+0085 and lacks U+FEFF). We spell
 * the class out as JavaScript's, because the reference encoders we test against
 * (js-tiktoken, gpt-tokenizer) are JavaScript; see docs/tokenizers.md.
 *
 * Invalid UTF-8 (which no reference encoder can even receive: they take
 * strings) is handled by splitting: the input is cut into maximal well-formed
 * runs, each run is pre-tokenized on its own as if it were a whole string, and
 * every ill-formed byte becomes a piece of its own (so BPE maps it to its byte
 * token). Decoding still returns exactly the input bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"

#ifdef ANDREA_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#define WS "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}"
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS
                                   "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+";

struct pretok {
    pcre2_code *code;
    pcre2_match_data *md;
};

pretok *andrea_pretok_gpt2_create(void) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED,
                                     PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        andrea_set_error("GPT-2 regex: PCRE2 compile error at %zu: %s", (size_t)off, (char *)msg);
        return NULL;
    }
    /* JIT is a pure speed-up; without it pcre2_match interprets the same pattern. */
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    pretok *p = calloc(1, sizeof *p);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    if (!p || !md) {
        free(p);
        pcre2_match_data_free(md);
        pcre2_code_free(code);
        andrea_set_error("out of memory (GPT-2 regex)");
        return NULL;
    }
    p->code = code;
    p->md = md;
    return p;
}

void andrea_pretok_free(pretok *p) {
    if (!p) return;
    pcre2_match_data_free(p->md);
    pcre2_code_free(p->code);
    free(p);
}

/* One well-formed run: the pattern's last alternative \s+ and the ones before
 * it cover every character, so matches tile the run without gaps. */
static int run_valid(pretok *p, const uint8_t *s, size_t n, pretok_cb cb, void *ctx) {
    size_t pos = 0;
    while (pos < n) {
        int rc = pcre2_match(p->code, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, p->md, NULL);
        if (rc < 0) return andrea_set_error("GPT-2 regex: no match at offset %zu (PCRE2 %d)", pos, rc);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->md);
        if (ov[0] != pos || ov[1] <= pos)
            return andrea_set_error("GPT-2 regex: gap at offset %zu (internal error)", pos);
        int r = cb(ctx, s + pos, ov[1] - pos);
        if (r) return r;
        pos = ov[1];
    }
    return 0;
}

int andrea_pretok_run(pretok *p, const uint8_t *s, size_t n, pretok_cb cb, void *ctx) {
    size_t start = 0, i = 0;
    while (i < n) {
        uint32_t cp;
        int len;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        len = andrea_utf8_decode(s + i, n - i, &cp);
        if (len) {
            i += (size_t)len;
            continue;
        }
        /* ill-formed byte at i: flush the run before it, then the byte alone */
        int r = run_valid(p, s + start, i - start, cb, ctx);
        if (r) return r;
        r = cb(ctx, s + i, 1);
        if (r) return r;
        start = ++i;
    }
    return run_valid(p, s + start, n - start, cb, ctx);
}

#else /* !ANDREA_HAVE_PCRE2 */

struct pretok {
    int unused;
};

pretok *andrea_pretok_gpt2_create(void) {
    andrea_set_error("GPT-2 pre-tokenization needs PCRE2, and this andrea was built without it; "
                     "install libpcre2-dev and rebuild");
    return NULL;
}

void andrea_pretok_free(pretok *p) { (void)p; }

int andrea_pretok_run(pretok *p, const uint8_t *s, size_t n, pretok_cb cb, void *ctx) {
    (void)p; (void)s; (void)n; (void)cb; (void)ctx;
    return andrea_set_error("built without PCRE2");
}

#endif
