/* docset.c - a manifest source read as documents of token ids (docset.h). */
#include "train/curriculum/docset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/data/corpus.h"
#include "util/error.h"
#include "util/file.h"
#include "util/hash.h"

#ifdef ANDREA_HAVE_JANSSON
#include <jansson.h>
#endif

void andrea_docset_free(andrea_docset *d) {
    free(d->tok);
    free(d->start);
    free(d->val);
    memset(d, 0, sizeof *d);
}

/* Growing arrays of document starts. */
static int push_start(andrea_docset *d, int64_t *cap, int64_t at) {
    if (d->n_docs + 2 > *cap) {
        int64_t nc = *cap ? *cap * 2 : 1024;
        int64_t *p = realloc(d->start, sizeof(int64_t) * (size_t)nc);
        if (!p) return andrea_set_error("out of memory");
        d->start = p;
        *cap = nc;
    }
    d->start[d->n_docs++] = at;
    return 0;
}

/* Appends one document's text, encoded. */
static int add_doc(andrea_docset *d, andrea_ids *ids, int64_t *cap, const andrea_tokenizer *tok,
                   const void *text, size_t n) {
    size_t before = ids->len;
    if (push_start(d, cap, (int64_t)before) || andrea_tokenizer_encode(tok, text, n, 0, ids))
        return -1;
    if (ids->len == before) d->n_docs--; /* nothing in it */
    return 0;
}

/* Start of the next boundary at or after i (n when none); *next: where the text goes on. */
static size_t boundary(const andrea_manifest_source *s, const char *t, size_t n, size_t i,
                       size_t *next) {
    if (s->split == ANDREA_SPLIT_SEPARATOR) {
        size_t k = strlen(s->separator);
        for (size_t j = i; j + k <= n; j++)
            if (memcmp(t + j, s->separator, k) == 0) return *next = j + k, j;
    } else if (s->split != ANDREA_SPLIT_NONE) {
        size_t need = s->split == ANDREA_SPLIT_LINE ? 1 : s->split == ANDREA_SPLIT_PARAGRAPH ? 2 : 3;
        for (size_t j = i; j < n; j++) {
            if (t[j] != '\n') continue;
            size_t r = 0;
            while (j + r < n && t[j + r] == '\n') r++;
            if (r >= need) return *next = j + r, j;
            j += r - 1;
        }
    }
    return *next = n, n;
}

static int load_text(andrea_docset *d, const andrea_manifest_source *s, const andrea_tokenizer *tok,
                     andrea_ids *ids, int64_t *cap) {
    andrea_bytes b = {0};
    if (andrea_file_read(s->path, &b)) return -1;
    size_t off = (size_t)s->range_off, n = b.len;
    /* written so that no sum can wrap: range_len may be anything up to 2^63 */
    if (off > n || (s->range_len >= 0 && (size_t)s->range_len > n - off)) {
        andrea_bytes_free(&b); /* n, not b.len, from here: freeing zeroes it */
        return andrea_set_error("source '%s': range [%lld, +%lld) is outside '%s' (%zu bytes)",
                                s->name, (long long)s->range_off, (long long)s->range_len,
                                s->path, n);
    }
    if (s->range_len >= 0) n = off + (size_t)s->range_len;
    const char *t = (const char *)b.data;
    int rc = 0;
    size_t doc_a = off, doc_b = off, i = off, next;
    while (!rc && i < n) {
        size_t end = boundary(s, t, n, i, &next);
        if (end > i) { /* a non-empty piece [i, end) */
            if (doc_b == doc_a) doc_a = i;
            doc_b = end;
            if ((int64_t)(doc_b - doc_a) >= s->min_bytes) {
                rc = add_doc(d, ids, cap, tok, t + doc_a, doc_b - doc_a);
                doc_a = doc_b;
            }
        }
        i = next;
    }
    if (!rc && doc_b > doc_a) rc = add_doc(d, ids, cap, tok, t + doc_a, doc_b - doc_a);
    andrea_bytes_free(&b);
    return rc;
}

#ifdef ANDREA_HAVE_JANSSON
int andrea_chat_render(const char *line, size_t n, andrea_bytes *out) {
    json_error_t jerr;
    json_t *root = json_loadb(line, n, 0, &jerr);
    json_t *msgs = root ? json_object_get(root, "messages") : NULL;
    if (!root || !json_is_array(msgs) || json_array_size(msgs) == 0) {
        andrea_set_error("%s", root ? "expected an object with a non-empty \"messages\" array"
                                    : jerr.text);
        json_decref(root);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < json_array_size(msgs) && !rc; i++) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        json_t *content = json_object_get(m, "content");
        const char *mark = !role                            ? NULL
                           : strcmp(role, "user") == 0      ? "> "
                           : strcmp(role, "assistant") == 0 ? "< "
                                                            : NULL;
        if (!mark || !json_is_string(content))
            rc = andrea_set_error("message %zu needs role \"user\" or \"assistant\" and a "
                                  "string \"content\"", i);
        else if (andrea_bytes_append(out, mark, 2) ||
                 andrea_bytes_append(out, json_string_value(content), json_string_length(content)) ||
                 andrea_bytes_append(out, "\n", 1))
            rc = andrea_set_error("out of memory");
    }
    json_decref(root);
    return rc;
}
#else
int andrea_chat_render(const char *line, size_t n, andrea_bytes *out) {
    (void)line, (void)n, (void)out;
    return andrea_set_error("JSONL chat needs jansson; this andrea was built without it "
                            "(install libjansson-dev and rebuild)");
}
#endif

