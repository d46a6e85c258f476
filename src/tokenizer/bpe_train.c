/* bpe_train.c - learning byte-level BPE merges from a corpus.
 *
 * 1. Cut the text with GPT-2's regex (pretok.c) and count distinct pieces.
 *    Memory is bounded by max_pieces: when the table fills up, the rarest
 *    pieces are dropped (reported through the progress callback), as
 *    SentencePiece does.
 * 2. Each distinct piece becomes a "word": a symbol sequence (its bytes at
 *    first) with a count. Pair counts are kept for every adjacent pair, with
 *    the list of words each pair occurs in.
 * 3. Repeatedly take the most frequent pair from a max-heap (ties: smaller
 *    left id, then smaller right id), give it the next id (257, 258, ...) and
 *    rewrite only the words that contain it, adjusting pair counts by the
 *    difference. Heap entries are lazy: an entry whose count is stale is
 *    re-pushed with the current count when it surfaces. This is correct
 *    because a pair's count only ever falls, except for pairs that contain
 *    the newest token, which are pushed after each merge.
 * Layout: bytes 0..255, BOS 256, merge i -> id 257 + i; encoding applies the
 * merges by rank exactly as for GPT-2 (bpe.c).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"
#include "util/perf.h"

void andrea_bpe_train_options_default(andrea_bpe_train_options *o) {
    o->vocab_size = 4096;
    o->min_frequency = 2;
    o->max_pieces = (size_t)1 << 22;
    o->progress = NULL;
    o->progress_user = NULL;
}

/* ---- piece counting ---------------------------------------------------------------------- */

typedef struct {
    strmap pieces;
    int64_t *count;
    size_t cap;
    size_t max_pieces;
    andrea_tokenizer_progress_fn progress;
    void *progress_user;
    int64_t dropped; /* occurrences lost to pruning */
} piece_counter;

static int counter_prune(piece_counter *pc) {
    /* Drop pieces seen <= k times, raising k until at most half the cap is left. */
    for (int64_t k = 1;; k *= 2) {
        size_t keep = 0;
        for (size_t i = 0; i < pc->pieces.n; i++) keep += pc->count[i] > k;
        if (keep > pc->max_pieces / 2) continue;
        strmap fresh;
        if (andrea_strmap_init(&fresh, keep + 16)) return -1;
        int64_t *fc = malloc((keep + 16) * sizeof *fc);
        if (!fc) {
            andrea_strmap_free(&fresh);
            return andrea_set_error("out of memory (pruning pieces)");
        }
        for (size_t i = 0; i < pc->pieces.n; i++) {
            if (pc->count[i] <= k) {
                pc->dropped += pc->count[i];
                continue;
            }
            size_t len;
            const uint8_t *p = strmap_key(&pc->pieces, i, &len);
            int64_t id = andrea_strmap_intern(&fresh, p, len, NULL);
            if (id < 0) {
                andrea_strmap_free(&fresh);
                free(fc);
                return -1;
            }
            fc[id] = pc->count[i];
        }
        andrea_tok_progress(pc->progress, pc->progress_user,
                            "bpe: piece table full (%zu); dropped pieces seen <= %lld times, %zu left",
                            pc->pieces.n, (long long)k, fresh.n);
        andrea_strmap_free(&pc->pieces);
        free(pc->count);
        pc->pieces = fresh;
        pc->count = fc;
        pc->cap = keep + 16;
        return 0;
    }
}

static int count_piece(void *ctx, const uint8_t *p, size_t n) {
    piece_counter *pc = ctx;
    int added;
    int64_t id = andrea_strmap_intern(&pc->pieces, p, n, &added);
    if (id < 0) return -1;
    if ((size_t)id >= pc->cap) {
        size_t nc = pc->cap ? pc->cap * 2 : 1 << 16;
        int64_t *c = realloc(pc->count, nc * sizeof *c);
        if (!c) return andrea_set_error("out of memory (piece counts)");
        pc->count = c;
        pc->cap = nc;
    }
    if (added) pc->count[id] = 0;
    pc->count[id]++;
    if (pc->pieces.n > pc->max_pieces) return counter_prune(pc);
    return 0;
}

