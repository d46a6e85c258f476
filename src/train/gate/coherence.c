/*
 * coherence.c - the coherence gate's measurements (andrea_gate.h): one pass over a
 * sample that counts what both gates need, and the course's four parts from the counts
 * (the honest gate's factors: gate_honest.c). Formulas and the reasons for each choice:
 * docs/coherence-gate.md.
 *
 * Words are maximal runs of non-whitespace bytes (ASCII space, \t \n \v \f \r).
 * For n-grams a word is lower-cased (ASCII) and stripped of leading and
 * trailing punctuation, so "Region," and "region" are the same word; a word
 * that is only punctuation ("'''''''") is kept whole.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_gate.h"
#include "train/gate/gate_internal.h"
#include "util/error.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/utf8.h"
#include "train/gate/strset.h"

/* ---- a set of word-id tuples (bigrams, trigrams) ------------------------------------ */

typedef struct {
    int32_t (*key)[3];
    uint8_t *used;
    size_t cap, n;
} tupleset;

static size_t tuple_hash(const int32_t *k) {
    uint64_t h = (uint64_t)(uint32_t)k[0] * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(uint32_t)k[1] * 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
    h ^= (uint64_t)(uint32_t)k[2] * 0x165667B19E3779F9ull + (h << 6) + (h >> 2);
    return (size_t)(h ^ (h >> 29));
}

/* Adds k; 0 on success (new or not), -1 when out of memory. */
static int tupleset_add(tupleset *s, const int32_t *k) {
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        int32_t (*key)[3] = malloc(cap * sizeof *key);
        uint8_t *used = calloc(cap, 1);
        if (!key || !used) {
            free(key);
            free(used);
            return -1;
        }
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->used[i]) continue;
            size_t j = tuple_hash(s->key[i]) & (cap - 1);
            while (used[j]) j = (j + 1) & (cap - 1);
            memcpy(key[j], s->key[i], sizeof key[j]);
            used[j] = 1;
        }
        free(s->key);
        free(s->used);
        s->key = key;
        s->used = used;
        s->cap = cap;
    }
    size_t i = tuple_hash(k) & (s->cap - 1);
    for (; s->used[i]; i = (i + 1) & (s->cap - 1))
        if (memcmp(s->key[i], k, sizeof s->key[i]) == 0) return 0;
    memcpy(s->key[i], k, sizeof s->key[i]);
    s->used[i] = 1;
    s->n++;
    return 0;
}

static void tupleset_free(tupleset *s) {
    free(s->key);
    free(s->used);
    memset(s, 0, sizeof *s);
}

/* ---- the gate object ---------------------------------------------------------------- */

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

static andrea_gate *gate_new(void) {
    andrea_gate *g = calloc(1, sizeof *g);
    if (!g) andrea_set_error("out of memory for the coherence gate");
    return g;
}

/* Adds one word, lower-cased; empty words are skipped. */
static int gate_add(andrea_gate *g, const char *w, size_t n) {
    char buf[256];
    if (n == 0 || n > sizeof buf) return 0; /* no real word is longer; skipping is harmless */
    for (size_t i = 0; i < n; i++) buf[i] = lower(w[i]);
    return andrea_strset_add(&g->words, buf, n) < 0 ? -1 : 0;
}

andrea_gate *andrea_gate_from_words(const char *const *words, size_t n) {
    andrea_gate *g = gate_new();
    if (!g) return NULL;
    for (size_t i = 0; i < n; i++)
        if (gate_add(g, words[i], strlen(words[i]))) {
            andrea_gate_free(g);
            andrea_set_error("out of memory for the coherence gate's word list");
            return NULL;
        }
    return g;
}

