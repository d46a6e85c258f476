/* harris.c - ANDREA's Harris morpheme tokenizer.
 *
 * Training (Zellig Harris 1955, as refined by Hafer & Weiss 1974):
 *   1. Words are maximal runs of letters (ASCII letters, combining marks and
 *      the letter blocks of is_letter() below). A word directly after a space
 *      is remembered as " word": the space joins its first segment, as GPT-2's
 *      "Ġ" does, which saves one token per word.
 *   2. Over the distinct words (types, not occurrences) a forward trie gives
 *      the successor variety SV(prefix) = number of distinct next characters
 *      (+1 if the prefix is itself a word), and a backward trie gives the
 *      predecessor variety PV(suffix) (+1 if the suffix is itself a word).
 *   3. A word is cut between characters j-1 and j when either variety
 *      spikes there: SV(w[:j]) > SV(w[:j-1]) and SV(w[:j]) >= min_variety, or
 *      PV(w[j:]) > PV(w[j+1:]) and PV(w[j:]) >= min_variety. Inside a root the
 *      varieties fall; at a morpheme boundary they jump ("walk|ing": many
 *      letters precede "ing", few precede "ng").
 *   4. Segments are counted over word occurrences; a segment of L bytes seen c
 *      times would save c (L - 1) tokens over bytes, and the N with the largest
 *      saving are kept (ties: bytewise smaller first). Segment i gets id 257 + i.
 * Varieties are counted over bytes at character boundaries: for non-ASCII
 * text two letters sharing a UTF-8 lead byte count as one successor.
 *
 * Encoding: greedy longest match over the segment trie at each position,
 * falling back to the single byte token when no segment starts there. Every
 * byte string therefore encodes, and decoding concatenates token bytes, so
 * the round trip is exact. (A minimum-token dynamic programme would sometimes
 * save a token, but would cut words differently from how segments were
 * learned; longest match is also what the system spec assumes.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"
#include "util/file.h"
#include "util/perf.h"

#ifdef ANDREA_HAVE_JANSSON
#include <jansson.h>
#endif

#define HARRIS_MAX_WORD 64 /* longer letter runs (CJK lines, DNA) are not analysed */

struct harris_state {
    int32_t root_child[256]; /* trie node of each first byte, -1 if none */
    u64map edges;            /* (node << 8 | byte) -> child node */
    int32_t *node_tok;       /* token id ending at node, -1 if none */
    int32_t n_nodes, cap_nodes;
};

static void harris_state_free(harris_state *h) {
    if (!h) return;
    andrea_u64map_free(&h->edges);
    free(h->node_tok);
    free(h);
}

void andrea_harris_train_options_default(andrea_harris_train_options *o) {
    o->n_segments = 2048;
    o->min_variety = 20;
    o->min_count = 2;
    o->max_len = 16;
    o->progress = NULL;
    o->progress_user = NULL;
}

/* ---- the segment trie (encoding) ------------------------------------------------------ */

static int32_t trie_new_node(harris_state *h) {
    if (h->n_nodes == h->cap_nodes) {
        int32_t c = h->cap_nodes ? h->cap_nodes * 2 : 1024;
        int32_t *p = realloc(h->node_tok, (size_t)c * sizeof *p);
        if (!p) return andrea_set_error("out of memory (harris trie)");
        h->node_tok = p;
        h->cap_nodes = c;
    }
    h->node_tok[h->n_nodes] = -1;
    return h->n_nodes++;
}