/* ---- merging ------------------------------------------------------------------------------- */

typedef struct {
    int64_t count;
    int32_t a, b;
    uint32_t pair;
} heap_entry;

typedef struct { /* a growable list of word or pair indices */
    uint32_t *v;
    uint32_t n, cap;
} id_list;

typedef struct {
    /* words */
    int32_t *sym;     /* all symbols; word i is sym[woff[i] .. woff[i] + wlen[i]) */
    uint64_t *woff;
    uint32_t *wlen;
    int64_t *wcount;
    uint32_t *wstamp; /* last merge that rewrote the word, + 1 */
    size_t n_words;
    /* pairs */
    u64map pair_idx;  /* (a << 32 | b) -> pair */
    int64_t *pcount;
    int32_t *pa, *pb;
    id_list *where; /* per pair: the words it occurs in (a word may stay after the pair left it) */
    uint32_t *pstamp;
    size_t n_pairs, cap_pairs;
    /* heap */
    heap_entry *heap;
    size_t heap_n, heap_cap;
} trainer;

static int heap_less(const heap_entry *x, const heap_entry *y) { /* x has priority over y */
    if (x->count != y->count) return x->count > y->count;
    if (x->a != y->a) return x->a < y->a;
    return x->b < y->b;
}

static int heap_push(trainer *tr, heap_entry e) {
    if (tr->heap_n == tr->heap_cap) {
        size_t nc = tr->heap_cap ? tr->heap_cap * 2 : 1024;
        heap_entry *h = realloc(tr->heap, nc * sizeof *h);
        if (!h) return andrea_set_error("out of memory (bpe heap)");
        tr->heap = h;
        tr->heap_cap = nc;
    }
    size_t i = tr->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_less(&e, &tr->heap[parent])) break;
        tr->heap[i] = tr->heap[parent];
        i = parent;
    }
    tr->heap[i] = e;
    return 0;
}

static heap_entry heap_pop(trainer *tr) {
    heap_entry top = tr->heap[0], last = tr->heap[--tr->heap_n];
    size_t i = 0, n = tr->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_less(&tr->heap[c + 1], &tr->heap[c])) c++;
        if (!heap_less(&tr->heap[c], &last)) break;
        tr->heap[i] = tr->heap[c];
        i = c;
    }
    if (n) tr->heap[i] = last;
    return top;
}

static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

static int64_t pair_get_or_add(trainer *tr, int32_t a, int32_t b) {
    int added;
    uint32_t *v = andrea_u64map_upsert(&tr->pair_idx, pair_key(a, b), (uint32_t)tr->n_pairs, &added);
    if (!v) return -1;
    if (!added) return *v;
    if (tr->n_pairs == tr->cap_pairs) {
        size_t nc = tr->cap_pairs ? tr->cap_pairs * 2 : 1 << 16;
        int64_t *c = realloc(tr->pcount, nc * sizeof *c);
        if (c) tr->pcount = c;
        int32_t *x = realloc(tr->pa, nc * sizeof *x);
        if (x) tr->pa = x;
        int32_t *y = realloc(tr->pb, nc * sizeof *y);
        if (y) tr->pb = y;
        id_list *wl = realloc(tr->where, nc * sizeof *wl);
        if (wl) tr->where = wl;
        uint32_t *st = realloc(tr->pstamp, nc * sizeof *st);
        if (st) tr->pstamp = st;
        if (!c || !x || !y || !wl || !st) return andrea_set_error("out of memory (bpe pairs)");
        tr->cap_pairs = nc;
    }
    size_t p = tr->n_pairs++;
    tr->pcount[p] = 0;
    tr->pa[p] = a;
    tr->pb[p] = b;
    memset(&tr->where[p], 0, sizeof tr->where[p]);
    tr->pstamp[p] = 0;
    return (int64_t)p;
}