andrea_gate *andrea_gate_load(const char *path) {
    const char *env = getenv("ANDREA_WORDS");
    const char *tries[3] = {path, NULL, NULL};
    int n_tries = 1;
    if (!path) {
        n_tries = 0;
        if (env && *env) tries[n_tries++] = env;
        tries[n_tries++] = "/usr/share/dict/american-english";
        tries[n_tries++] = "/usr/share/dict/words";
    }
    FILE *f = NULL;
    const char *used = NULL;
    uint64_t size;
    for (int i = 0; i < n_tries && !f; i++)
        if ((f = andrea_file_fopen_regular(tries[i], "word list", 1u << 30, &size))) used = tries[i];
    if (!f) {
        if (path) {
            andrea_set_error("coherence gate: cannot read the word list '%s' (%s)", path, andrea_error());
        } else
            andrea_set_error("coherence gate: no English word list found (tried $ANDREA_WORDS, "
                             "/usr/share/dict/american-english, /usr/share/dict/words); install "
                             "Debian's wamerican (apt-get install wamerican) or give a file with "
                             "one word per line");
        return NULL;
    }
    andrea_gate *g = gate_new();
    if (!g) {
        fclose(f);
        return NULL;
    }
    snprintf(g->path, sizeof g->path, "%s", used);
    char line[512];
    int bad = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\r\n");
        bad = gate_add(g, line, n);
    }
    if (ferror(f)) bad = 1;
    fclose(f);
    if (bad || g->words.n == 0) {
        andrea_set_error("coherence gate: word list '%s' %s", used,
                         bad ? "could not be read (I/O error or out of memory)" : "is empty");
        andrea_gate_free(g);
        return NULL;
    }
    return g;
}

void andrea_gate_free(andrea_gate *g) {
    if (!g) return;
    andrea_strset_free(&g->words);
    andrea_gate_ref_free(g->ref);
    free(g);
}

size_t andrea_gate_num_words(const andrea_gate *g) { return g->words.n; }
const char *andrea_gate_words_path(const andrea_gate *g) { return g->path; }

/* ---- scoring -------------------------------------------------------------------------- */

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static int is_punct(unsigned char c) {
    return c > 0x20 && c < 0x7f && !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') &&
           !(c >= 'A' && c <= 'Z');
}

/* Length of a typographic quote or dash (U+2018 U+2019 U+201C U+201D U+2013 U+2014) at w, else 0. */
static size_t typo_punct(const unsigned char *w, size_t n) {
    if (n >= 3 && w[0] == 0xE2 && w[1] == 0x80 &&
        (w[2] == 0x98 || w[2] == 0x99 || w[2] == 0x9C || w[2] == 0x9D || w[2] == 0x93 || w[2] == 0x94))
        return 3;
    return 0;
}
static size_t typo_punct_end(const unsigned char *w, size_t n) {
    return n >= 3 ? typo_punct(w + n - 3, 3) : 0;
}

/* Strips leading and trailing punctuation (ASCII and typographic); returns the core's length. */
static size_t strip(const char **w, size_t n) {
    const unsigned char *u = (const unsigned char *)*w;
    for (;;) {
        size_t t;
        if (n && is_punct(u[0])) u++, n--;
        else if ((t = typo_punct(u, n))) u += t, n -= t;
        else break;
    }
    for (;;) {
        size_t t;
        if (n && is_punct(u[n - 1])) n--;
        else if ((t = typo_punct_end(u, n))) n -= t;
        else break;
    }
    *w = (const char *)u;
    return n;
}

int andrea_gate_next_word(const char *text, size_t len, size_t *pos, const char **w, size_t *n,
                          const char **core, size_t *cn) {
    size_t i = *pos;
    while (i < len && is_space((unsigned char)text[i])) i++;
    if (i >= len) return *pos = len, 0;
    size_t a = i;
    while (i < len && !is_space((unsigned char)text[i])) i++;
    *pos = i;
    *w = *core = text + a;
    *n = i - a;
    *cn = strip(core, *n);
    return 1;
}

/* Is the (stripped) word in the list? Tries the whole word lower-cased, with U+2019
 * read as an apostrophe, then - if it has hyphens or dashes - every part on its own. */
int andrea_gate_in_list(const andrea_gate *g, const char *w, size_t n) {
    char buf[256];
    size_t m = 0;
    int has_dash = 0;
    for (size_t i = 0; i < n; i++) {
        if (m >= sizeof buf) return 0;
        size_t t = typo_punct((const unsigned char *)w + i, n - i);
        if (t && (unsigned char)w[i + 2] == 0x99) { /* right single quote: apostrophe */
            buf[m++] = '\'';
            i += 2;
        } else if (t) { /* other quotes and dashes inside a word separate its parts */
            buf[m++] = '-';
            has_dash = 1;
            i += 2;
        } else {
            if (w[i] == '-') has_dash = 1;
            buf[m++] = lower(w[i]);
        }
    }
    if (m == 0) return 0;
    if (andrea_strset_find(&g->words, buf, m) >= 0) return 1;
    if (!has_dash) return 0;
    int parts = 0;
    for (size_t a = 0; a < m;) {
        size_t b = a;
        while (b < m && buf[b] != '-') b++;
        if (b > a) {
            if (andrea_strset_find(&g->words, buf + a, b - a) < 0) return 0;
            parts++;
        }
        a = b + 1;
    }
    return parts > 0;
}

