/*
 * gate_reference.c - the honest gate's word model of real text (docs/coherence-gate.md):
 * a word bigram model, interpolated with absolute discounting (D = 0.75) over add-half
 * unigrams, fitted on the first 90% of a reference text's words (Debian's fortunes by
 * default); the last 10% measure what real text scores under it. Two measures of a
 * sample, each relative to that real-text level:
 *
 *   common  the mean log unigram probability of its listed words: a salad of random
 *           dictionary words is made of words real text rarely uses (5.7 nats below
 *           real text under fortunes; dictionary definitions, the most technical real
 *           text measured, 2.1 below).
 *   order   how much better its word pairs are predicted by the bigram model than the
 *           same words in a shuffled order: the mean over adjacent pairs of listed words
 *           of log p(b | a) - log p(b), minus the same mean over 8 seeded shuffles of
 *           its words, divided by the reference's own. Shuffled prose and word salads sit
 *           at 0 +- 0.1 (the words are right, their order is not), real text at 0.3 and
 *           over. Comparing a sample with its own shuffles cancels its vocabulary:
 *           chat about code and Shakespeare are judged on order alone.
 *
 * Words are the gate's (coherence.c): whitespace-separated, stripped of punctuation,
 * lower-cased, only those with a letter.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "train/gate/gate_internal.h"
#include "util/error.h"
#include "util/file.h"

#define DISCOUNT 0.75
#define SHUFFLES 16
#define CHUNK_WORDS 100        /* held-out text is measured in pieces the size of a sample */
#define MIN_REF_WORDS 50000    /* below this the bigram counts are too sparse (measured: a
                                * 16K-word reference separates shuffled text by half as much) */

/* ---- word pairs -> counts (open addressing on a 64-bit key) ------------------------- */

typedef struct {
    uint64_t *key; /* (a + 1) << 32 | (b + 1); 0 = empty */
    uint32_t *count;
    size_t cap, n;
} pairmap;

static size_t pair_slot(uint64_t k, size_t cap) {
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

static uint64_t pair_key(int32_t a, int32_t b) {
    return ((uint64_t)(uint32_t)(a + 1) << 32) | (uint32_t)(b + 1);
}

static int pairmap_add(pairmap *m, uint64_t k) {
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 4096;
        uint64_t *key = calloc(cap, sizeof *key);
        uint32_t *count = calloc(cap, sizeof *count);
        if (!key || !count) {
            free(key);
            free(count);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->key[i]) continue;
            size_t j = pair_slot(m->key[i], cap);
            while (key[j]) j = (j + 1) & (cap - 1);
            key[j] = m->key[i];
            count[j] = m->count[i];
        }
        free(m->key);
        free(m->count);
        m->key = key;
        m->count = count;
        m->cap = cap;
    }
    size_t i = pair_slot(k, m->cap);
    while (m->key[i] && m->key[i] != k) i = (i + 1) & (m->cap - 1);
    if (!m->key[i]) m->key[i] = k, m->n++;
    m->count[i]++;
    return 0;
}

static uint32_t pairmap_get(const pairmap *m, uint64_t k) {
    if (!m->cap) return 0;
    for (size_t i = pair_slot(k, m->cap); m->key[i]; i = (i + 1) & (m->cap - 1))
        if (m->key[i] == k) return m->count[i];
    return 0;
}

/* ---- the model ------------------------------------------------------------------------ */

struct andrea_gate_ref {
    strset vocab;      /* every word of the reference text */
    uint8_t *listed;   /* (vocab.n) in the gate's word list */
    uint32_t *uni;     /* (vocab.n) count in the fitted part */
    uint32_t *ctx;     /* (vocab.n) pairs it starts */
    uint32_t *types;   /* (vocab.n) distinct words that follow it */
    pairmap pairs;
    double n_fit;      /* words fitted */
    double v_fit;      /* distinct words fitted */
    double logp_level; /* held-out text: mean log p(listed word) */
    double order_level;/* held-out text: order gain */
    int64_t n_words;
};

