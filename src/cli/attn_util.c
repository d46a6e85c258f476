/* attn_util.c - token labels, JSON output and the JSON export of `andrea attention`. */
#include "attn_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void attn_label(const andrea_tokenizer *tok, int32_t id, char *buf) {
    size_t len = 0, n = 0;
    const uint8_t *p = andrea_tokenizer_token_bytes(tok, id, &len);
    if (!p) {
        snprintf(buf, ATTN_LABEL_MAX, "<%d?>", (int)id);
        return;
    }
    if (len == 0 || id == andrea_tokenizer_bos(tok)) {
        snprintf(buf, ATTN_LABEL_MAX, "<BOS>");
        return;
    }
    for (size_t i = 0; i < len && n + 8 < ATTN_LABEL_MAX; i++) {
        uint8_t c = p[i];
        if (c == ' ') n += (size_t)snprintf(buf + n, ATTN_LABEL_MAX - n, "\xe2\x90\xa3");
        else if (c == '\n') n += (size_t)snprintf(buf + n, ATTN_LABEL_MAX - n, "\\n");
        else if (c == '\t') n += (size_t)snprintf(buf + n, ATTN_LABEL_MAX - n, "\\t");
        else if (c == '\r') n += (size_t)snprintf(buf + n, ATTN_LABEL_MAX - n, "\\r");
        else if (c == '\\') n += (size_t)snprintf(buf + n, ATTN_LABEL_MAX - n, "\\\\");
        else if (c > 0x20 && c < 0x7f) buf[n++] = (char)c;
        else n += (size_t)snprintf(buf + n, ATTN_LABEL_MAX - n, "\\x%02x", c);
    }
    buf[n] = '\0';
}

int attn_tokens_make(const char *cmd, const andrea_tokenizer *tok, const char *prompt, int bos,
                     int max_T, attn_tokens *out) {
    memset(out, 0, sizeof *out);
    andrea_ids ids = {0};
    if (bos && andrea_ids_push(&ids, andrea_tokenizer_bos(tok))) goto fail;
    if (andrea_tokenizer_encode(tok, prompt, strlen(prompt), 0, &ids)) goto fail;
    if (ids.len == 0) {
        fprintf(stderr, "andrea %s: the prompt is empty; give some text with -p\n", cmd);
        andrea_ids_free(&ids);
        return -1;
    }
    if ((long)ids.len > max_T) {
        fprintf(stderr, "andrea %s: the prompt is %zu tokens, more than the %d allowed here; "
                        "shorten it\n", cmd, ids.len, max_T);
        andrea_ids_free(&ids);
        return -1;
    }
    out->T = (int)ids.len;
    out->ids = ids.data; /* ownership moves to out */
    out->labels = calloc((size_t)out->T, sizeof *out->labels);
    if (!out->labels) {
        fprintf(stderr, "andrea %s: out of memory\n", cmd);
        attn_tokens_free(out);
        return -1;
    }
    for (int i = 0; i < out->T; i++) attn_label(tok, out->ids[i], out->labels[i]);
    return 0;
fail:
    fprintf(stderr, "andrea %s: %s\n", cmd, andrea_error());
    andrea_ids_free(&ids);
    return -1;
}

void attn_tokens_free(attn_tokens *t) {
    free(t->ids);
    free(t->labels);
    memset(t, 0, sizeof *t);
}

int attn_utf8_width(const char *s) {
    int w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

void attn_print_cell(FILE *f, const char *s, int width, int right) {
    int w = attn_utf8_width(s);
    if (w > width) { /* cut to width - 1 code points and mark the cut */
        int seen = 0;
        const char *p = s;
        for (; *p; p++) {
            if (((unsigned char)*p & 0xC0) != 0x80 && seen++ == width - 1) break;
        }
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

/* Length of a valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_valid(const unsigned char *s, size_t n) {
    size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3
                                 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    uint32_t cp = len == 1 ? s[0] : len == 2 ? s[0] & 0x1Fu : len == 3 ? s[0] & 0x0Fu : s[0] & 0x07u;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

void attn_json_string(FILE *f, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            size_t len = utf8_valid(u + i, n - i);
            if (len == 0) { /* not UTF-8: keep the byte as the code point of the same value */
                fprintf(f, "\\u%04x", c);
                i++;
            } else {
                fwrite(u + i, 1, len, f);
                i += len;
            }
        }
    }
    fputc('"', f);
}