andrea_tokenizer *andrea_harris_build(const uint8_t *const *segs, const uint32_t *lens, int32_t n) {
    if (n < 0 || n > (1 << 24)) return andrea_set_error("harris: %d segments", n), NULL;
    andrea_tokenizer *t = andrea_tok_alloc(&andrea_tok_harris_ops, 257 + n, 256);
    harris_state *h = calloc(1, sizeof *h);
    const uint8_t **ptrs = malloc(((size_t)n + 257) * sizeof *ptrs);
    uint32_t *tl = malloc(((size_t)n + 257) * sizeof *tl);
    uint8_t all[256];
    if (!t || !h || !ptrs || !tl || andrea_u64map_init(&h->edges, (size_t)n * 4 + 16)) {
        andrea_set_error("out of memory (harris tokenizer)");
        goto fail;
    }
    t->harris = h;
    for (int i = 0; i < 256; i++) {
        all[i] = (uint8_t)i;
        ptrs[i] = &all[i];
        tl[i] = 1;
        h->root_child[i] = -1;
    }
    ptrs[256] = NULL;
    tl[256] = 0;
    if (trie_new_node(h) < 0) goto fail; /* node 0: the root */
    for (int32_t s = 0; s < n; s++) {
        if (lens[s] == 0 || lens[s] > 1024) {
            andrea_set_error("harris: segment %d has %u bytes (1..1024 allowed)", s, lens[s]);
            goto fail;
        }
        ptrs[257 + s] = segs[s];
        tl[257 + s] = lens[s];
        int32_t node = 0;
        for (uint32_t i = 0; i < lens[s]; i++) {
            uint8_t c = segs[s][i];
            int32_t next;
            if (node == 0) {
                next = h->root_child[c];
                if (next < 0) {
                    if ((next = trie_new_node(h)) < 0) goto fail;
                    h->root_child[c] = next;
                }
            } else {
                int added;
                uint32_t *v = andrea_u64map_upsert(&h->edges, (uint64_t)node << 8 | c, 0, &added);
                if (!v) goto fail;
                if (added) {
                    if ((next = trie_new_node(h)) < 0) goto fail;
                    *v = (uint32_t)next;
                } else {
                    next = (int32_t)*v;
                }
            }
            node = next;
        }
        if (h->node_tok[node] >= 0) {
            andrea_set_error("harris: segment %d repeats segment %d", s, h->node_tok[node] - 257);
            goto fail;
        }
        h->node_tok[node] = 257 + s;
    }
    if (andrea_tok_set_token_bytes(t, ptrs, tl)) goto fail;
    free(ptrs);
    free(tl);
    return t;
fail:
    free(ptrs);
    free(tl);
    if (!t || !t->harris) harris_state_free(h);
    andrea_tokenizer_free(t);
    return NULL;
}

static int harris_encode(const andrea_tokenizer *t, const uint8_t *s, size_t n, int flags,
                         uint64_t base, andrea_ids *out) {
    (void)base;
    (void)flags;
    const harris_state *h = t->harris;
    for (size_t i = 0; i < n;) {
        int32_t best = s[i];
        size_t best_len = 1;
        int32_t node = h->root_child[s[i]];
        for (size_t j = i + 1; node >= 0; j++) {
            if (h->node_tok[node] >= 0) { /* longest match; a segment beats the equal-length byte */
                best = h->node_tok[node];
                best_len = j - i;
            }
            if (j >= n) break;
            uint32_t *v = andrea_u64map_get(&h->edges, (uint64_t)node << 8 | s[j]);
            node = v ? (int32_t)*v : -1;
        }
        if (andrea_ids_push(out, best)) return -1;
        i += best_len;
    }
    return 0;
}

/* ---- the .tok payload: u32 segment count, then per segment u32 length, bytes ----------- */

static int harris_serialize(const andrea_tokenizer *t, andrea_bytes *out) {
    int32_t nseg = t->vocab - 257;
    int rc = andrea_bytes_put_u32(out, (uint32_t)nseg);
    for (int32_t i = 0; i < nseg && !rc; i++) {
        size_t len = 0;
        const uint8_t *p = andrea_tokenizer_token_bytes(t, 257 + i, &len);
        rc = andrea_bytes_put_u32(out, (uint32_t)len);
        if (!rc) rc = andrea_bytes_append(out, p, len);
    }
    return rc;
}