void andrea_gate_ref_free(andrea_gate_ref *ref) {
    if (!ref) return;
    andrea_strset_free(&ref->vocab);
    free(ref->listed);
    free(ref->uni);
    free(ref->ctx);
    free(ref->types);
    free(ref->pairs.key);
    free(ref->pairs.count);
    free(ref);
}

/* The lower-cased core as a key (long words on their first 256 bytes, as for n-grams). */
static size_t word_key(const char *core, size_t cn, char *buf) {
    if (cn > 256) cn = 256;
    for (size_t i = 0; i < cn; i++)
        buf[i] = core[i] >= 'A' && core[i] <= 'Z' ? (char)(core[i] - 'A' + 'a') : core[i];
    return cn;
}

/* A text as word ids (-1: not in the reference's vocabulary) and listed flags. */
typedef struct {
    int32_t *id;
    uint8_t *listed;
    size_t n, cap;
} wordseq;

static void wordseq_free(wordseq *s) {
    free(s->id);
    free(s->listed);
    memset(s, 0, sizeof *s);
}

static int wordseq_push(wordseq *s, int32_t id, int listed) {
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 256;
        int32_t *id2 = realloc(s->id, c * sizeof *id2);
        if (id2) s->id = id2;
        uint8_t *l2 = realloc(s->listed, c);
        if (l2) s->listed = l2;
        if (!id2 || !l2) return -1;
        s->cap = c;
    }
    s->id[s->n] = id;
    s->listed[s->n++] = (uint8_t)listed;
    return 0;
}

/* Words of text as ids in vocab: added to add_to, or looked up in find_in (-1: absent). */
static int read_words(const andrea_gate *g, strset *add_to, const strset *find_in,
                      const char *text, size_t len, wordseq *out) {
    size_t pos = 0, n, cn;
    const char *w, *core;
    char buf[256];
    while (andrea_gate_next_word(text, len, &pos, &w, &n, &core, &cn)) {
        if (!cn || !andrea_gate_is_candidate(core, cn)) continue;
        size_t k = word_key(core, cn, buf);
        long id = add_to ? andrea_strset_add(add_to, buf, k) : andrea_strset_find(find_in, buf, k);
        if (add_to && id < 0) return -1;
        if (wordseq_push(out, (int32_t)id, andrea_gate_in_list(g, core, cn))) return -1;
    }
    return 0;
}

static double log_uni(const andrea_gate_ref *r, int32_t w) {
    double c = w >= 0 ? r->uni[w] : 0;
    return log((c + 0.5) / (r->n_fit + 0.5 * (r->v_fit + 1)));
}

/* log p(b | a) - log p(b): what the pair says beyond its second word's frequency. */
static double pair_gain(const andrea_gate_ref *r, int32_t a, int32_t b) {
    if (a < 0 || !r->ctx[a]) return 0.0;
    double pu = exp(log_uni(r, b));
    double c = b >= 0 ? pairmap_get(&r->pairs, pair_key(a, b)) : 0;
    double ctx = r->ctx[a];
    double p = (c > DISCOUNT ? c - DISCOUNT : 0) / ctx + DISCOUNT * r->types[a] / ctx * pu;
    return log(p) - log(pu);
}

/* Mean pair gain over adjacent pairs of listed words of id[order[k]]; *pairs counted. */
static double mean_gain(const andrea_gate_ref *r, const wordseq *s, const size_t *order,
                        int64_t *pairs) {
    double sum = 0;
    int64_t n = 0;
    for (size_t k = 0; k + 1 < s->n; k++) {
        size_t a = order[k], b = order[k + 1];
        if (!s->listed[a] || !s->listed[b]) continue;
        sum += pair_gain(r, s->id[a], s->id[b]);
        n++;
    }
    *pairs = n;
    return n ? sum / (double)n : 0.0;
}

/* The sample-level measures of s[from, from + n): mean log p of listed words (*listed of
 * them) and the order gain (*pairs pairs). 0 or -1 (out of memory). */
