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

typedef struct {
    uint32_t *w;
    uint32_t n, cap;
} word_list;

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
    word_list *where;
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

static int64_t pair_get_or_add(trainer *tr, int32_t a, int32_t b) {
    int added;
    uint32_t *v = andrea_u64map_upsert(&tr->pair_idx, (uint64_t)(uint32_t)a << 32 | (uint32_t)b,
                                (uint32_t)tr->n_pairs, &added);
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
        word_list *wl = realloc(tr->where, nc * sizeof *wl);
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

static int where_add(trainer *tr, size_t p, uint32_t w) {
    word_list *l = &tr->where[p];
    if (l->n && l->w[l->n - 1] == w) return 0;
    if (l->n == l->cap) {
        uint32_t nc = l->cap ? l->cap * 2 : 4;
        uint32_t *x = realloc(l->w, nc * sizeof *x);
        if (!x) return andrea_set_error("out of memory (bpe pair lists)");
        l->w = x;
        l->cap = nc;
    }
    l->w[l->n++] = w;
    return 0;
}

static void trainer_free(trainer *tr) {
    free(tr->sym);
    free(tr->woff);
    free(tr->wlen);
    free(tr->wcount);
    free(tr->wstamp);
    andrea_u64map_free(&tr->pair_idx);
    for (size_t p = 0; p < tr->n_pairs; p++) free(tr->where[p].w);
    free(tr->pcount);
    free(tr->pa);
    free(tr->pb);
    free(tr->where);
    free(tr->pstamp);
    free(tr->heap);
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
    uint32_t *touched = NULL;
    size_t n_touched = 0, cap_touched = 0;
    piece_counter pc = {.max_pieces = o->max_pieces, .progress = o->progress,
                       .progress_user = o->progress_user};
    pretok *pt = andrea_pretok_gpt2_create();
    if (!pt || andrea_strmap_init(&pc.pieces, 1 << 16)) goto done;

    /* 1. count pieces, in slices so progress can be shown */
    const uint8_t *s = text;
    size_t slice = (size_t)16 << 20;
    for (size_t off = 0; off < n;) {
        size_t end = off + slice < n ? off + slice : n;
        if (end < n) {
            size_t cut = andrea_tokenizer_safe_cut(s + off, end - off + 1);
            if (cut) end = off + cut;
        }
        if (andrea_pretok_run(pt, s + off, end - off, count_piece, &pc)) goto done;
        off = end;
        if (n > slice)
            andrea_tok_progress(o->progress, o->progress_user,
                                "bpe: counted %.1f / %.1f MB, %zu distinct pieces (%.1fs)", off / 1e6,
                                n / 1e6, pc.pieces.n, andrea_now() - t0);
    }

    /* 2. words and initial pair counts */
    size_t total_sym = 0;
    for (size_t i = 0; i < pc.pieces.n; i++)
        if (pc.pieces.lens[i] >= 2) { tr.n_words++; total_sym += pc.pieces.lens[i]; }
    tr.sym = malloc((total_sym ? total_sym : 1) * sizeof *tr.sym);
    tr.woff = malloc((tr.n_words ? tr.n_words : 1) * sizeof *tr.woff);
    tr.wlen = malloc((tr.n_words ? tr.n_words : 1) * sizeof *tr.wlen);
    tr.wcount = malloc((tr.n_words ? tr.n_words : 1) * sizeof *tr.wcount);
    tr.wstamp = calloc(tr.n_words ? tr.n_words : 1, sizeof *tr.wstamp);
    if (!tr.sym || !tr.woff || !tr.wlen || !tr.wcount || !tr.wstamp ||
        andrea_u64map_init(&tr.pair_idx, 1 << 16)) {
        andrea_set_error("out of memory (bpe words)");
        goto done;
    }
    size_t w = 0, so = 0;
    for (size_t i = 0; i < pc.pieces.n; i++) {
        size_t len;
        const uint8_t *p = strmap_key(&pc.pieces, i, &len);
        if (len < 2) continue;
        tr.woff[w] = so;
        tr.wlen[w] = (uint32_t)len;
        tr.wcount[w] = pc.count[i];
        for (size_t k = 0; k < len; k++) tr.sym[so + k] = p[k];
        for (size_t k = 0; k + 1 < len; k++) {
            int64_t pi = pair_get_or_add(&tr, p[k], p[k + 1]);
            if (pi < 0 || where_add(&tr, (size_t)pi, (uint32_t)w)) goto done;
            tr.pcount[pi] += pc.count[i];
        }
        so += len;
        w++;
    }
    andrea_tok_progress(o->progress, o->progress_user,
                        "bpe: %zu distinct pieces (%zu with pairs), %zu distinct pairs (%.1fs)",
                        pc.pieces.n, tr.n_words, tr.n_pairs, andrea_now() - t0);
    andrea_strmap_free(&pc.pieces);
    free(pc.count);
    pc.count = NULL;
    for (size_t p = 0; p < tr.n_pairs; p++)
        if (heap_push(&tr, (heap_entry){tr.pcount[p], tr.pa[p], tr.pb[p], (uint32_t)p})) goto done;

    /* 3. merges */
    int32_t want = o->vocab_size - 257, nm = 0;
    merges = malloc((size_t)(want ? want : 1) * 3 * sizeof *merges);
    if (!merges) { andrea_set_error("out of memory (merges)"); goto done; }
    double last_report = andrea_now();
    while (nm < want && tr.heap_n) {
        heap_entry e = heap_pop(&tr);
        int64_t cur = tr.pcount[e.pair];
        if (cur != e.count) {
            if (cur > 0 && heap_push(&tr, (heap_entry){cur, e.a, e.b, e.pair})) goto done;
            continue;
        }
        if (cur < o->min_frequency || cur <= 0) break;
        int32_t a = e.a, b = e.b, r = 257 + nm;
        merges[3 * nm] = a;
        merges[3 * nm + 1] = b;
        merges[3 * nm + 2] = r;
        nm++;
        uint32_t stamp = (uint32_t)nm;
        n_touched = 0;
        word_list list = tr.where[e.pair]; /* taken: the pair will not occur again */
        memset(&tr.where[e.pair], 0, sizeof list);
        for (uint32_t li = 0; li < list.n; li++) {
            uint32_t wi = list.w[li];
            if (tr.wstamp[wi] == stamp) continue;
            tr.wstamp[wi] = stamp;
            int32_t *sy = tr.sym + tr.woff[wi];
            uint32_t len = tr.wlen[wi];
            int64_t wc = tr.wcount[wi];
            int found = 0;
            for (uint32_t k = 0; k + 1 < len; k++)
                if (sy[k] == a && sy[k + 1] == b) { found = 1; break; }
            if (!found) continue;
            for (uint32_t k = 0; k + 1 < len; k++)
                tr.pcount[*andrea_u64map_get(&tr.pair_idx, (uint64_t)(uint32_t)sy[k] << 32 | (uint32_t)sy[k + 1])] -= wc;
            uint32_t j = 0;
            for (uint32_t k = 0; k < len;) {
                if (k + 1 < len && sy[k] == a && sy[k + 1] == b) {
                    sy[j++] = r;
                    k += 2;
                } else {
                    sy[j++] = sy[k++];
                }
            }
            tr.wlen[wi] = len = j;
            for (uint32_t k = 0; k + 1 < len; k++) {
                int64_t pi = pair_get_or_add(&tr, sy[k], sy[k + 1]);
                if (pi < 0) goto done_list;
                tr.pcount[pi] += wc;
                if (sy[k] == r || sy[k + 1] == r) {
                    if (where_add(&tr, (size_t)pi, wi)) goto done_list;
                    if (tr.pstamp[pi] != stamp) {
                        tr.pstamp[pi] = stamp;
                        if (n_touched == cap_touched) {
                            size_t nc = cap_touched ? cap_touched * 2 : 1024;
                            uint32_t *x = realloc(touched, nc * sizeof *x);
                            if (!x) { andrea_set_error("out of memory"); goto done_list; }
                            touched = x;
                            cap_touched = nc;
                        }
                        touched[n_touched++] = (uint32_t)pi;
                    }
                }
            }
        }
        free(list.w);
        for (size_t i = 0; i < n_touched; i++) {
            uint32_t p = touched[i];
            if (tr.pcount[p] > 0 && heap_push(&tr, (heap_entry){tr.pcount[p], tr.pa[p], tr.pb[p], p}))
                goto done;
        }
        if (o->progress && (andrea_now() - last_report > 2.0 || nm == want)) {
            last_report = andrea_now();
            andrea_tok_progress(o->progress, o->progress_user,
                                "bpe: merge %d/%d (pair count %lld), %.1fs elapsed", nm, want,
                                (long long)cur, last_report - t0);
        }
        continue;
    done_list:
        free(list.w);
        goto done;
    }
    andrea_tok_progress(o->progress, o->progress_user, "bpe: %d merges, vocab %d (%.1fs)%s", nm,
                        257 + nm, andrea_now() - t0,
                        nm < want ? " - the corpus ran out of pairs seen min-frequency times" : "");
    int32_t byte_to_id[256];
    for (int i = 0; i < 256; i++) byte_to_id[i] = i;
    t = andrea_bpe_build(&andrea_tok_bpe_ops, 257 + nm, 256, byte_to_id, merges, nm, NULL, 0);
done:
    andrea_pretok_free(pt);
    andrea_strmap_free(&pc.pieces);
    free(pc.count);
    trainer_free(&tr);
    free(merges);
    free(touched);
    return t;
}
