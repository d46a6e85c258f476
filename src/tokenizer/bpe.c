/* bpe.c - byte-level BPE encoding, shared by GPT-2 and the BPE we train.
 *
 * A tokenizer of this family is: the token id of each of the 256 bytes, and a
 * list of merges (a, b) -> r in rank order. Text is cut into pieces by GPT-2's
 * regex (pretok.c); each piece starts as its byte tokens, then, exactly as
 * GPT-2's encoder.py does, the adjacent pair with the lowest rank is found and
 * every occurrence of it is merged left to right, until no adjacent pair has a
 * rank. Pieces seen before are answered from a cache.
 *
 * Ordinary words are a handful of bytes and merge by that rescanning loop;
 * longer pieces go through a heap (merge_heap), which gives the same ids in
 * O(len log len), so an unbroken megabyte of letters takes a fraction of a second
 * instead of a minute and a half.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"

#define CACHE_MAX_PIECES (1u << 18)
#define CACHE_MAX_IDS (1u << 22)
#define SCAN_MAX 16 /* pieces up to this many bytes merge by scanning (see merge_scan) */

struct bpe_state {
    int32_t byte_to_id[256];
    int32_t *merges; /* (n_merges, 3): a, b, result */
    int32_t n_merges;
    u64map ranks;    /* (a << 32 | b) -> rank */
    uint8_t *special;
    size_t special_len;
    /* mutable encode state (see "Threads" in andrea_tokenizer.h) */
    pretok *pt;
    strmap cache;        /* piece -> cache slot */
    uint32_t *cache_off; /* per slot: first id in cache_ids */
    uint32_t *cache_len;
    size_t cache_cap;
    andrea_ids cache_ids;
    int32_t *work;       /* a piece's symbols */
    uint32_t *next, *prev; /* merge_heap's linked list over work */
    uint64_t *heap;        /* merge_heap's candidates, 3 * work_cap */
    size_t work_cap;
};

static void bpe_state_free(bpe_state *b) {
    if (!b) return;
    free(b->merges);
    andrea_u64map_free(&b->ranks);
    free(b->special);
    andrea_pretok_free(b->pt);
    andrea_strmap_free(&b->cache);
    free(b->cache_off);
    free(b->cache_len);
    andrea_ids_free(&b->cache_ids);
    free(b->work);
    free(b->next);
    free(b->prev);
    free(b->heap);
    free(b);
}