static int measure_seq(const andrea_gate_ref *r, const wordseq *all, size_t from, size_t n,
                       double *logp, int64_t *listed, double *gain, int64_t *pairs) {
    wordseq s = {all->id + from, all->listed + from, n, n};
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return -1;
    double lp = 0;
    int64_t nl = 0;
    for (size_t k = 0; k < n; k++) {
        order[k] = k;
        if (s.listed[k]) lp += log_uni(r, s.id[k]), nl++;
    }
    *logp = nl ? lp / (double)nl : 0.0;
    *listed = nl;
    double g0 = mean_gain(r, &s, order, pairs);
    andrea_rng rng;
    andrea_rng_seed(&rng, 0x5EED0C0DEull); /* fixed: a text always gets the same score */
    double shuffled = 0;
    for (int t = 0; t < SHUFFLES; t++) {
        for (size_t k = n; k > 1; k--) {
            size_t j = (size_t)(andrea_rng_u64(&rng) % k), tmp = order[k - 1];
            order[k - 1] = order[j];
            order[j] = tmp;
        }
        int64_t ignored;
        shuffled += mean_gain(r, &s, order, &ignored);
    }
    *gain = g0 - shuffled / SHUFFLES;
    free(order);
    return 0;
}

static int fit(andrea_gate_ref *r, const wordseq *s, size_t cut) {
    size_t V = r->vocab.n;
    r->listed = calloc(V ? V : 1, 1);
    r->uni = calloc(V ? V : 1, sizeof *r->uni);
    r->ctx = calloc(V ? V : 1, sizeof *r->ctx);
    r->types = calloc(V ? V : 1, sizeof *r->types);
    if (!r->listed || !r->uni || !r->ctx || !r->types) return -1;
    for (size_t k = 0; k < s->n; k++) r->listed[s->id[k]] = s->listed[k];
    for (size_t k = 0; k < cut; k++) {
        if (r->uni[s->id[k]]++ == 0) r->v_fit++;
        if (k + 1 == cut) break;
        r->ctx[s->id[k]]++;
        if (pairmap_add(&r->pairs, pair_key(s->id[k], s->id[k + 1]))) return -1;
    }
    for (size_t i = 0; i < r->pairs.cap; i++)
        if (r->pairs.key[i]) r->types[(r->pairs.key[i] >> 32) - 1]++;
    r->n_fit = (double)cut;
    return 0;
}

/* What held-out real text scores, in pieces of CHUNK_WORDS. */
static int calibrate(andrea_gate_ref *r, const wordseq *s, size_t cut) {
    double lp_sum = 0, gain_sum = 0;
    int chunks = 0;
    for (size_t a = cut; a + CHUNK_WORDS <= s->n; a += CHUNK_WORDS) {
        double lp, gain;
        int64_t listed, pairs;
        if (measure_seq(r, s, a, CHUNK_WORDS, &lp, &listed, &gain, &pairs)) return -1;
        lp_sum += lp;
        gain_sum += gain;
        chunks++;
    }
    r->logp_level = lp_sum / chunks;
    r->order_level = gain_sum / chunks;
    return 0;
}

andrea_gate_ref *andrea_gate_ref_build(const andrea_gate *g, const char *text, size_t len) {
    andrea_gate_ref *r = calloc(1, sizeof *r);
    wordseq s = {0};
    if (!r || read_words(g, &r->vocab, NULL, text, len, &s)) goto oom;
    r->n_words = (int64_t)s.n;
    if (s.n < MIN_REF_WORDS) {
        andrea_set_error("coherence gate: the reference text has %zu words; it needs %d or more "
                         "(a few MB of ordinary prose, e.g. Debian's fortunes)", s.n, MIN_REF_WORDS);
        goto fail;
    }
    size_t cut = s.n - s.n / 10;
    if (fit(r, &s, cut) || calibrate(r, &s, cut)) goto oom;
    if (!(r->order_level > 0.1)) {
        andrea_set_error("coherence gate: the reference text's own word order gains %.3f nats "
                         "per pair over its shuffles (real prose: 0.5 to 1.2); is it text?",
                         r->order_level);
        goto fail;
    }
    wordseq_free(&s);
    return r;
oom:
    andrea_set_error("coherence gate: out of memory reading the reference text (%zu bytes)", len);
fail:
    wordseq_free(&s);
    andrea_gate_ref_free(r);
    return NULL;
}

