/* strset.h - a set of byte strings, each with a dense index 0..n-1 in the order added
 * (so callers keep parallel arrays: counts, flags). Zero-initialise; not thread-safe
 * while adding, read-only lookups may be shared. */
#ifndef ANDREA_TRAIN_STRSET_H
#define ANDREA_TRAIN_STRSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t *slot;  /* 1 + index into off/len, 0 = empty */
    size_t cap;      /* power of two */
    size_t n;
    size_t *off;     /* (n) offsets into arena */
    uint32_t *len;   /* (n) */
    char *arena;
    size_t arena_len, arena_cap, items_cap;
} strset;

/* Index of w[0..n) or -1. */
long andrea_strset_find(const strset *s, const char *w, size_t n);
/* Adds w (if new); returns its index, or -1 when out of memory. */
long andrea_strset_add(strset *s, const char *w, size_t n);
void andrea_strset_free(strset *s);

#endif