static andrea_tokenizer *harris_deserialize(uint32_t vocab, uint32_t bos, const uint8_t *q,
                                            size_t plen, const char *what) {
    if (bos != 256 || vocab < 257 || plen < 4 || get_u32(q) != vocab - 257)
        return andrea_set_error("%s: harris payload does not match vocab %u", what, vocab), NULL;
    uint32_t nseg = vocab - 257;
    /* each segment takes at least 5 payload bytes (length + 1 byte): bound the count by
     * what the payload can hold before allocating for it */
    if (nseg > (plen - 4) / 5)
        return andrea_set_error("%s: harris payload of %zu bytes cannot hold %u segments", what,
                                plen, nseg), NULL;
    const uint8_t **segs = malloc(((size_t)nseg + 1) * sizeof *segs);
    uint32_t *lens = malloc(((size_t)nseg + 1) * sizeof *lens);
    size_t off = 4;
    int ok = segs && lens;
    for (uint32_t i = 0; ok && i < nseg; i++) {
        if (off + 4 > plen) { ok = 0; break; }
        lens[i] = get_u32(q + off);
        off += 4;
        if (lens[i] > plen - off) { ok = 0; break; }
        segs[i] = q + off;
        off += lens[i];
    }
    andrea_tokenizer *t = NULL;
    if (ok && off == plen) t = andrea_harris_build(segs, lens, (int32_t)nseg);
    else andrea_set_error("%s: harris payload truncated or malformed", what);
    free(segs);
    free(lens);
    return t;
}

static void harris_free(andrea_tokenizer *t) { harris_state_free(t->harris); }

const andrea_tok_ops andrea_tok_harris_ops = {
    .kind = ANDREA_TOK_HARRIS,
    .name = "harris",
    .encode = harris_encode,
    .serialize = harris_serialize,
    .deserialize = harris_deserialize,
    .free_state = harris_free,
};

/* ---- training ------------------------------------------------------------------------------ */

/* Letters for word splitting: a block-level approximation of \p{L} (plus
 * combining marks, which belong to the letter before them). */
static int is_letter(uint32_t c) {
    if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    if (c == 0xAA || c == 0xB5 || c == 0xBA) return 1;
    if (c >= 0xC0 && c <= 0x2C1) return c != 0xD7 && c != 0xF7;
    if (c >= 0x300 && c <= 0x36F) return 1; /* combining diacritics */
    if (c >= 0x370 && c <= 0x3FF) return c != 0x37E && c != 0x387;
    if (c >= 0x400 && c <= 0x58F) return 1;  /* Cyrillic, Armenian */
    if (c >= 0x5D0 && c <= 0x5EA) return 1;  /* Hebrew letters */
    if (c >= 0x620 && c <= 0x64A) return 1;  /* Arabic letters */
    if (c >= 0x900 && c <= 0xE7F) return 1;  /* Indic scripts, Thai */
    if (c >= 0x10A0 && c <= 0x11FF) return 1; /* Georgian, Hangul Jamo */
    if (c >= 0x1E00 && c <= 0x1FFF) return 1; /* Latin Extended Additional, Greek Extended */
    if (c >= 0x3040 && c <= 0x30FF) return c != 0x30FB; /* kana */
    if (c >= 0x3400 && c <= 0x4DBF) return 1;
    if (c >= 0x4E00 && c <= 0x9FFF) return 1;
    if (c >= 0xAC00 && c <= 0xD7A3) return 1;
    return 0;
}

/* Counting trie over words: SV(node) = distinct children + (word ends here). */
typedef struct {
    u64map edges;     /* (node << 8 | byte) -> child */
    uint32_t *n_next; /* per node: distinct next bytes */
    uint8_t *is_end;
    uint32_t n, cap;
} vtrie;

static int vtrie_init(vtrie *v) {
    memset(v, 0, sizeof *v);
    if (andrea_u64map_init(&v->edges, 1 << 16)) return -1;
    v->cap = 1 << 16;
    v->n_next = calloc(v->cap, sizeof *v->n_next);
    v->is_end = calloc(v->cap, 1);
    if (!v->n_next || !v->is_end) return andrea_set_error("out of memory (variety trie)");
    v->n = 1;
    return 0;
}

static void vtrie_free(vtrie *v) {
    andrea_u64map_free(&v->edges);
    free(v->n_next);
    free(v->is_end);
}

