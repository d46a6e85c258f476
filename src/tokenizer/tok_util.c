/* tok_util.c - growable arrays, hash maps and progress lines for the tokenizers. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"
#include "util/hash.h"

/* ---- growable arrays --------------------------------------------------------------- */

static int grow(void **data, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *p = realloc(*data, c * elem);
    if (!p) return andrea_set_error("out of memory (growing a buffer to %zu bytes)", c * elem);
    *data = p;
    *cap = c;
    return 0;
}

void andrea_ids_free(andrea_ids *v) {
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

void andrea_bytes_free(andrea_bytes *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int andrea_ids_push(andrea_ids *v, int32_t id) {
    if (v->len == v->cap && grow((void **)&v->data, &v->cap, v->len + 1, sizeof(int32_t)))
        return -1;
    v->data[v->len++] = id;
    return 0;
}

int andrea_bytes_append(andrea_bytes *b, const void *p, size_t n) {
    if (grow((void **)&b->data, &b->cap, b->len + n, 1)) return -1;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

int andrea_bytes_put_u32(andrea_bytes *b, uint32_t v) {
    uint8_t tmp[4];
    put_u32(tmp, v);
    return andrea_bytes_append(b, tmp, 4);
}

void andrea_tok_progress(andrea_tokenizer_progress_fn fn, void *user, const char *fmt, ...) {
    if (!fn) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fn(user, line);
}

/* ---- hashing ----------------------------------------------------------------------- */

/* splitmix64 finaliser: spreads pair keys like (a << 32 | b) over the table. */
static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c *= 2;
    return c;
}

int andrea_u64map_init(u64map *m, size_t expected) {
    m->cap = pow2_at_least(expected * 2);
    m->n = 0;
    m->keys = malloc(m->cap * sizeof *m->keys);
    m->vals = malloc(m->cap * sizeof *m->vals);
    if (!m->keys || !m->vals) {
        free(m->keys);
        free(m->vals);
        m->keys = NULL;
        m->vals = NULL;
        return andrea_set_error("out of memory (hash map of %zu entries)", m->cap);
    }
    memset(m->keys, 0xff, m->cap * sizeof *m->keys);
    return 0;
}

void andrea_u64map_free(u64map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

void andrea_u64map_clear(u64map *m) {
    if (m->keys) memset(m->keys, 0xff, m->cap * sizeof *m->keys);
    m->n = 0;
}

uint32_t *andrea_u64map_get(const u64map *m, uint64_t key) {
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == key) return &m->vals[i];
        if (m->keys[i] == UINT64_MAX) return NULL;
    }
}

static int u64map_rehash(u64map *m) {
    u64map bigger;
    if (andrea_u64map_init(&bigger, m->cap)) return -1; /* doubles: init takes 2 * expected */
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] == UINT64_MAX) continue;
        size_t mask = bigger.cap - 1, j = mix64(m->keys[i]) & mask;
        while (bigger.keys[j] != UINT64_MAX) j = (j + 1) & mask;
        bigger.keys[j] = m->keys[i];
        bigger.vals[j] = m->vals[i];
    }
    bigger.n = m->n;
    andrea_u64map_free(m);
    *m = bigger;
    return 0;
}

uint32_t *andrea_u64map_upsert(u64map *m, uint64_t key, uint32_t init, int *added) {
    if (!m->cap && andrea_u64map_init(m, 16)) return NULL;
    if ((m->n + 1) * 4 > m->cap * 3 && u64map_rehash(m)) return NULL; /* load <= 3/4 */
    size_t mask = m->cap - 1, i = mix64(key) & mask;
    for (;; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            if (added) *added = 0;
            return &m->vals[i];
        }
        if (m->keys[i] == UINT64_MAX) break;
    }
    m->keys[i] = key;
    m->vals[i] = init;
    m->n++;
    if (added) *added = 1;
    return &m->vals[i];
}

int andrea_strmap_init(strmap *m, size_t expected) {
    memset(m, 0, sizeof *m);
    m->cap = pow2_at_least(expected * 2);
    m->slots = calloc(m->cap, sizeof *m->slots);
    if (!m->slots) return andrea_set_error("out of memory (string table of %zu slots)", m->cap);
    return 0;
}

void andrea_strmap_free(strmap *m) {
    free(m->slots);
    free(m->hashes);
    free(m->offs);
    free(m->lens);
    free(m->arena);
    memset(m, 0, sizeof *m);
}

void andrea_strmap_clear(strmap *m) {
    if (m->slots) memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->n = 0;
    m->arena_len = 0;
}

int64_t andrea_strmap_find(const strmap *m, const uint8_t *p, size_t n) {
    uint64_t h = andrea_hash(ANDREA_HASH_INIT, p, n);
    size_t mask = m->cap - 1;
    for (size_t i = mix64(h) & mask;; i = (i + 1) & mask) {
        uint32_t s = m->slots[i];
        if (!s) return -1;
        size_t id = s - 1;
        if (m->hashes[id] == h && m->lens[id] == n && memcmp(m->arena + m->offs[id], p, n) == 0)
            return (int64_t)id;
    }
}

int64_t andrea_strmap_intern(strmap *m, const uint8_t *p, size_t n, int *added) {
    uint64_t h = andrea_hash(ANDREA_HASH_INIT, p, n);
    if ((m->n + 1) * 4 > m->cap * 3) { /* rehash at load 3/4 */
        size_t nc = m->cap * 2;
        uint32_t *ns = calloc(nc, sizeof *ns);
        if (!ns) return andrea_set_error("out of memory (string table of %zu slots)", nc);
        for (size_t id = 0; id < m->n; id++) {
            size_t j = mix64(m->hashes[id]) & (nc - 1);
            while (ns[j]) j = (j + 1) & (nc - 1);
            ns[j] = (uint32_t)(id + 1);
        }
        free(m->slots);
        m->slots = ns;
        m->cap = nc;
    }
    size_t mask = m->cap - 1, i = mix64(h) & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t s = m->slots[i];
        if (!s) break;
        size_t id = s - 1;
        if (m->hashes[id] == h && m->lens[id] == n && memcmp(m->arena + m->offs[id], p, n) == 0) {
            if (added) *added = 0;
            return (int64_t)id;
        }
    }
    if (m->n == UINT32_MAX - 1) return andrea_set_error("string table full (%zu entries)", m->n);
    if (m->n == m->n_cap) {
        size_t c = m->n_cap ? m->n_cap * 2 : 64;
        uint64_t *nh = realloc(m->hashes, c * sizeof *nh);
        if (nh) m->hashes = nh;
        uint64_t *no = realloc(m->offs, c * sizeof *no);
        if (no) m->offs = no;
        uint32_t *nl = realloc(m->lens, c * sizeof *nl);
        if (nl) m->lens = nl;
        if (!nh || !no || !nl) return andrea_set_error("out of memory (string table)");
        m->n_cap = c;
    }
    if (grow((void **)&m->arena, &m->arena_cap, m->arena_len + n, 1)) return -1;
    if (n) memcpy(m->arena + m->arena_len, p, n);
    size_t id = m->n++;
    m->hashes[id] = h;
    m->offs[id] = m->arena_len;
    m->lens[id] = (uint32_t)n;
    m->arena_len += n;
    m->slots[i] = (uint32_t)(id + 1);
    if (added) *added = 1;
    return (int64_t)id;
}

/* ---- UTF-8 ---------------------------------------------------------------------------- */