void attn_json_float(FILE *f, float x) {
    if (isfinite(x)) fprintf(f, "%.9g", (double)x);
    else fputs("null", f);
}

int attn_write_json(FILE *f, const attn_export *x, unsigned views) {
    const andrea_attn_maps *mp = x->maps;
    const attn_tokens *tk = x->tokens;
    int T = mp->T;
    fprintf(f, "{\"format\":\"andrea-attention\",\"version\":1,\n\"model\":");
    attn_json_string(f, x->model_path, strlen(x->model_path));
    fprintf(f, ",\n\"config\":{\"n_layer\":%d,\"n_head\":%d,\"d_model\":%d,\"head_size\":%d},\n",
            mp->n_layer, mp->n_head, mp->d_model, mp->head_size);
    fprintf(f, "\"scale\":");
    attn_json_float(f, mp->scale);
    fprintf(f, ",\n\"prompt\":");
    attn_json_string(f, x->prompt, strlen(x->prompt));
    fprintf(f, ",\n\"T\":%d,\n\"tokens\":[", T);
    for (int i = 0; i < T; i++) fprintf(f, "%s%d", i ? "," : "", (int)tk->ids[i]);
    fprintf(f, "],\n\"labels\":[");
    for (int i = 0; i < T; i++) {
        if (i) fputc(',', f);
        attn_json_string(f, tk->labels[i], strlen(tk->labels[i]));
    }
    fprintf(f, "],\n\"checks\":{\"prob_mismatches\":%lld,\"out_mismatches\":%lld,"
               "\"raw_mismatches\":%lld},\n\"views\":[",
            (long long)mp->prob_mismatches, (long long)mp->out_mismatches,
            (long long)mp->raw_mismatches);
    int first = 1;
    for (int v = 0; v < ANDREA_VIEW_COUNT; v++)
        if (views & ANDREA_VIEW_BIT(v)) {
            fprintf(f, "%s\"%s\"", first ? "" : ",", andrea_attn_view_name(v));
            first = 0;
        }
    fprintf(f, "],\n\"heads\":[");
    for (int li = 0; li < x->n_layers; li++) {
        for (int hi = 0; hi < x->n_heads; hi++) {
            int l = x->layers[li], h = x->heads[hi];
            const float *A = andrea_attn_map(mp, ANDREA_VIEW_SOFTMAX, l, h);
            andrea_attn_stats st;
            andrea_attn_check ck;
            andrea_attention_stats(A, T, &st);
            andrea_attention_check(A, T, &ck);
            fprintf(f, "%s\n{\"layer\":%d,\"head\":%d,\"entropy\":%.9g,\"entropy_uniform\":%.9g,"
                       "\"mean_distance\":%.9g,\"first_token_weight\":%.9g,"
                       "\"max_row_error\":%.9g,\"upper_nonzero\":%lld",
                    li || hi ? "," : "", l, h, st.entropy, st.entropy_uniform, st.mean_distance,
                    st.first_weight, ck.max_row_error, (long long)ck.upper_nonzero);
            for (int v = 0; v < ANDREA_VIEW_COUNT; v++) {
                if (!(views & ANDREA_VIEW_BIT(v))) continue;
                const float *M = andrea_attn_map(mp, v, l, h);
                fprintf(f, ",\n \"%s\":[", andrea_attn_view_name(v));
                for (int i = 0; i < T; i++) {
                    fputs(i ? ",\n  [" : "[", f);
                    for (int j = 0; j < T; j++) {
                        if (j) fputc(',', f);
                        attn_json_float(f, M[(size_t)i * T + j]);
                    }
                    fputc(']', f);
                }
                fputc(']', f);
            }
            fputc('}', f);
        }
    }
    fprintf(f, "\n]}\n");
    if (ferror(f)) {
        fprintf(stderr, "andrea attention: write error on the JSON output\n");
        return -1;
    }
    return 0;
}