/* Inserts w (bytes, in the given direction) */
static int vtrie_insert(vtrie *v, const uint8_t *w, size_t n, int reverse) {
    uint32_t node = 0;
    for (size_t k = 0; k < n; k++) {
        uint8_t c = reverse ? w[n - 1 - k] : w[k];
        int added;
        uint32_t *child = andrea_u64map_upsert(&v->edges, (uint64_t)node << 8 | c, v->n, &added);
        if (!child) return -1;
        if (added) {
            if (v->n == v->cap) {
                uint32_t nc = v->cap * 2;
                uint32_t *a = realloc(v->n_next, nc * sizeof *a);
                if (a) v->n_next = a;
                uint8_t *b = realloc(v->is_end, nc);
                if (b) v->is_end = b;
                if (!a || !b) return andrea_set_error("out of memory (variety trie)");
                memset(v->n_next + v->cap, 0, (nc - v->cap) * sizeof *a);
                memset(v->is_end + v->cap, 0, nc - v->cap);
                v->cap = nc;
            }
            v->n_next[node]++;
            node = v->n++;
        } else {
            node = *child;
        }
    }
    v->is_end[node] = 1;
    return 0;
}

/* variety[k] for k = 0..n: of the prefix w[:k] (forward) or the suffix w[n-k:] (reverse). */
static void vtrie_varieties(const vtrie *v, const uint8_t *w, size_t n, int reverse, uint32_t *var) {
    uint32_t node = 0;
    var[0] = v->n_next[0] + v->is_end[0];
    for (size_t k = 0; k < n; k++) {
        uint8_t c = reverse ? w[n - 1 - k] : w[k];
        uint32_t *child = node == UINT32_MAX ? NULL : andrea_u64map_get(&v->edges, (uint64_t)node << 8 | c);
        node = child ? *child : UINT32_MAX;
        var[k + 1] = child ? v->n_next[node] + v->is_end[node] : 0;
    }
}

typedef struct {
    const uint8_t *p;
    uint32_t len;
    int64_t count;
} seg_cand;

static int cand_cmp(const void *a, const void *b) {
    const seg_cand *x = a, *y = b;
    int64_t sx = x->count * (int64_t)(x->len - 1), sy = y->count * (int64_t)(y->len - 1);
    if (sx != sy) return sx > sy ? -1 : 1;
    uint32_t m = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, m);
    if (c) return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

/* Progress: how many candidates, whether the corpus fell short, and the top ones. */
static void report_kept(const andrea_harris_train_options *o, const seg_cand *cands, size_t nc,
                        size_t keep, double elapsed) {
    andrea_tok_progress(o->progress, o->progress_user,
                        "harris: %zu candidate segments (seen >= %lld times), keeping %zu (%.1fs)",
                        nc, (long long)o->min_count, keep, elapsed);
    if (keep < (size_t)o->n_segments)
        andrea_tok_progress(o->progress, o->progress_user,
                            "harris: warning: asked for %d segments, the corpus offers %zu; V = %zu",
                            o->n_segments, keep, keep + 257);
    char line[1024]; /* 24 segments of at most 16 bytes fit */
    size_t k = (size_t)snprintf(line, sizeof line, "harris: top segments:");
    for (size_t i = 0; i < keep && i < 24 && k < sizeof line; i++)
        k += (size_t)snprintf(line + k, sizeof line - k, " '%.*s'", (int)cands[i].len,
                              (const char *)cands[i].p);
    o->progress(o->progress_user, line);
}

/* The trainer's tables: word types and segments with their counts, and the tries that
 * give the varieties. */
typedef struct {
    strmap words, segs;
    int64_t *wcount;   /* per word: [2 * id] after a space, [2 * id + 1] otherwise */
    int64_t *scount;   /* per segment: occurrences */
    size_t wcap, scap; /* the ids the two count tables have room for */
    vtrie fwd, bwd;    /* over the words forward (SV) and backward (PV) */
} harris_trainer;

static int harris_trainer_init(harris_trainer *ht) {
    return andrea_strmap_init(&ht->words, 1 << 16) || andrea_strmap_init(&ht->segs, 1 << 16) ||
           vtrie_init(&ht->fwd) || vtrie_init(&ht->bwd);
}

static void harris_trainer_free(harris_trainer *ht) {
    andrea_strmap_free(&ht->words);
    andrea_strmap_free(&ht->segs);
    free(ht->wcount);
    free(ht->scount);
    vtrie_free(&ht->fwd);
    vtrie_free(&ht->bwd);
}

/* Makes room for id in a zeroed table of `per` counts an id, doubling it (from 65536
 * ids) when full: ids come one at a time. Returns 0, or -1 with oom as the error. */