andrea_tokenizer *andrea_bpe_build(const andrea_tok_ops *ops, int32_t vocab, int32_t bos, const int32_t byte_to_id[256],
                            const int32_t *merges, int32_t n_merges, const uint8_t *special,
                            size_t special_len) {
    /* Every id in [0, vocab) must be defined exactly once: by a byte, a merge or BOS. */
    if (vocab != 256 + n_merges + 1)
        return andrea_set_error("bpe: vocab %d != 256 bytes + %d merges + BOS", vocab, n_merges),
               NULL;
    if (bos < 0 || bos >= vocab) return andrea_set_error("bpe: BOS id %d outside [0, %d)", bos, vocab), NULL;
    andrea_tokenizer *t = andrea_tok_alloc(ops, vocab, bos);
    uint8_t **ptrs = calloc((size_t)vocab, sizeof *ptrs);
    uint32_t *lens = calloc((size_t)vocab, sizeof *lens);
    uint8_t *defined = calloc((size_t)vocab, 1);
    bpe_state *b = calloc(1, sizeof *b);
    if (!t || !ptrs || !lens || !defined || !b) {
        andrea_set_error("out of memory (bpe tokenizer)");
        goto fail;
    }
    t->bpe = b;
    defined[bos] = 1;
    for (int i = 0; i < 256; i++) {
        int32_t id = byte_to_id[i];
        if (id < 0 || id >= vocab || defined[id]) {
            andrea_set_error("bpe: byte %d has id %d (out of range or used twice)", i, id);
            goto fail;
        }
        defined[id] = 1;
        b->byte_to_id[i] = id;
        lens[id] = 1;
        ptrs[id] = malloc(1);
        if (!ptrs[id]) goto oom;
        ptrs[id][0] = (uint8_t)i;
    }
    b->n_merges = n_merges;
    uint64_t table = 256; /* bytes of every token so far */
    b->merges = malloc((size_t)(n_merges ? n_merges : 1) * 3 * sizeof *b->merges);
    if (!b->merges || andrea_u64map_init(&b->ranks, (size_t)n_merges)) goto oom;
    for (int32_t r = 0; r < n_merges; r++) {
        int32_t a = merges[3 * r], c = merges[3 * r + 1], res = merges[3 * r + 2];
        if (a < 0 || a >= vocab || c < 0 || c >= vocab || !defined[a] || !defined[c] || a == bos ||
            c == bos) {
            andrea_set_error("bpe: merge %d uses id %d or %d before it is defined", r, a, c);
            goto fail;
        }
        if (res < 0 || res >= vocab || defined[res]) {
            andrea_set_error("bpe: merge %d result id %d out of range or used twice", r, res);
            goto fail;
        }
        int added;
        uint32_t *rank = andrea_u64map_upsert(&b->ranks, (uint64_t)(uint32_t)a << 32 | (uint32_t)c,
                                       (uint32_t)r, &added);
        if (!rank) goto fail;
        if (!added) {
            andrea_set_error("bpe: merge %d repeats the pair (%d, %d) of merge %u", r, a, c, *rank);
            goto fail;
        }
        defined[res] = 1;
        memcpy(&b->merges[3 * r], &merges[3 * r], 3 * sizeof *merges);
        /* in 64 bits: merges can double a length each time (32 of them wrap a uint32) */
        uint64_t len = (uint64_t)lens[a] + lens[c];
        table += len;
        if (len > ANDREA_TOK_TOKEN_MAX || table > ANDREA_TOK_TABLE_MAX) {
            andrea_set_error("bpe: merge %d makes a token of %llu bytes (%llu in all; limits %u "
                             "and %llu)", r, (unsigned long long)len, (unsigned long long)table,
                             ANDREA_TOK_TOKEN_MAX, (unsigned long long)ANDREA_TOK_TABLE_MAX);
            goto fail;
        }
        lens[res] = (uint32_t)len;
        ptrs[res] = malloc(lens[res]);
        if (!ptrs[res]) goto oom;
        memcpy(ptrs[res], ptrs[a], lens[a]);
        memcpy(ptrs[res] + lens[a], ptrs[c], lens[c]);
    }
    if (special_len) {
        b->special = malloc(special_len);
        if (!b->special) goto oom;
        memcpy(b->special, special, special_len);
        b->special_len = special_len;
        ptrs[bos] = b->special;
        lens[bos] = (uint32_t)special_len;
    }
    if (andrea_tok_set_token_bytes(t, (const uint8_t *const *)ptrs, lens)) goto fail;
    for (int32_t i = 0; i < vocab; i++)
        if (i != bos || !special_len) free(ptrs[i]);
    free(ptrs);
    free(lens);
    free(defined);
    return t;
oom:
    andrea_set_error("out of memory (bpe tokenizer)");
fail:
    if (ptrs)
        for (int32_t i = 0; i < vocab; i++)
            if (!(b && ptrs[i] == b->special)) free(ptrs[i]);
    free(ptrs);
    free(lens);
    free(defined);
    if (!t || !t->bpe) bpe_state_free(b);
    andrea_tokenizer_free(t);
    return NULL;
}

/* ---- encoding ------------------------------------------------------------------------- */

static int rank_of(const bpe_state *b, int32_t a, int32_t c, uint32_t *rank) {
    uint32_t *r = andrea_u64map_get(&b->ranks, (uint64_t)(uint32_t)a << 32 | (uint32_t)c);
    if (!r) return 0;
    *rank = *r;
    return 1;
}

/* Room for a piece of n bytes in the work arrays (the heap holds up to 3n keys:
 * n - 1 first pairs, then at most 2 new ones per merge, and there are < n merges). */
