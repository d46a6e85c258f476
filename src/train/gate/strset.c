/* strset.c - a set of byte strings (open addressing, FNV-1a; strset.h): the coherence
 * gate's word list, a sample's vocabulary and its reference text's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "train/gate/strset.h"
#include "util/hash.h"



/* byte-wise FNV-1a: its low bits, which index the table, depend on every byte */
static uint64_t fnv(const char *s, size_t n) { return andrea_fnv1a64(ANDREA_HASH_INIT, s, n); }

void andrea_strset_free(strset *s) {
    free(s->slot);
    free(s->off);
    free(s->len);
    free(s->arena);
    memset(s, 0, sizeof *s);
}

long andrea_strset_find(const strset *s, const char *w, size_t n) {
    if (!s->cap) return -1;
    for (size_t i = fnv(w, n) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        uint32_t v = s->slot[i];
        if (!v) return -1;
        if (s->len[v - 1] == n && memcmp(s->arena + s->off[v - 1], w, n) == 0) return v - 1;
    }
}

static int strset_grow(strset *s) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (!slot) return -1;
    for (size_t k = 0; k < s->n; k++) {
        size_t i = fnv(s->arena + s->off[k], s->len[k]) & (cap - 1);
        while (slot[i]) i = (i + 1) & (cap - 1);
        slot[i] = (uint32_t)(k + 1);
    }
    free(s->slot);
    s->slot = slot;
    s->cap = cap;
    return 0;
}

long andrea_strset_add(strset *s, const char *w, size_t n) {
    long found = andrea_strset_find(s, w, n);
    if (found >= 0) return found;
    if ((s->n + 1) * 2 > s->cap && strset_grow(s)) return -1;
    if (s->n == s->items_cap) {
        size_t c = s->items_cap ? s->items_cap * 2 : 1024;
        size_t *off = realloc(s->off, c * sizeof *off);
        if (off) s->off = off;
        uint32_t *len = realloc(s->len, c * sizeof *len);
        if (len) s->len = len;
        if (!off || !len) return -1;
        s->items_cap = c;
    }
    if (s->arena_len + n > s->arena_cap) {
        size_t c = s->arena_cap ? s->arena_cap * 2 : 65536;
        while (c < s->arena_len + n) c *= 2;
        char *a = realloc(s->arena, c);
        if (!a) return -1;
        s->arena = a;
        s->arena_cap = c;
    }
    memcpy(s->arena + s->arena_len, w, n);
    s->off[s->n] = s->arena_len;
    s->len[s->n] = (uint32_t)n;
    s->arena_len += n;
    size_t i = fnv(w, n) & (s->cap - 1);
    while (s->slot[i]) i = (i + 1) & (s->cap - 1);
    s->slot[i] = (uint32_t)(s->n + 1);
    return (long)s->n++;
}