/* A word counts for the English part when its core has a letter: an ASCII one
 * or any non-ASCII byte (Cyrillic, CJK, ... must count, and fail). Numbers and
 * bare punctuation are neither English nor evidence against it. */
int andrea_gate_is_candidate(const char *w, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        if (c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 1;
    }
    return 0;
}

/* Letters of a word's core for the honest gate's weighting: ASCII letters and code
 * points outside ASCII (the first byte of each; other scripts weigh like ours). */
static int64_t count_letters(const char *w, size_t n) {
    int64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        k += (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0xC0;
    }
    return k;
}

/* Garbage for the honest gate's charset factor: a control character that is not
 * whitespace, DEL, a C1 control, U+FFFD (a decoder's replacement), or not UTF-8. */
static int is_garbage(uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || cp == 0xFFFD || cp >= 0x110000u;
}

/* Distinct non-whitespace code points; bytes that are not valid UTF-8 (strict:
 * util/utf8.c) count as distinct values of their own (0x110000 + byte). Also the
 * number of them and of garbage ones (is_garbage). */
static int count_chars(const unsigned char *s, size_t n, andrea_gate_result *out) {
    tupleset seen = {0};
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        uint32_t cp;
        size_t len = (size_t)andrea_utf8_decode(s + i, n - i, &cp);
        if (!len) {
            cp = 0x110000u + c;
            len = 1;
        }
        i += len;
        if (len == 1 && is_space(c)) continue;
        out->chars++;
        out->bad_chars += is_garbage(cp);
        int32_t key[3] = {(int32_t)cp, 0, 0};
        if (tupleset_add(&seen, key)) {
            tupleset_free(&seen);
            return -1;
        }
    }
    out->distinct_chars = (int64_t)seen.n;
    tupleset_free(&seen);
    return 0;
}

/* Distinct 8-byte windows of the text with every whitespace run read as one space: a
 * loop shows here even when it has no spaces for the word n-grams to see. */
#define BYTE_NGRAM 8
static int count_byte_ngrams(const unsigned char *s, size_t n, andrea_gate_result *out) {
    tupleset seen = {0};
    unsigned char win[BYTE_NGRAM];
    size_t have = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = is_space(s[i]) ? ' ' : s[i];
        if (c == ' ' && have && win[(have - 1) % BYTE_NGRAM] == ' ') continue;
        win[have++ % BYTE_NGRAM] = c;
        if (have < BYTE_NGRAM) continue;
        int32_t key[3] = {0, 0, 1};
        for (size_t k = 0; k < BYTE_NGRAM; k++) /* oldest first */
            key[k / 4] = (int32_t)(((uint32_t)key[k / 4] << 8) | win[(have + k) % BYTE_NGRAM]);
        out->byte_ngrams++;
        if (tupleset_add(&seen, key)) {
            tupleset_free(&seen);
            return -1;
        }
    }
    out->distinct_byte_ngrams = (int64_t)seen.n;
    tupleset_free(&seen);
    return 0;
}

/* Bytes of the text (whitespace runs as one space) that lie in a window of REPEAT_SPAN
 * bytes seen earlier in it: a paragraph said twice covers half the text, a phrase x 20
 * nearly all, prose almost nothing (docs/coherence-gate.md). Windows are compared by a
 * 64-bit FNV-1a of their bytes: a false match needs a 64-bit collision. */
#define REPEAT_SPAN 32
static int count_repeats(const unsigned char *s, size_t n, andrea_gate_result *out) {
    unsigned char *b = malloc(n ? n : 1);
    if (!b) return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = is_space(s[i]) ? ' ' : s[i];
        if (c != ' ' || !m || b[m - 1] != ' ') b[m++] = c;
    }
    tupleset seen = {0};
    int64_t covered = 0;
    size_t end = 0; /* covered bytes so far end here */
    int rc = 0;
    for (size_t i = 0; i + REPEAT_SPAN <= m && !rc; i++) {
        uint64_t h = andrea_fnv1a64(ANDREA_HASH_INIT, (const char *)b + i, REPEAT_SPAN);
        int32_t key[3] = {(int32_t)(uint32_t)h, (int32_t)(uint32_t)(h >> 32), 2};
        size_t before = seen.n;
        rc = tupleset_add(&seen, key);
        if (!rc && seen.n == before) { /* seen before: its bytes are a repeat */
            size_t from = i > end ? i : end;
            covered += (int64_t)(i + REPEAT_SPAN - from);
            end = i + REPEAT_SPAN;
        }
    }
    out->norm_bytes = (int64_t)m;
    out->repeat_bytes = covered;
    tupleset_free(&seen);
    free(b);
    return rc;
}