static int work_reserve(bpe_state *b, size_t n) {
    if (n > UINT32_MAX / 4)
        return andrea_set_error("bpe: one unbroken piece of %zu bytes is too long (limit %u)", n,
                                UINT32_MAX / 4);
    if (n <= b->work_cap) return 0;
    size_t c = n < 256 ? 256 : n;
    int32_t *w = realloc(b->work, c * sizeof *w);
    if (w) b->work = w;
    uint32_t *nx = realloc(b->next, c * sizeof *nx);
    if (nx) b->next = nx;
    uint32_t *pv = realloc(b->prev, c * sizeof *pv);
    if (pv) b->prev = pv;
    uint64_t *hp = realloc(b->heap, 3 * c * sizeof *hp);
    if (hp) b->heap = hp;
    if (!w || !nx || !pv || !hp) return andrea_set_error("out of memory (bpe piece of %zu bytes)", n);
    b->work_cap = c;
    return 0;
}

/* GPT-2's bpe() as written: find the lowest-rank pair, merge all its occurrences
 * left to right, repeat. O(len * merges applied): the reference for merge_heap,
 * and the faster of the two on the short pieces that make up ordinary text. */
static size_t merge_scan(const bpe_state *b, int32_t *sym, size_t m) {
    while (m > 1) {
        uint32_t best = UINT32_MAX, r;
        for (size_t i = 0; i + 1 < m; i++)
            if (rank_of(b, sym[i], sym[i + 1], &r) && r < best) best = r;
        if (best == UINT32_MAX) break;
        m = andrea_bpe_replace_pair(sym, m, b->merges[3 * best], b->merges[3 * best + 1],
                                    b->merges[3 * best + 2]);
    }
    return m;
}

/* Min-heap of keys rank << 32 | position: the lowest rank first, and within one
 * rank the leftmost occurrence first. */
static void heap_push(uint64_t *h, size_t *n, uint64_t key) {
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > key) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = key;
}

static uint64_t heap_pop(uint64_t *h, size_t *n) {
    uint64_t top = h[0], last = h[--*n];
    size_t i = 0;
    for (size_t c; (c = 2 * i + 1) < *n; i = c) {
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= last) break;
        h[i] = h[c];
    }
    h[i] = last;
    return top;
}

#define NONE UINT32_MAX

static void push_pair(const bpe_state *b, uint64_t *h, size_t *hn, const int32_t *sym, uint32_t i,
                      uint32_t j) {
    uint32_t r;
    if (rank_of(b, sym[i], sym[j], &r)) heap_push(h, hn, (uint64_t)r << 32 | i);
}

/* The same merges as merge_scan in O(len log len): symbols in a linked list,
 * candidate pairs in a heap keyed by (rank, left position), stale entries
 * dropped when they surface. Same result because a merge never makes a pair of
 * lower rank than its own (merge r only uses ids defined before it: bpe_build
 * checks), so every occurrence of rank r is merged, leftmost first, before any
 * higher rank, which is exactly GPT-2's all-occurrences-left-to-right round.
 * Returns the number of symbols, compacted to the front of sym. */
static size_t merge_heap(bpe_state *b, int32_t *sym, size_t m) {
    uint32_t *next = b->next, *prev = b->prev;
    uint64_t *h = b->heap;
    size_t hn = 0;
    for (uint32_t i = 0; i < m; i++) {
        prev[i] = i ? i - 1 : NONE;
        next[i] = i + 1 < m ? i + 1 : NONE;
    }
    for (uint32_t i = 0; i + 1 < m; i++) push_pair(b, h, &hn, sym, i, i + 1);
    while (hn) {
        uint64_t key = heap_pop(h, &hn);
        uint32_t r = (uint32_t)(key >> 32), i = (uint32_t)key, j = next[i], now;
        /* stale: i was merged into its left neighbour, or i's pair changed since */
        if (sym[i] < 0 || j == NONE || !rank_of(b, sym[i], sym[j], &now) || now != r) continue;
        sym[i] = b->merges[3 * r + 2];
        sym[j] = -1;
        next[i] = next[j];
        if (next[i] != NONE) prev[next[i]] = i;
        if (prev[i] != NONE) push_pair(b, h, &hn, sym, prev[i], i);
        if (next[i] != NONE) push_pair(b, h, &hn, sym, i, next[i]);
    }
    size_t k = 0; /* node 0 is never merged away: merges keep the left node */
    for (uint32_t i = 0; i != NONE; i = next[i]) sym[k++] = sym[i];
    return k;
}

