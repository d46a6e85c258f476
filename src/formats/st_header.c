/* st_header.c - a small strict JSON reader for the safetensors header: objects,
 * arrays, strings (with escapes, decoded to UTF-8), non-negative integers; other
 * values are skipped with a depth limit. Every read is checked against the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fmt.h"
#include "formats/st_header.h"
#include "util/error.h"
#include "util/utf8.h"

typedef struct {
    const uint8_t *p;
    size_t n, pos;
    const char *what;
} js;

static int fail(js *j, const char *msg) {
    return andrea_set_error("%s: header JSON: %s at byte %zu", j->what, msg, 8 + j->pos);
}

static void ws(js *j) {
    while (j->pos < j->n && (j->p[j->pos] == ' ' || j->p[j->pos] == '\t' || j->p[j->pos] == '\n' ||
                             j->p[j->pos] == '\r'))
        j->pos++;
}

static int expect(js *j, char c) {
    ws(j);
    if (j->pos >= j->n || j->p[j->pos] != (uint8_t)c) {
        char msg[32];
        snprintf(msg, sizeof msg, "expected '%c'", c);
        return fail(j, msg);
    }
    j->pos++;
    return 0;
}

static int peek(js *j, char c) {
    ws(j);
    return j->pos < j->n && j->p[j->pos] == (uint8_t)c;
}

static int hex4(js *j, uint32_t *v) {
    if (j->n - j->pos < 4) return fail(j, "truncated \\u escape");
    *v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = j->p[j->pos++];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return fail(j, "bad \\u escape");
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

/* A string, decoded and NUL-terminated (malloc'd); embedded NULs are refused. */
static int str(js *j, char **out) {
    *out = NULL;
    if (expect(j, '"')) return -1;
    size_t start = j->pos;
    char *s = malloc(j->n - start + 1); /* decoding never grows a string */
    if (!s) return andrea_set_error("out of memory (header of %s)", j->what);
    size_t k = 0;
    for (;;) {
        if (j->pos >= j->n) {
            free(s);
            return fail(j, "unterminated string");
        }
        uint8_t c = j->p[j->pos++];
        if (c == '"') break;
        if (c < 0x20) {
            free(s);
            return fail(j, "control character in a string");
        }
        if (c != '\\') {
            s[k++] = (char)c;
            continue;
        }
        if (j->pos >= j->n) {
            free(s);
            return fail(j, "unterminated escape");
        }
        c = j->p[j->pos++];
        const char *simple = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *hit = c ? strchr(simple, c) : NULL;
        if (hit) {
            s[k++] = to[hit - simple];
            continue;
        }
        uint32_t cp, lo;
        if (c != 'u' || hex4(j, &cp)) {
            free(s);
            return c != 'u' ? fail(j, "bad escape") : -1;
        }
        if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair: \uD8xx\uDCxx */
            if (j->n - j->pos < 2 || j->p[j->pos] != '\\' || j->p[j->pos + 1] != 'u') {
                free(s);
                return fail(j, "lone surrogate");
            }
            j->pos += 2;
            if (hex4(j, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                free(s);
                return fail(j, "bad surrogate pair");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            free(s);
            return fail(j, "lone surrogate");
        }
        if (cp == 0) {
            free(s);
            return fail(j, "NUL in a string");
        }
        k += (size_t)andrea_utf8_encode(cp, (uint8_t *)s + k);
    }
    s[k] = 0;
    *out = s;
    return 0;
}

static int uint_val(js *j, uint64_t *v) {
    ws(j);
    size_t start = j->pos;
    *v = 0;
    while (j->pos < j->n && j->p[j->pos] >= '0' && j->p[j->pos] <= '9') {
        unsigned d = j->p[j->pos] - '0';
        if (*v > (UINT64_MAX - d) / 10) return fail(j, "integer too large");
        *v = *v * 10 + d;
        j->pos++;
    }
    if (j->pos == start) return fail(j, "expected a non-negative integer");
    return 0;
}

static int skip_value(js *j, int depth) {
    if (depth > 16) return fail(j, "nested too deeply");
    ws(j);
    if (j->pos >= j->n) return fail(j, "expected a value");
    uint8_t c = j->p[j->pos];
    if (c == '"') {
        char *s;
        if (str(j, &s)) return -1;
        free(s);
        return 0;
    }
    if (c == '{' || c == '[') {
        j->pos++;
        char close = c == '{' ? '}' : ']';
        if (peek(j, close)) return j->pos++, 0;
        for (;;) {
            if (c == '{') {
                char *k;
                if (str(j, &k)) return -1;
                free(k);
                if (expect(j, ':')) return -1;
            }
            if (skip_value(j, depth + 1)) return -1;
            if (peek(j, ',')) {
                j->pos++;
                continue;
            }
            return expect(j, close);
        }
    }
    /* numbers and literals: a run of their characters */
    size_t start = j->pos;
    while (j->pos < j->n && strchr("0123456789+-.eEtruefalsn", j->p[j->pos]) && j->p[j->pos])
        j->pos++;
    return j->pos == start ? fail(j, "unexpected character") : 0;
}

static int parse_dtype(js *j, andrea_st_tensor *t) {
    char *s;
    if (str(j, &s)) return -1;
    int rc = 0;
    if (strcmp(s, "F32") == 0) t->dtype = ANDREA_ST_F32;
    else if (strcmp(s, "F16") == 0) t->dtype = ANDREA_ST_F16;
    else if (strcmp(s, "BF16") == 0) t->dtype = ANDREA_ST_BF16;
    else {
        char pr[84], pr2[84];
        rc = andrea_set_error("%s: tensor '%s': dtype '%s' is not one this reader takes (F32, F16, "
                              "BF16)", j->what, andrea_fmt_printable(t->name, strlen(t->name), pr),
                              andrea_fmt_printable(s, strlen(s), pr2));
    }
    free(s);
    return rc;
}

static int parse_uint_array(js *j, uint64_t *v, int max, int *count, const char *what) {
    if (expect(j, '[')) return -1;
    *count = 0;
    if (peek(j, ']')) return j->pos++, 0;
    for (;;) {
        if (*count >= max) return fail(j, what);
        if (uint_val(j, &v[(*count)++])) return -1;
        if (peek(j, ',')) {
            j->pos++;
            continue;
        }
        return expect(j, ']');
    }
}

static int parse_tensor(js *j, andrea_st_tensor *t) {
    int seen = 0;
    char pr[84];
    if (expect(j, '{')) return -1;
    if (!peek(j, '}'))
        for (;;) {
            char *k;
            if (str(j, &k) || expect(j, ':')) return free(k), -1;
            int rc;
            uint64_t v[ANDREA_ST_MAX_DIMS];
            int cnt;
            if (strcmp(k, "dtype") == 0) {
                rc = parse_dtype(j, t);
                seen |= 1;
            } else if (strcmp(k, "shape") == 0) {
                rc = parse_uint_array(j, v, ANDREA_ST_MAX_DIMS, &cnt, "more than 8 dimensions");
                for (int i = 0; !rc && i < cnt; i++) {
                    if (v[i] > (1ull << 40)) rc = fail(j, "absurd dimension");
                    t->shape[i] = (int64_t)v[i];
                }
                t->ndim = cnt;
                seen |= 2;
            } else if (strcmp(k, "data_offsets") == 0) {
                rc = parse_uint_array(j, v, 2, &cnt, "data_offsets has more than 2 entries");
                if (!rc && cnt != 2) rc = fail(j, "data_offsets needs [begin, end]");
                t->begin = v[0];
                t->end = v[1];
                seen |= 4;
            } else {
                rc = skip_value(j, 1);
            }
            free(k);
            if (rc) return -1;
            if (peek(j, ',')) {
                j->pos++;
                continue;
            }
            break;
        }
    if (expect(j, '}')) return -1;
    if (seen != 7)
        return andrea_set_error("%s: tensor '%s' lacks dtype, shape or data_offsets", j->what,
                                andrea_fmt_printable(t->name, strlen(t->name), pr));
    /* shape x element size must be the byte range, computed without overflow */
    uint64_t bytes = t->dtype == ANDREA_ST_F32 ? 4 : 2;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] && bytes > (1ull << 62) / (uint64_t)t->shape[i])
            return andrea_set_error("%s: tensor '%s': absurd shape", j->what,
                                    andrea_fmt_printable(t->name, strlen(t->name), pr));
        bytes *= (uint64_t)t->shape[i];
    }
    if (t->end < t->begin)
        return andrea_set_error("%s: tensor '%s': data_offsets [%llu, %llu] end before they begin",
                                j->what, andrea_fmt_printable(t->name, strlen(t->name), pr),
                                (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end - t->begin != bytes)
        return andrea_set_error("%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, its "
                                "shape and dtype need %llu", j->what,
                                andrea_fmt_printable(t->name, strlen(t->name), pr),
                                (unsigned long long)t->begin, (unsigned long long)t->end,
                                (unsigned long long)(t->end - t->begin), (unsigned long long)bytes);
    return 0;
}