int andrea_gate_measure(const char *text, size_t len, const andrea_gate *g,
                        andrea_gate_result *out) {
    memset(out, 0, sizeof *out);
    if (!g) return andrea_set_error("coherence gate: no word list loaded (andrea_gate_load)");
    strset vocab = {0};
    tupleset bi = {0}, tri = {0};
    int32_t *ids = NULL;
    size_t n_ids = 0, cap_ids = 0;
    char buf[256];
    int rc = -1;
    size_t pos = 0;
    const char *w, *core;
    size_t n, cn;
    while (andrea_gate_next_word(text, len, &pos, &w, &n, &core, &cn)) {
        /* the word for n-grams: stripped and lower-cased, or whole if only punctuation */
        const char *key = cn ? core : w;
        size_t kn = cn ? cn : n;
        if (kn > sizeof buf) kn = sizeof buf; /* longer words are compared on their first 256 bytes */
        for (size_t k = 0; k < kn; k++) buf[k] = lower(key[k]);
        long id = andrea_strset_add(&vocab, buf, kn);
        if (id < 0) goto oom;
        if (n_ids == cap_ids) {
            size_t c = cap_ids ? cap_ids * 2 : 256;
            int32_t *p = realloc(ids, c * sizeof *p);
            if (!p) goto oom;
            ids = p;
            cap_ids = c;
        }
        ids[n_ids++] = (int32_t)id;
        if (cn && andrea_gate_is_candidate(core, cn)) {
            int64_t letters = count_letters(core, cn);
            out->candidates++;
            out->letters += letters;
            if (andrea_gate_in_list(g, core, cn)) {
                out->english_words++;
                out->english_letters += letters;
            }
        }
    }
    out->words = (int64_t)n_ids;
    for (size_t k = 0; k + 1 < n_ids; k++) {
        int32_t key2[3] = {ids[k], ids[k + 1], -1};
        if (tupleset_add(&bi, key2)) goto oom;
        if (k + 2 < n_ids) {
            int32_t key3[3] = {ids[k], ids[k + 1], ids[k + 2]};
            if (tupleset_add(&tri, key3)) goto oom;
        }
    }
    out->bigrams = n_ids >= 2 ? (int64_t)n_ids - 1 : 0;
    out->trigrams = n_ids >= 3 ? (int64_t)n_ids - 2 : 0;
    out->distinct_bigrams = (int64_t)bi.n;
    out->distinct_trigrams = (int64_t)tri.n;
    if (count_chars((const unsigned char *)text, len, out)) goto oom;
    if (count_byte_ngrams((const unsigned char *)text, len, out)) goto oom;
    if (count_repeats((const unsigned char *)text, len, out)) goto oom;

    out->bigram = out->bigrams ? 35.0 * (double)out->distinct_bigrams / (double)out->bigrams : 0;
    out->trigram =
        out->trigrams ? 35.0 * (double)out->distinct_trigrams / (double)out->trigrams : 0;
    out->english =
        out->candidates ? 20.0 * (double)out->english_words / (double)out->candidates : 0;
    out->chardiv = 10.0 * (out->distinct_chars >= 20 ? 1.0 : (double)out->distinct_chars / 20.0);
    out->total = out->bigram + out->trigram + out->english + out->chardiv;
    out->pass = out->total >= ANDREA_GATE_THRESHOLD;
    out->kind = ANDREA_GATE_COURSE;
    rc = 0;
    goto done;
oom:
    andrea_set_error("coherence gate: out of memory scoring %zu bytes", len);
done:
    andrea_strset_free(&vocab);
    tupleset_free(&bi);
    tupleset_free(&tri);
    free(ids);
    return rc;
}

int andrea_gate_watch_update(andrea_gate_watch *w, const andrea_gate_result *r) {
    w->samples++;
    w->consecutive_fails = r->pass ? 0 : w->consecutive_fails + 1;
    return w->consecutive_fails >= ANDREA_GATE_PATIENCE;
}
