/* labels.c - a prompt's tokens and the printable label of each, as every view of
 * attention (text, JSON, HTML, PNG, explain) shows them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_inspect.h"
#include "util/error.h"

void andrea_token_label(const andrea_tokenizer *tok, int32_t id, char *buf) {
    size_t len = 0, n = 0;
    const uint8_t *p = andrea_tokenizer_token_bytes(tok, id, &len);
    if (!p) {
        snprintf(buf, ANDREA_LABEL_MAX, "<%d?>", (int)id);
        return;
    }
    if (len == 0 || id == andrea_tokenizer_bos(tok)) {
        snprintf(buf, ANDREA_LABEL_MAX, "<BOS>");
        return;
    }
    /* n + 8: room for the longest escape (4 bytes) and the NUL; longer tokens are cut */
    for (size_t i = 0; i < len && n + 8 < ANDREA_LABEL_MAX; i++) {
        uint8_t c = p[i];
        const char *e = c == ' ' ? "\xe2\x90\xa3" : c == '\n' ? "\\n" : c == '\t' ? "\\t"
                      : c == '\r' ? "\\r" : c == '\\' ? "\\\\" : NULL;
        if (e) n += (size_t)snprintf(buf + n, ANDREA_LABEL_MAX - n, "%s", e);
        else if (c > 0x20 && c < 0x7f) buf[n++] = (char)c;
        else n += (size_t)snprintf(buf + n, ANDREA_LABEL_MAX - n, "\\x%02x", c);
    }
    buf[n] = '\0';
}

int andrea_attn_tokens_encode(const andrea_tokenizer *tok, const char *prompt, int bos, int max_T,
                              andrea_attn_tokens *out) {
    memset(out, 0, sizeof *out);
    andrea_ids ids = {0};
    if ((bos && andrea_ids_push(&ids, andrea_tokenizer_bos(tok))) ||
        andrea_tokenizer_encode(tok, prompt, strlen(prompt), 0, &ids)) {
        andrea_ids_free(&ids);
        return -1; /* andrea_error() says why */
    }
    if (ids.len == 0) {
        andrea_ids_free(&ids);
        return andrea_set_error("the prompt is empty");
    }
    if ((long)ids.len > max_T) {
        andrea_set_error("the prompt is %zu tokens, more than the %d allowed here; shorten it",
                         ids.len, max_T);
        andrea_ids_free(&ids);
        return -1;
    }
    out->T = (int)ids.len;
    out->ids = ids.data; /* ownership moves to out */
    out->labels = calloc((size_t)out->T, sizeof *out->labels);
    if (!out->labels) return andrea_set_error("out of memory for %d token labels", out->T);
    for (int i = 0; i < out->T; i++) andrea_token_label(tok, out->ids[i], out->labels[i]);
    return 0;
}

void andrea_attn_tokens_free(andrea_attn_tokens *t) {
    free(t->ids);
    free(t->labels);
    memset(t, 0, sizeof *t);
}