static int counts_reserve(int64_t **counts, size_t *cap, size_t id, size_t per, const char *oom) {
    if (id < *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 1 << 16;
    int64_t *p = realloc(*counts, per * nc * sizeof *p);
    if (!p) return andrea_set_error("%s", oom);
    memset(p + per * *cap, 0, per * (nc - *cap) * sizeof *p);
    *counts = p;
    *cap = nc;
    return 0;
}

/* 1. The word types of s with their counts, after a space and elsewhere apart. */
static int count_words(harris_trainer *ht, const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = andrea_utf8_decode(s + i, n - i, &cp);
        if (!len || !is_letter(cp)) {
            i += len ? (size_t)len : 1;
            continue;
        }
        size_t start = i;
        while (i < n && (len = andrea_utf8_decode(s + i, n - i, &cp)) && is_letter(cp)) i += (size_t)len;
        if (i - start > HARRIS_MAX_WORD) continue;
        int64_t id = andrea_strmap_intern(&ht->words, s + start, i - start, NULL);
        if (id < 0 || counts_reserve(&ht->wcount, &ht->wcap, (size_t)id, 2, "out of memory (harris word counts)"))
            return -1;
        ht->wcount[2 * id + (start > 0 && s[start - 1] == ' ' ? 0 : 1)]++;
    }
    return 0;
}

/* 2. The varieties are over word types, not occurrences: every type once in each trie. */
static int fill_variety_tries(harris_trainer *ht) {
    for (size_t id = 0; id < ht->words.n; id++) {
        size_t len;
        const uint8_t *w = strmap_key(&ht->words, id, &len);
        if (vtrie_insert(&ht->fwd, w, len, 0) || vtrie_insert(&ht->bwd, w, len, 1)) return -1;
    }
    return 0;
}

/* The character boundaries of w: 0 = bound[0] < ... < bound[nb] = len; returns nb. */
static size_t char_bounds(const uint8_t *w, size_t len, size_t *bound) {
    size_t nb = 0;
    bound[nb++] = 0;
    for (size_t k = 0; k < len;) {
        uint32_t cp;
        k += (size_t)andrea_utf8_decode(w + k, len - k, &cp);
        bound[nb++] = k;
    }
    return nb - 1;
}

/* Step 3's test for a cut before character j (0 < j < nb) of a word of len bytes: the
 * successor variety of the prefix rises there, or the predecessor variety of the
 * suffix, to min_variety or more. sv[k]: prefix of k bytes; pvr[k]: suffix of k bytes. */
static int variety_spikes(const uint32_t *sv, const uint32_t *pvr, const size_t *bound, size_t j,
                          size_t len, int min_variety) {
    size_t b = bound[j], bp = bound[j - 1], bn = bound[j + 1];
    uint32_t f = sv[b], fprev = sv[bp];
    uint32_t p = pvr[len - b], pnext = pvr[len - bn];
    return (f > fprev && f >= (uint32_t)min_variety) || (p > pnext && p >= (uint32_t)min_variety);
}

/* Counts seg[0..n), a segment of word type id, over the word's occurrences. A word's
 * first segment is two candidates, " seg" for the occurrences after a space and "seg"
 * for the others; a later segment counts every occurrence. Only 2..max_len bytes count. */
static int count_segment(harris_trainer *ht, const andrea_harris_train_options *o, size_t id,
                         const uint8_t *seg, size_t n, int first) {
    uint8_t buf[HARRIS_MAX_WORD + 1];
    for (int sp_variant = 0; sp_variant < 2; sp_variant++) {
        int64_t c;
        if (first) c = ht->wcount[2 * id + sp_variant];
        else c = sp_variant ? 0 : ht->wcount[2 * id] + ht->wcount[2 * id + 1];
        if (c == 0) continue;
        size_t L = 0;
        if (first && sp_variant == 0) buf[L++] = ' ';
        memcpy(buf + L, seg, n);
        L += n;
        if (L < 2 || L > (size_t)o->max_len) continue;
        int64_t sid = andrea_strmap_intern(&ht->segs, buf, L, NULL);
        if (sid < 0 ||
            counts_reserve(&ht->scount, &ht->scap, (size_t)sid, 1, "out of memory (harris segment counts)"))
            return -1;
        ht->scount[sid] += c;
    }
    return 0;
}