/* Appends v to l, which grows from first_cap; oom is the error if it cannot. */
static int id_list_push(id_list *l, uint32_t v, uint32_t first_cap, const char *oom) {
    if (l->n == l->cap) {
        uint32_t nc = l->cap ? l->cap * 2 : first_cap;
        uint32_t *x = realloc(l->v, nc * sizeof *x);
        if (!x) return andrea_set_error("%s", oom);
        l->v = x;
        l->cap = nc;
    }
    l->v[l->n++] = v;
    return 0;
}

/* Word w holds pair p; a word's pairs are added together, so a repeat is the last entry. */
static int where_add(trainer *tr, size_t p, uint32_t w) {
    id_list *l = &tr->where[p];
    if (l->n && l->v[l->n - 1] == w) return 0;
    return id_list_push(l, w, 4, "out of memory (bpe pair lists)");
}

static void trainer_free(trainer *tr) {
    free(tr->sym);
    free(tr->woff);
    free(tr->wlen);
    free(tr->wcount);
    free(tr->wstamp);
    andrea_u64map_free(&tr->pair_idx);
    for (size_t p = 0; p < tr->n_pairs; p++) free(tr->where[p].v);
    free(tr->pcount);
    free(tr->pa);
    free(tr->pb);
    free(tr->where);
    free(tr->pstamp);
    free(tr->heap);
}

/* 1. Counts the pieces of the text, in slices of 16 MB so that progress can be shown.
 * Returns 0 or -1 (error set). */
static int count_pieces(const uint8_t *s, size_t n, const andrea_bpe_train_options *o,
                        piece_counter *pc, double t0) {
    pretok *pt = andrea_pretok_gpt2_create();
    if (!pt) return -1;
    size_t slice = (size_t)16 << 20;
    int rc = 0;
    for (size_t off = 0; off < n && !rc;) {
        size_t end = off + slice < n ? off + slice : n;
        if (end < n) { /* a slice ends where a piece cannot go on */
            size_t cut = andrea_tokenizer_safe_cut(s + off, end - off + 1);
            if (cut) end = off + cut;
        }
        rc = andrea_pretok_run(pt, s + off, end - off, count_piece, pc);
        off = end;
        if (!rc && n > slice)
            andrea_tok_progress(o->progress, o->progress_user,
                                "bpe: counted %.1f / %.1f MB, %zu distinct pieces (%.1fs)", off / 1e6,
                                n / 1e6, pc->pieces.n, andrea_now() - t0);
    }
    andrea_pretok_free(pt);
    return rc ? -1 : 0;
}

/* 2. Each piece of two bytes or more becomes a word (its bytes and its count); every
 * adjacent pair in it is counted at the word's count and lists the word. A piece of one
 * byte has no pair to merge. Returns 0 or -1 (error set). */
static int build_words(trainer *tr, const piece_counter *pc) {
    size_t total_sym = 0;
    for (size_t i = 0; i < pc->pieces.n; i++)
        if (pc->pieces.lens[i] >= 2) { tr->n_words++; total_sym += pc->pieces.lens[i]; }
    size_t nw = tr->n_words ? tr->n_words : 1;
    tr->sym = malloc((total_sym ? total_sym : 1) * sizeof *tr->sym);
    tr->woff = malloc(nw * sizeof *tr->woff);
    tr->wlen = malloc(nw * sizeof *tr->wlen);
    tr->wcount = malloc(nw * sizeof *tr->wcount);
    tr->wstamp = calloc(nw, sizeof *tr->wstamp);
    if (!tr->sym || !tr->woff || !tr->wlen || !tr->wcount || !tr->wstamp ||
        andrea_u64map_init(&tr->pair_idx, 1 << 16))
        return andrea_set_error("out of memory (bpe words)");
    size_t w = 0, so = 0;
    for (size_t i = 0; i < pc->pieces.n; i++) {
        size_t len;
        const uint8_t *p = strmap_key(&pc->pieces, i, &len);
        if (len < 2) continue;
        tr->woff[w] = so;
        tr->wlen[w] = (uint32_t)len;
        tr->wcount[w] = pc->count[i];
        for (size_t k = 0; k < len; k++) tr->sym[so + k] = p[k];
        for (size_t k = 0; k + 1 < len; k++) {
            int64_t pi = pair_get_or_add(tr, p[k], p[k + 1]);
            if (pi < 0 || where_add(tr, (size_t)pi, (uint32_t)w)) return -1;
            tr->pcount[pi] += pc->count[i];
        }
        so += len;
        w++;
    }
    return 0;
}