static int load_chat(andrea_docset *d, const andrea_manifest_source *s, const andrea_tokenizer *tok,
                     andrea_ids *ids, int64_t *cap) {
    andrea_bytes b = {0}, doc = {0};
    if (andrea_file_read(s->path, &b)) return -1;
    const char *t = (const char *)b.data;
    int rc = 0;
    long lineno = 0;
    for (size_t i = 0; i < b.len && !rc; lineno++) {
        const char *nl = memchr(t + i, '\n', b.len - i);
        size_t e = nl ? (size_t)(nl - t) : b.len, k = e;
        while (k > i && (t[k - 1] == '\r' || t[k - 1] == ' ')) k--;
        doc.len = 0;
        if (k > i && andrea_chat_render(t + i, k - i, &doc)) {
            rc = andrea_set_error("source '%s': '%s' line %ld: %s", s->name, s->path, lineno + 1, andrea_error());
        } else if (k > i) {
            rc = add_doc(d, ids, cap, tok, doc.data, doc.len);
        }
        i = e + 1;
    }
    andrea_bytes_free(&doc);
    andrea_bytes_free(&b);
    return rc;
}

/* A token file: the documents are the runs between BOS tokens. */
static int load_tokens(andrea_docset *d, const andrea_manifest_source *s, const andrea_tokenizer *tok,
                       andrea_ids *ids, int64_t *cap) {
    andrea_tokenizer *t = (andrea_tokenizer *)tok; /* given: corpus_load only reads it */
    int32_t *all;
    int64_t n;
    uint64_t sum;
    if (andrea_corpus_load(s->path, NULL, &t, &all, &n, &sum)) return -1;
    int32_t bos = andrea_tokenizer_bos(tok);
    int rc = 0;
    for (int64_t i = 0; i < n && !rc;) {
        int64_t j = i;
        while (j < n && all[j] != bos) j++;
        if (j > i) {
            rc = push_start(d, cap, (int64_t)ids->len);
            size_t need = ids->len + (size_t)(j - i);
            if (!rc && need > ids->cap) {
                int32_t *p = realloc(ids->data, sizeof(int32_t) * need * 2);
                if (!p) rc = andrea_set_error("out of memory");
                else ids->data = p, ids->cap = need * 2;
            }
            if (!rc) memcpy(ids->data + ids->len, all + i, sizeof(int32_t) * (size_t)(j - i));
            if (!rc) ids->len = need;
        }
        i = j + 1;
    }
    free(all);
    return rc;
}

/* Holds out the validation documents and builds their stream. */
static int split_validation(andrea_docset *d, int64_t n_tok, double vf, int32_t bos) {
    d->start[d->n_docs] = n_tok;
    if (vf > 0 && d->n_docs == 1 && n_tok >= 2) { /* one document: its tail */
        d->start[2] = n_tok;
        d->start[1] = (int64_t)floor((double)n_tok * (1.0 - vf));
        if (d->start[1] < 1) d->start[1] = 1;
        d->n_docs = 2;
    }
    int64_t nv = vf > 0 && d->n_docs >= 2 ? (int64_t)llround(vf * (double)d->n_docs) : 0;
    if (vf > 0 && d->n_docs >= 2 && nv < 1) nv = 1;
    if (nv > d->n_docs - 1) nv = d->n_docs - 1;
    d->n_train = d->n_docs - nv;
    int64_t vt = n_tok - d->start[d->n_train];
    d->val = malloc(sizeof(int32_t) * (size_t)(vt + nv + 1));
    if (!d->val) return andrea_set_error("out of memory");
    d->n_val = 0;
    d->val[d->n_val++] = bos;
    for (int64_t k = d->n_train; k < d->n_docs; k++) {
        int64_t len = d->start[k + 1] - d->start[k];
        memcpy(d->val + d->n_val, d->tok + d->start[k], sizeof(int32_t) * (size_t)len);
        d->n_val += len;
        d->val[d->n_val++] = bos;
    }
    if (nv == 0) d->n_val = 0;
    return 0;
}

int andrea_docset_load(andrea_docset *d, const andrea_manifest_source *s,
                       const andrea_tokenizer *tok, double val_fraction) {
    memset(d, 0, sizeof *d);
    andrea_ids ids = {0};
    int64_t cap = 0;
    int rc = s->format == ANDREA_SRC_CHAT     ? load_chat(d, s, tok, &ids, &cap)
             : s->format == ANDREA_SRC_TOKENS ? load_tokens(d, s, tok, &ids, &cap)
                                              : load_text(d, s, tok, &ids, &cap);
    if (!rc && d->n_docs == 0) rc = andrea_set_error("source '%s': no documents in '%s'", s->name, s->path);
    if (!rc && push_start(d, &cap, 0)) rc = -1; /* room for the end (and a split) */
    if (!rc) {
        d->n_docs--;
        d->tok = ids.data;
        ids.data = NULL;
        rc = split_validation(d, (int64_t)ids.len, val_fraction, andrea_tokenizer_bos(tok));
    }
    if (!rc) {
        uint64_t h = andrea_hash(ANDREA_HASH_INIT, d->tok, sizeof(int32_t) * (size_t)d->start[d->n_docs]);
        h = andrea_hash(h, d->start, sizeof(int64_t) * (size_t)(d->n_docs + 1));
        d->checksum = andrea_hash(h, &d->n_train, sizeof d->n_train);
    }
    andrea_ids_free(&ids);
    if (rc) andrea_docset_free(d);
    return rc;
}