/* 3. Cuts word type id where a variety spikes, and counts its segments. */
static int cut_word(harris_trainer *ht, const andrea_harris_train_options *o, size_t id) {
    uint32_t sv[HARRIS_MAX_WORD + 1], pvr[HARRIS_MAX_WORD + 1];
    size_t bound[HARRIS_MAX_WORD + 1];
    size_t len;
    const uint8_t *w = strmap_key(&ht->words, id, &len);
    vtrie_varieties(&ht->fwd, w, len, 0, sv);  /* sv[k]: prefix of k bytes */
    vtrie_varieties(&ht->bwd, w, len, 1, pvr); /* pvr[k]: suffix of k bytes */
    size_t nb = char_bounds(w, len, bound), cut_from = 0;
    for (size_t j = 1; j <= nb; j++) { /* the word's end is always a cut */
        if (j < nb && !variety_spikes(sv, pvr, bound, j, len, o->min_variety)) continue;
        size_t a = bound[cut_from], b = bound[j];
        if (count_segment(ht, o, id, w + a, b - a, cut_from == 0)) return -1;
        cut_from = j;
    }
    return 0;
}

/* 4. Keeps the n_segments candidates (seen min_count times or more) that save the most
 * tokens, and builds the tokenizer of them. */
static andrea_tokenizer *build_from_best(const harris_trainer *ht, const andrea_harris_train_options *o,
                                         double t0) {
    size_t nc = 0;
    seg_cand *cands = malloc((ht->segs.n ? ht->segs.n : 1) * sizeof *cands);
    if (!cands) return andrea_set_error("out of memory (harris candidates)"), NULL;
    for (size_t id = 0; id < ht->segs.n; id++) {
        if (ht->scount[id] < o->min_count) continue;
        size_t len;
        cands[nc].p = strmap_key(&ht->segs, id, &len);
        cands[nc].len = (uint32_t)len;
        cands[nc].count = ht->scount[id];
        nc++;
    }
    qsort(cands, nc, sizeof *cands, cand_cmp);
    size_t keep = nc < (size_t)o->n_segments ? nc : (size_t)o->n_segments;
    if (o->progress) report_kept(o, cands, nc, keep, andrea_now() - t0);
    const uint8_t **sp = malloc((keep ? keep : 1) * sizeof *sp);
    uint32_t *sl = malloc((keep ? keep : 1) * sizeof *sl);
    andrea_tokenizer *t = NULL;
    if (!sp || !sl) {
        andrea_set_error("out of memory");
    } else {
        for (size_t i = 0; i < keep; i++) {
            sp[i] = cands[i].p;
            sl[i] = cands[i].len;
        }
        t = andrea_harris_build(sp, sl, (int32_t)keep);
    }
    free(cands);
    free(sp);
    free(sl);
    return t;
}

andrea_tokenizer *andrea_tokenizer_harris_train(const void *text, size_t n,
                                                const andrea_harris_train_options *o) {
    double t0 = andrea_now();
    if (o->n_segments < 0 || o->min_variety < 1 || o->max_len < 2 || o->min_count < 1) {
        andrea_set_error("harris: need segments >= 0, min variety >= 1, max len >= 2, min count >= 1");
        return NULL;
    }
    harris_trainer ht = {0};
    int rc = harris_trainer_init(&ht) || count_words(&ht, text, n);
    if (!rc)
        andrea_tok_progress(o->progress, o->progress_user, "harris: %zu distinct words in %zu bytes (%.1fs)",
                            ht.words.n, n, andrea_now() - t0);
    rc = rc || fill_variety_tries(&ht);
    for (size_t id = 0; id < ht.words.n && !rc; id++) rc = cut_word(&ht, o, id);
    andrea_tokenizer *t = rc ? NULL : build_from_best(&ht, o, t0);
    harris_trainer_free(&ht);
    return t;
}

/* ---- harris_segments.json ----------------------------------------------------------------- */

#ifdef ANDREA_HAVE_JANSSON