static int parse_meta(js *j, andrea_st_header *h) {
    if (expect(j, '{')) return -1;
    if (peek(j, '}')) return j->pos++, 0;
    for (;;) {
        andrea_st_meta *m = realloc(h->m, (size_t)(h->nm + 1) * sizeof *m);
        if (!m) return andrea_set_error("out of memory (header of %s)", j->what);
        h->m = m;
        m[h->nm] = (andrea_st_meta){NULL, NULL};
        h->nm++;
        if (str(j, &m[h->nm - 1].key) || expect(j, ':') || str(j, &m[h->nm - 1].val)) return -1;
        if (peek(j, ',')) {
            j->pos++;
            continue;
        }
        return expect(j, '}');
    }
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names, so a repeated name is found in O(n log n) even in a hostile header. */
static int check_unique(const andrea_st_header *h, const char *what) {
    char pr[84];
    if (h->nt < 2) return 0;
    char **names = malloc((size_t)h->nt * sizeof *names);
    if (!names) return andrea_set_error("out of memory (header of %s)", what);
    for (int i = 0; i < h->nt; i++) names[i] = h->t[i].name;
    qsort(names, (size_t)h->nt, sizeof *names, cmp_name);
    int rc = 0;
    for (int i = 1; i < h->nt && !rc; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            rc = andrea_set_error("%s: tensor '%s' appears twice", what,
                                  andrea_fmt_printable(names[i], strlen(names[i]), pr));
    free(names);
    return rc;
}

int andrea_st_header_parse(const uint8_t *json, size_t n, andrea_st_header *h, const char *what) {
    memset(h, 0, sizeof *h);
    js j = {json, n, 0, what};
    int cap = 0;
    if (expect(&j, '{')) return -1;
    if (!peek(&j, '}'))
        for (;;) {
            char *k;
            if (str(&j, &k)) goto fail;
            if (expect(&j, ':')) {
                free(k);
                goto fail;
            }
            if (strcmp(k, "__metadata__") == 0) {
                free(k);
                if (parse_meta(&j, h)) goto fail;
            } else {
                if (h->nt == cap) {
                    if (cap >= (1 << 20)) {
                        free(k);
                        andrea_set_error("%s: more than %d tensors", what, 1 << 20);
                        goto fail;
                    }
                    cap = cap ? 2 * cap : 64;
                    andrea_st_tensor *t = realloc(h->t, (size_t)cap * sizeof *t);
                    if (!t) {
                        free(k);
                        andrea_set_error("out of memory (header of %s)", what);
                        goto fail;
                    }
                    h->t = t;
                }
                andrea_st_tensor *t = &h->t[h->nt++];
                memset(t, 0, sizeof *t);
                t->name = k;
                if (parse_tensor(&j, t)) goto fail;
            }
            if (peek(&j, ',')) {
                j.pos++;
                continue;
            }
            break;
        }
    if (expect(&j, '}')) goto fail;
    ws(&j);
    if (j.pos != n) {
        fail(&j, "trailing bytes after the header object");
        goto fail;
    }
    if (check_unique(h, what)) goto fail;
    return 0;
fail:
    andrea_st_header_free(h);
    return -1;
}

void andrea_st_header_free(andrea_st_header *h) {
    for (int i = 0; i < h->nt; i++) free(h->t[i].name);
    for (int i = 0; i < h->nm; i++) {
        free(h->m[i].key);
        free(h->m[i].val);
    }
    free(h->t);
    free(h->m);
    memset(h, 0, sizeof *h);
}

const andrea_st_tensor *andrea_st_find(const andrea_st_header *h, const char *name) {
    for (int i = 0; i < h->nt; i++)
        if (strcmp(h->t[i].name, name) == 0) return &h->t[i];
    return NULL;
}

const char *andrea_st_meta_get(const andrea_st_header *h, const char *key) {
    for (int i = 0; i < h->nm; i++)
        if (strcmp(h->m[i].key, key) == 0) return h->m[i].val;
    return NULL;
}
