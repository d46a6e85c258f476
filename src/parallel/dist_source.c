/*
 * dist_source.c - a rank's share of the global batch, from any batch source. Every rank
 * runs the same source from the same seed, asks it for the global micro-batch of
 * ranks x B rows and keeps rows rank*B .. rank*B + B - 1: so N ranks at B see exactly the
 * rows of one process at N*B, and the source's position (its checkpoint bytes) is the same
 * on every rank and the same as that one process's. A curriculum that chooses its sources
 * from the training loss gets the loss all-reduced over the ranks (step.c), so its choice
 * is the same everywhere. The corpus source draws its windows' offsets for the whole batch
 * but copies only this rank's rows (andrea_corpus_source_share): a rank reads only the
 * token windows it trains on.
 */
#include <stdlib.h>
#include <string.h>

#include "parallel/dist_train.h"
#include "util/error.h"

typedef struct {
    andrea_batch_source *inner;
    int rank, size;
    int32_t *x, *y; /* (size * B, T) the global micro-batch */
    size_t cap;
} share;

static int next(andrea_batch_source *s, int B, int T, int32_t *x, int32_t *y) {
    share *h = s->state;
    size_t rows = (size_t)B * T, need = rows * (size_t)h->size;
    if (need > h->cap) {
        int32_t *p = realloc(h->x, sizeof(int32_t) * need * 2);
        if (!p) return andrea_set_error("out of memory for the global batch");
        h->x = p;
        h->y = p + need;
        h->cap = need;
    }
    int32_t *gy = h->x + need; /* y lives right after x for this batch shape */
    if (h->inner->next(h->inner, B * h->size, T, h->x, gy)) return -1;
    memcpy(x, h->x + rows * (size_t)h->rank, sizeof(int32_t) * rows);
    memcpy(y, gy + rows * (size_t)h->rank, sizeof(int32_t) * rows);
    return 0;
}

static size_t save(const andrea_batch_source *s, uint8_t *out, size_t cap) {
    const share *h = s->state;
    return h->inner->save(h->inner, out, cap);
}
static int restore(andrea_batch_source *s, const uint8_t *pos, size_t n, const char *from) {
    share *h = s->state;
    return h->inner->restore(h->inner, pos, n, from);
}
static void describe(const andrea_batch_source *s, char *buf, size_t n) {
    const share *h = s->state;
    h->inner->describe(h->inner, buf, n);
}
static void sizes(const andrea_batch_source *s, int64_t *n_train, int64_t *n_val) {
    const share *h = s->state;
    h->inner->sizes(h->inner, n_train, n_val);
}
static const int32_t *validation(const andrea_batch_source *s, int64_t *n) {
    const share *h = s->state;
    return h->inner->validation(h->inner, n);
}
/* a curriculum's hooks, forwarded: it sees the all-reduced loss, the same on every rank */
static int observe(andrea_batch_source *s, int step, float loss, FILE *log) {
    share *h = s->state;
    return h->inner->observe(h->inner, step, loss, log);
}
static int parts(const andrea_batch_source *s) {
    const share *h = s->state;
    return h->inner->parts(h->inner);
}
static const int32_t *part_validation(const andrea_batch_source *s, int k, int64_t *n,
                                      const char **name) {
    const share *h = s->state;
    return h->inner->part_validation(h->inner, k, n, name);
}
static void share_free(andrea_batch_source *s) {
    if (!s) return;
    share *h = s->state;
    h->inner->free(h->inner);
    free(h->x);
    free(h);
    free(s);
}

andrea_batch_source *andrea_dist_source(andrea_batch_source *inner, int rank, int size) {
    if (size == 1) return inner;
    if (strcmp(inner->kind, "corpus") == 0) {
        andrea_corpus_source_share(inner, rank, size);
        return inner;
    }
    andrea_batch_source *s = calloc(1, sizeof *s);
    share *h = calloc(1, sizeof *h);
    if (!s || !h) {
        free(s);
        free(h);
        inner->free(inner);
        return andrea_set_error("out of memory"), NULL;
    }
    *h = (share){inner, rank, size, NULL, NULL, 0};
    *s = (andrea_batch_source){inner->kind, next, save, restore, describe, sizes, validation,
                               share_free, h, inner->observe ? observe : NULL,
                               inner->parts ? parts : NULL,
                               inner->part_validation ? part_validation : NULL};
    return s;
}