int andrea_gate_ref_measure(const andrea_gate *g, const char *text, size_t len,
                            andrea_gate_result *out) {
    const andrea_gate_ref *r = g->ref;
    if (!r) return 0;
    wordseq s = {0};
    double lp, gain;
    int rc = read_words(g, NULL, &r->vocab, text, len, &s);
    if (!rc) rc = measure_seq(r, &s, 0, s.n, &lp, &out->listed_words, &gain, &out->listed_pairs);
    wordseq_free(&s);
    if (rc) return andrea_set_error("coherence gate: out of memory scoring %zu bytes", len);
    out->has_reference = 1;
    out->word_logp = lp - r->logp_level;
    out->order_gain = gain / r->order_level;
    return 0;
}

int64_t andrea_gate_reference_words(const andrea_gate *g) { return g->ref ? g->ref->n_words : 0; }

/* ---- loading -------------------------------------------------------------------------- */

#define MAX_REF_BYTES (64u << 20) /* more text sharpens little and costs load time */

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's text files, in name order: every regular file but dot files and the
 * fortune index files (*.dat, *.u8 links); fortunes' '%' lines have no letter, so the
 * word reader skips them. */
static int read_dir(const char *path, DIR *d, andrea_bytes *out) {
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d)) && !rc;) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || (l > 4 && strcmp(e->d_name + l - 4, ".dat") == 0) ||
            (l > 3 && strcmp(e->d_name + l - 3, ".u8") == 0))
            continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 64;
            char **nn = realloc(names, c * sizeof *nn);
            if (!nn) { rc = -1; break; }
            names = nn;
            cap = c;
        }
        if (!(names[n] = malloc(strlen(path) + l + 2))) { rc = -1; break; }
        sprintf(names[n++], "%s/%s", path, e->d_name);
    }
    if (rc) andrea_set_error("out of memory listing '%s'", path);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t k = 0; k < n && !rc && out->len < MAX_REF_BYTES; k++) {
        andrea_bytes one = {0};
        if (andrea_file_read_max(names[k], MAX_REF_BYTES, &one)) continue; /* not a regular file */
        rc = andrea_bytes_append(out, one.data, one.len) || andrea_bytes_append(out, "\n", 1);
        andrea_bytes_free(&one);
        if (rc) andrea_set_error("out of memory reading '%s'", path);
    }
    for (size_t k = 0; k < n; k++) free(names[k]);
    free(names);
    return rc;
}

int andrea_gate_load_reference(andrea_gate *g, const char *path) {
    const char *env = getenv("ANDREA_REFERENCE");
    const char *used = path ? path : env && *env ? env : "/usr/share/games/fortunes";
    andrea_bytes text = {0};
    DIR *d = opendir(used);
    int rc = d ? read_dir(used, d, &text) : andrea_file_read_max(used, MAX_REF_BYTES, &text);
    if (d) closedir(d);
    if (rc) {
        andrea_bytes_free(&text);
        if (path || (env && *env))
            return andrea_set_error("coherence gate: cannot read the reference text '%s' (%s)",
                                    used, andrea_error());
        return andrea_set_error("coherence gate: no reference text (tried $ANDREA_REFERENCE and "
                                "%s); install Debian's fortunes (apt-get install fortunes) or "
                                "give a text file of real prose", used);
    }
    andrea_gate_ref *r = andrea_gate_ref_build(g, (const char *)text.data, text.len);
    andrea_bytes_free(&text);
    if (!r) return -1;
    andrea_gate_ref_free(g->ref);
    g->ref = r;
    snprintf(g->ref_path, sizeof g->ref_path, "%s", used);
    return 0;
}

int andrea_gate_set_reference(andrea_gate *g, const char *text, size_t len) {
    andrea_gate_ref *r = andrea_gate_ref_build(g, text, len);
    if (!r) return -1;
    andrea_gate_ref_free(g->ref);
    g->ref = r;
    g->ref_path[0] = 0;
    return 0;
}

const char *andrea_gate_reference_path(const andrea_gate *g) { return g->ref ? g->ref_path : NULL; }