static int word_has_pair(const int32_t *sy, uint32_t len, int32_t a, int32_t b) {
    for (uint32_t k = 0; k + 1 < len; k++)
        if (sy[k] == a && sy[k + 1] == b) return 1;
    return 0;
}

/* Counts the rewritten word wi's pairs back in at the word's count. Those that hold the
 * new token r are new to the word: they list it, and join `touched` (once per merge,
 * by pstamp), since the heap has no entry with their count. */
static int count_word_pairs(trainer *tr, uint32_t wi, int32_t r, uint32_t stamp, id_list *touched) {
    const int32_t *sy = tr->sym + tr->woff[wi];
    uint32_t len = tr->wlen[wi];
    int64_t wc = tr->wcount[wi];
    for (uint32_t k = 0; k + 1 < len; k++) {
        int64_t pi = pair_get_or_add(tr, sy[k], sy[k + 1]);
        if (pi < 0) return -1;
        tr->pcount[pi] += wc;
        if (sy[k] != r && sy[k + 1] != r) continue;
        if (where_add(tr, (size_t)pi, wi)) return -1;
        if (tr->pstamp[pi] == stamp) continue;
        tr->pstamp[pi] = stamp;
        if (id_list_push(touched, (uint32_t)pi, 1024, "out of memory")) return -1;
    }
    return 0;
}

/* Merge number `stamp`, e's pair made r, in word wi: the word's pairs are counted out,
 * the word rewritten, and its new pairs counted in. A word stands in a pair's list
 * after the pair has left it (lists only grow), and is done once per merge (wstamp). */
static int merge_in_word(trainer *tr, uint32_t wi, const heap_entry *e, int32_t r, uint32_t stamp,
                         id_list *touched) {
    if (tr->wstamp[wi] == stamp) return 0;
    tr->wstamp[wi] = stamp;
    int32_t *sy = tr->sym + tr->woff[wi];
    uint32_t len = tr->wlen[wi];
    int64_t wc = tr->wcount[wi];
    if (!word_has_pair(sy, len, e->a, e->b)) return 0;
    for (uint32_t k = 0; k + 1 < len; k++)
        tr->pcount[*andrea_u64map_get(&tr->pair_idx, pair_key(sy[k], sy[k + 1]))] -= wc;
    tr->wlen[wi] = (uint32_t)andrea_bpe_replace_pair(sy, len, e->a, e->b, r);
    return count_word_pairs(tr, wi, r, stamp, touched);
}

/* Merge number `stamp`: e's pair made r in every word that lists it, then the touched
 * pairs pushed with their counts now. Returns 0 or -1 (error set). */
static int apply_merge(trainer *tr, const heap_entry *e, int32_t r, uint32_t stamp, id_list *touched) {
    touched->n = 0;
    id_list list = tr->where[e->pair]; /* taken: the pair will not occur again */
    memset(&tr->where[e->pair], 0, sizeof list);
    int rc = 0;
    for (uint32_t li = 0; li < list.n && !rc; li++) rc = merge_in_word(tr, list.v[li], e, r, stamp, touched);
    free(list.v);
    for (size_t i = 0; i < touched->n && !rc; i++) {
        uint32_t p = touched->v[i];
        if (tr->pcount[p] > 0) rc = heap_push(tr, (heap_entry){tr->pcount[p], tr->pa[p], tr->pb[p], p});
    }
    return rc;
}