int andrea_bpe_merge_piece(const andrea_tokenizer *t, const uint8_t *p, size_t n, int method,
                           andrea_ids *out) {
    bpe_state *b = t->bpe;
    if (work_reserve(b, n)) return -1;
    int32_t *sym = b->work;
    for (size_t i = 0; i < n; i++) sym[i] = b->byte_to_id[p[i]];
    if (method == ANDREA_BPE_MERGE_AUTO) method = n <= SCAN_MAX ? ANDREA_BPE_MERGE_SCAN : ANDREA_BPE_MERGE_HEAP;
    size_t m = method == ANDREA_BPE_MERGE_SCAN ? merge_scan(b, sym, n) : merge_heap(b, sym, n);
    for (size_t i = 0; i < m; i++)
        if (andrea_ids_push(out, sym[i])) return -1;
    return 0;
}

static int cache_reset(bpe_state *b) {
    andrea_strmap_free(&b->cache);
    b->cache_ids.len = 0;
    return andrea_strmap_init(&b->cache, 4096);
}

static int encode_piece(void *ctx, const uint8_t *p, size_t n) {
    void **c = ctx;
    const andrea_tokenizer *t = c[0];
    bpe_state *b = t->bpe;
    andrea_ids *out = c[1];
    if (n == 1) return andrea_ids_push(out, b->byte_to_id[p[0]]);
    if (n > 64) return andrea_bpe_merge_piece(t, p, n, ANDREA_BPE_MERGE_AUTO, out); /* long pieces are rarely repeated */
    int64_t slot = andrea_strmap_find(&b->cache, p, n);
    if (slot >= 0) {
        const int32_t *ids = b->cache_ids.data + b->cache_off[slot];
        for (uint32_t i = 0; i < b->cache_len[slot]; i++)
            if (andrea_ids_push(out, ids[i])) return -1;
        return 0;
    }
    size_t before = out->len;
    if (andrea_bpe_merge_piece(t, p, n, ANDREA_BPE_MERGE_AUTO, out)) return -1;
    if (b->cache.n >= CACHE_MAX_PIECES || b->cache_ids.len >= CACHE_MAX_IDS) {
        if (cache_reset(b)) return -1;
    }
    int added;
    slot = andrea_strmap_intern(&b->cache, p, n, &added);
    if (slot < 0) return -1;
    if ((size_t)slot >= b->cache_cap) {
        size_t nc = b->cache_cap ? b->cache_cap * 2 : 4096;
        uint32_t *o = realloc(b->cache_off, nc * sizeof *o);
        if (o) b->cache_off = o;
        uint32_t *l = realloc(b->cache_len, nc * sizeof *l);
        if (l) b->cache_len = l;
        if (!o || !l) return andrea_set_error("out of memory (bpe cache)");
        b->cache_cap = nc;
    }
    b->cache_off[slot] = (uint32_t)b->cache_ids.len;
    b->cache_len[slot] = (uint32_t)(out->len - before);
    for (size_t i = before; i < out->len; i++)
        if (andrea_ids_push(&b->cache_ids, out->data[i])) return -1;
    return 0;
}

static int encode_ordinary(const andrea_tokenizer *t, const uint8_t *s, size_t n, andrea_ids *out) {
    bpe_state *b = t->bpe;
    if (!b->pt) {
        b->pt = andrea_pretok_gpt2_create();
        if (!b->pt) return -1;
        if (cache_reset(b)) return -1;
    }
    void *ctx[2] = {(void *)t, out};
    return andrea_pretok_run(b->pt, s, n, encode_piece, ctx);
}

static int bpe_encode(const andrea_tokenizer *t, const uint8_t *s, size_t n, int flags,
                      uint64_t base, andrea_ids *out) {
    (void)base;
    bpe_state *b = t->bpe;
    if (!(flags & ANDREA_ENCODE_SPECIAL) || !b->special_len) return encode_ordinary(t, s, n, out);
    /* Special text splits the input first, as tiktoken's allowed_special does. */
    size_t start = 0, L = b->special_len;
    for (size_t i = 0; i + L <= n;) {
        if (s[i] == b->special[0] && memcmp(s + i, b->special, L) == 0) {
            if (encode_ordinary(t, s + start, i - start, out)) return -1;
            if (andrea_ids_push(out, t->bos)) return -1;
            i += L;
            start = i;
        } else {
            i++;
        }
    }
    return encode_ordinary(t, s + start, n - start, out);
}