andrea_tokenizer *andrea_tokenizer_harris_import(const char *json_path) {
    json_error_t jerr;
    andrea_bytes text = {0}; /* read through util/file.c: regular files only, bounded */
    if (andrea_file_read_max(json_path, ANDREA_TOK_FILE_MAX, &text)) return NULL;
    json_t *root = json_loadb((const char *)text.data, text.len, JSON_ALLOW_NUL, &jerr);
    andrea_bytes_free(&text);
    if (!root)
        return andrea_set_error("'%s': line %d column %d: %s", json_path, jerr.line, jerr.column,
                                jerr.text), NULL;
    json_t *arr = root;
    andrea_tokenizer *t = NULL;
    const uint8_t **segs = NULL;
    uint32_t *lens = NULL;
    if (json_is_object(root)) {
        json_t *first = json_object_get(root, "first_segment_id");
        json_t *bos = json_object_get(root, "bos_id");
        if ((first && json_integer_value(first) != 257) || (bos && json_integer_value(bos) != 256)) {
            andrea_set_error("'%s': only the layout bytes 0..255, bos_id 256, first_segment_id 257 "
                             "is supported", json_path);
            goto done;
        }
        arr = json_object_get(root, "segments");
    }
    if (!json_is_array(arr)) {
        andrea_set_error("'%s': expected a JSON array of segment strings, or an object with a "
                         "\"segments\" array", json_path);
        goto done;
    }
    size_t n = json_array_size(arr);
    if (n > (1 << 24)) {
        andrea_set_error("'%s': %zu segments (at most %d)", json_path, n, 1 << 24);
        goto done;
    }
    segs = malloc((n ? n : 1) * sizeof *segs);
    lens = malloc((n ? n : 1) * sizeof *lens);
    if (!segs || !lens) { andrea_set_error("out of memory"); goto done; }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i);
        if (!json_is_string(e) || json_string_length(e) == 0) {
            andrea_set_error("'%s': segment %zu is not a non-empty string", json_path, i);
            goto done;
        }
        if (json_string_length(e) > 1024) { /* before the cast to 32 bits */
            andrea_set_error("'%s': segment %zu has %zu bytes (1..1024 allowed)", json_path, i,
                             json_string_length(e));
            goto done;
        }
        segs[i] = (const uint8_t *)json_string_value(e);
        lens[i] = (uint32_t)json_string_length(e);
    }
    t = andrea_harris_build(segs, lens, (int32_t)n);
    if (!t) {
        andrea_set_error("'%s': %s", json_path, andrea_error());
    }
done:
    free(segs);
    free(lens);
    json_decref(root);
    return t;
}

int andrea_tokenizer_harris_export(const andrea_tokenizer *t, const char *json_path) {
    if (t->ops != &andrea_tok_harris_ops)
        return andrea_set_error("only a harris tokenizer exports harris_segments.json (this one is %s)",
                                t->ops->name);
    json_t *root = json_object();
    json_t *arr = json_array();
    int rc = -1;
    if (!root || !arr) { andrea_set_error("out of memory"); goto done; }
    json_object_set_new(root, "format", json_string("andrea-harris-segments"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "bos_id", json_integer(256));
    json_object_set_new(root, "first_segment_id", json_integer(257));
    json_object_set_new(root, "vocab_size", json_integer(t->vocab));
    for (int32_t id = 257; id < t->vocab; id++) {
        size_t len;
        const uint8_t *p = andrea_tokenizer_token_bytes(t, id, &len);
        json_t *str = json_stringn((const char *)p, len);
        if (!str) {
            andrea_set_error("'%s': segment %d is not valid UTF-8; JSON cannot hold it", json_path, id - 257);
            goto done;
        }
        json_array_append_new(arr, str);
    }
    json_object_set(root, "segments", arr);
    if (json_dump_file(root, json_path, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0) {
        andrea_set_error("cannot write '%s'", json_path);
        goto done;
    }
    rc = 0;
done:
    json_decref(arr);
    json_decref(root);
    return rc;
}

#else

andrea_tokenizer *andrea_tokenizer_harris_import(const char *json_path) {
    andrea_set_error("'%s': harris_segments.json needs jansson; this andrea was built without it "
                     "(install libjansson-dev and rebuild)", json_path);
    return NULL;
}

int andrea_tokenizer_harris_export(const andrea_tokenizer *t, const char *json_path) {
    (void)t;
    return andrea_set_error("'%s': harris_segments.json needs jansson; this andrea was built without it "
                            "(install libjansson-dev and rebuild)", json_path);
}

#endif
