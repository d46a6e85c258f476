/* attn_text.c - terminal text of the attention commands (attn_text.h). */
#include "attn_text.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "util/utf8.h"

/* Bytes of the code point at s (a stray byte: 1), so cuts never split a character. */
static size_t next_char(const char *s) {
    uint32_t cp;
    int len = andrea_utf8_decode((const uint8_t *)s, strnlen(s, 4), &cp);
    return len ? (size_t)len : 1;
}

int attn_text_width(const char *s) {
    int w = 0;
    for (; *s; s += next_char(s)) w++;
    return w;
}

void attn_print_cell(FILE *f, const char *s, int width, int right) {
    int w = attn_text_width(s);
    if (w > width) { /* cut to width - 1 code points and mark the cut */
        const char *p = s;
        for (int k = 0; k < width - 1; k++) p += next_char(p);
        fwrite(s, 1, (size_t)(p - s), f);
        fputs("~", f);
        return;
    }
    if (right) fprintf(f, "%*s%s", width - w, "", s);
    else fprintf(f, "%s%*s", s, width - w, "");
}

void attn_print_score(FILE *f, double x, double maxabs, int width) {
    if (isinf(x)) {
        fprintf(f, "%*s", width, x < 0 ? "-inf" : "inf");
        return;
    }
    /* sign + integer digits + point + decimals must leave one column of space */
    int dec = maxabs < 100 ? 3 : maxabs < 1000 ? 2 : maxabs < 10000 ? 1 : 0;
    if (maxabs >= 100000) fprintf(f, "%*.1e", width, x);
    else fprintf(f, "%*.*f", width, dec, x);
}

int attn_prompt_tokens(const char *cmd, const char *lang, const andrea_tokenizer *tok,
                       const char *prompt, int bos, int max_T, andrea_attn_tokens *tk) {
    memset(tk, 0, sizeof *tk);
    if (!*prompt && !bos) {
        fprintf(stderr, "andrea %s: %s\n", cmd, andrea_lang_text(lang, "err.empty"));
        return -1;
    }
    /* no limit here, so that the count is ours to say in lang */
    if (andrea_attn_tokens_encode(tok, prompt, bos, INT_MAX, tk)) {
        fprintf(stderr, "andrea %s: %s\n", cmd, andrea_error());
        return -1;
    }
    if (tk->T > max_T) {
        fprintf(stderr, "andrea %s: ", cmd);
        fprintf(stderr, andrea_lang_text(lang, "err.long"), tk->T, max_T);
        fputc('\n', stderr);
        andrea_attn_tokens_free(tk);
        return -1;
    }
    return 0;
}