/* ---- blob: u32 n_merges, u32 byte_to_id[256], n_merges x (u32 a, b, result),
 *            u32 special_len, special bytes ------------------------------------------- */

static int bpe_serialize(const andrea_tokenizer *t, andrea_bytes *out) {
    const bpe_state *b = t->bpe;
    if (andrea_bytes_put_u32(out, (uint32_t)b->n_merges)) return -1;
    for (int i = 0; i < 256; i++)
        if (andrea_bytes_put_u32(out, (uint32_t)b->byte_to_id[i])) return -1;
    for (int64_t i = 0; i < 3 * (int64_t)b->n_merges; i++)
        if (andrea_bytes_put_u32(out, (uint32_t)b->merges[i])) return -1;
    if (andrea_bytes_put_u32(out, (uint32_t)b->special_len)) return -1;
    return andrea_bytes_append(out, b->special, b->special_len);
}

static andrea_tokenizer *bpe_deserialize_as(const andrea_tok_ops *ops, uint32_t vocab, uint32_t bos,
                                            const uint8_t *p, size_t n, const char *what) {
    if (n < 4 + 256 * 4 + 4) return andrea_set_error("%s: bpe payload truncated (%zu bytes)", what, n), NULL;
    uint32_t nm = get_u32(p);
    if (nm > (uint32_t)INT32_MAX / 4 || (uint64_t)4 + 1024 + 12ull * nm + 4 > n)
        return andrea_set_error("%s: bpe payload says %u merges but holds %zu bytes", what, nm, n), NULL;
    size_t off = 4;
    int32_t byte_to_id[256];
    for (int i = 0; i < 256; i++, off += 4) byte_to_id[i] = (int32_t)get_u32(p + off);
    int32_t *merges = malloc((size_t)(nm ? nm : 1) * 3 * sizeof *merges);
    if (!merges) return andrea_set_error("out of memory (%u merges)", nm), NULL;
    for (size_t i = 0; i < 3 * (size_t)nm; i++, off += 4) merges[i] = (int32_t)get_u32(p + off);
    uint32_t sl = get_u32(p + off);
    off += 4;
    if (off + sl != n) {
        free(merges);
        return andrea_set_error("%s: bpe payload is %zu bytes, fields need %zu", what, n,
                                (size_t)(off + sl)), NULL;
    }
    andrea_tokenizer *t = andrea_bpe_build(ops, (int32_t)vocab, (int32_t)bos, byte_to_id, merges,
                                           (int32_t)nm, p + off, sl);
    free(merges);
    return t;
}

static andrea_tokenizer *bpe_deserialize(uint32_t vocab, uint32_t bos, const uint8_t *p, size_t n,
                                         const char *what) {
    return bpe_deserialize_as(&andrea_tok_bpe_ops, vocab, bos, p, n, what);
}

static andrea_tokenizer *gpt2_deserialize(uint32_t vocab, uint32_t bos, const uint8_t *p, size_t n,
                                          const char *what) {
    return bpe_deserialize_as(&andrea_tok_gpt2_ops, vocab, bos, p, n, what);
}

static void bpe_free(andrea_tokenizer *t) { bpe_state_free(t->bpe); }

/* The BPE we train and OpenAI's GPT-2 differ only in where the table came from
 * and in GPT-2's special token, which the table itself carries. */
const andrea_tok_ops andrea_tok_bpe_ops = {
    .kind = ANDREA_TOK_BPE,
    .name = "bpe",
    .encode = bpe_encode,
    .serialize = bpe_serialize,
    .deserialize = bpe_deserialize,
    .free_state = bpe_free,
};

const andrea_tok_ops andrea_tok_gpt2_ops = {
    .kind = ANDREA_TOK_GPT2,
    .name = "gpt2",
    .encode = bpe_encode,
    .special = 1,
    .serialize = bpe_serialize,
    .deserialize = gpt2_deserialize,
    .free_state = bpe_free,
};