/* 3. Merges the most frequent pair, up to `want` times or while one is seen
 * min_frequency times; merge i is merges[3i .. 3i + 2] = (left, right, new id).
 * Returns the merges made, or -1 (error set). */
static int32_t run_merges(trainer *tr, const andrea_bpe_train_options *o, int32_t want, int32_t *merges,
                          double t0) {
    id_list touched = {0};
    int32_t nm = 0;
    int rc = 0;
    double last_report = andrea_now();
    while (nm < want && tr->heap_n && !rc) {
        heap_entry e = heap_pop(tr);
        int64_t cur = tr->pcount[e.pair];
        if (cur != e.count) { /* stale: back in with the count it has now, unless gone */
            if (cur > 0) rc = heap_push(tr, (heap_entry){cur, e.a, e.b, e.pair});
            continue;
        }
        if (cur < o->min_frequency || cur <= 0) break;
        int32_t r = 257 + nm;
        merges[3 * nm] = e.a;
        merges[3 * nm + 1] = e.b;
        merges[3 * nm + 2] = r;
        nm++;
        rc = apply_merge(tr, &e, r, (uint32_t)nm, &touched);
        if (!rc && o->progress && (andrea_now() - last_report > 2.0 || nm == want)) {
            last_report = andrea_now();
            andrea_tok_progress(o->progress, o->progress_user,
                                "bpe: merge %d/%d (pair count %lld), %.1fs elapsed", nm, want,
                                (long long)cur, last_report - t0);
        }
    }
    free(touched.v);
    return rc ? -1 : nm;
}

andrea_tokenizer *andrea_tokenizer_bpe_train(const void *text, size_t n,
                                             const andrea_bpe_train_options *o) {
    if (o->vocab_size < 257)
        return andrea_set_error("bpe: vocab size %d < 257 (256 bytes + BOS)", o->vocab_size), NULL;
    if (o->max_pieces < 1024) return andrea_set_error("bpe: max pieces must be >= 1024"), NULL;
    double t0 = andrea_now();
    andrea_tokenizer *t = NULL;
    trainer tr = {0};
    int32_t *merges = NULL;
    piece_counter pc = {.max_pieces = o->max_pieces, .progress = o->progress,
                       .progress_user = o->progress_user};
    if (andrea_strmap_init(&pc.pieces, 1 << 16) || count_pieces(text, n, o, &pc, t0) ||
        build_words(&tr, &pc))
        goto done;
    andrea_tok_progress(o->progress, o->progress_user,
                        "bpe: %zu distinct pieces (%zu with pairs), %zu distinct pairs (%.1fs)",
                        pc.pieces.n, tr.n_words, tr.n_pairs, andrea_now() - t0);
    andrea_strmap_free(&pc.pieces); /* the words hold what the merges need */
    free(pc.count);
    pc.count = NULL;
    for (size_t p = 0; p < tr.n_pairs; p++)
        if (heap_push(&tr, (heap_entry){tr.pcount[p], tr.pa[p], tr.pb[p], (uint32_t)p})) goto done;
    int32_t want = o->vocab_size - 257;
    merges = malloc((size_t)(want ? want : 1) * 3 * sizeof *merges);
    if (!merges) { andrea_set_error("out of memory (merges)"); goto done; }
    int32_t nm = run_merges(&tr, o, want, merges, t0);
    if (nm < 0) goto done;
    andrea_tok_progress(o->progress, o->progress_user, "bpe: %d merges, vocab %d (%.1fs)%s", nm,
                        257 + nm, andrea_now() - t0,
                        nm < want ? " - the corpus ran out of pairs seen min-frequency times" : "");
    int32_t byte_to_id[256];
    for (int i = 0; i < 256; i++) byte_to_id[i] = i;
    t = andrea_bpe_build(&andrea_tok_bpe_ops, 257 + nm, 256, byte_to_id, merges, nm, NULL, 0);
done:
    andrea_strmap_free(&pc.pieces);
    free(pc.count);
    trainer_free(&tr);
    free(merges);
    return t;
}
