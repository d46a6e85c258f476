/* tensor_io.c - host access to backend memory: zero-copy on a host backend, staged in
 * bounded chunks elsewhere (tensor_io.h). */
#include "backend/tensor_io.h"

#include <math.h>
#include <stdlib.h>

#include "util/error.h"

/* The staging loop of each (rd: download, then rd) and fill (wr, then upload): chunks of at
 * most ANDREA_TIO_CHUNK floats through one host buffer. dev is only read when rd is given. */
static int staged(be_t be, float *dev, size_t n, andrea_tio_read_fn rd, andrea_tio_write_fn wr,
                  void *user) {
    size_t cap = n < ANDREA_TIO_CHUNK ? n : ANDREA_TIO_CHUNK;
    float *buf = malloc(sizeof(float) * cap);
    if (!buf) return andrea_set_error("out of memory staging %zu floats", cap);
    int rc = 0;
    for (size_t at = 0; rc == 0 && at < n; at += cap) {
        size_t k = n - at < cap ? n - at : cap;
        if (rd) be->ops.download(be, buf, dev + at, sizeof(float) * k);
        rc = rd ? rd(user, buf, k, at) : wr(user, buf, k, at);
        if (rc == 0 && !rd) be->ops.upload(be, dev + at, buf, sizeof(float) * k);
    }
    free(buf);
    return rc;
}

int andrea_tio_each(be_t be, const float *src, size_t n, andrea_tio_read_fn fn, void *user) {
    if (be->memory == ANDREA_MEM_HOST || n == 0) return fn(user, src, n, 0);
    return staged(be, (float *)src, n, fn, NULL, user); /* src is only downloaded */
}

int andrea_tio_fill(be_t be, float *dst, size_t n, andrea_tio_write_fn fn, void *user) {
    if (be->memory == ANDREA_MEM_HOST || n == 0) return fn(user, dst, n, 0);
    return staged(be, dst, n, NULL, fn, user);
}

const float *andrea_tio_view(be_t be, const float *src, size_t n, float **scratch,
                             size_t *scratch_n) {
    if (be->memory == ANDREA_MEM_HOST) return src;
    if (*scratch_n < n || !*scratch) {
        float *p = realloc(*scratch, sizeof(float) * (n ? n : 1));
        if (!p) return andrea_set_error("out of memory staging %zu floats", n), NULL;
        *scratch = p;
        *scratch_n = n;
    }
    be->ops.download(be, *scratch, src, sizeof(float) * n);
    return *scratch;
}

void andrea_tio_write(be_t be, float *dst, const float *host_src, size_t n) {
    if (n) be->ops.upload(be, dst, host_src, sizeof(float) * n);
}
void andrea_tio_read(be_t be, float *host_dst, const float *src, size_t n) {
    if (n) be->ops.download(be, host_dst, src, sizeof(float) * n);
}

typedef struct {
    int nonneg;
    int64_t at;
    float value;
} scan;

static int find_bad(void *user, const float *chunk, size_t k, size_t at) {
    scan *s = user;
    for (size_t i = 0; i < k; i++)
        if (!isfinite(chunk[i]) || (s->nonneg && chunk[i] < 0)) {
            s->at = (int64_t)(at + i);
            s->value = chunk[i];
            return 1;
        }
    return 0;
}

int64_t andrea_tio_first_nonfinite(be_t be, const float *x, size_t n, int nonneg, float *value) {
    if (be->ops.count_nonfinite(be, x, n, nonneg) == 0) return -1;
    scan s = {nonneg, -1, 0.0f};
    andrea_tio_each(be, x, n, find_bad, &s); /* only on the failure path: finds which */
    *value = s.value;
    return s.at;
}

typedef struct {
    be_t to;
    float *dst;
} move_job;

static int put_chunk(void *user, const float *chunk, size_t k, size_t at) {
    move_job *j = user;
    andrea_tio_write(j->to, j->dst + at, chunk, k);
    return 0;
}

int andrea_tio_copy(be_t from, be_t to, float *dst, const float *src, size_t n) {
    move_job j = {to, dst};
    return andrea_tio_each(from, src, n, put_chunk, &j) ? -1 : 0;
}

float *andrea_tio_move(be_t from, be_t to, const float *src, size_t n) {
    float *dst = to->ops.alloc(to, sizeof(float) * (n ? n : 1));
    if (!dst)
        return andrea_set_error("out of memory: %zu floats on backend '%s'", n, to->name), NULL;
    if (andrea_tio_copy(from, to, dst, src, n)) {
        to->ops.free(to, dst);
        return NULL;
    }
    return dst;
}

const float *andrea_tio_host(be_t be, const float *src, size_t n, float **owned) {
    *owned = NULL;
    if (be->memory == ANDREA_MEM_HOST || !src) return src;
    size_t k = 0;
    return andrea_tio_view(be, src, n, owned, &k);
}
