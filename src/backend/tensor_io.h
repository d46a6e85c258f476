/*
 * tensor_io.h - the one path by which code outside the backend reads and writes tensor
 * memory (parameters, gradients, moments, activations, caches). On a host backend
 * (ANDREA_MEM_HOST) it hands out the buffers themselves (zero-copy); on any other it
 * stages through host memory in bounded chunks, so that no caller ever holds a second
 * full copy of a large model. Callers never dereference a backend pointer themselves.
 */
#ifndef ANDREA_BACKEND_TENSOR_IO_H
#define ANDREA_BACKEND_TENSOR_IO_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

#define ANDREA_TIO_CHUNK ((size_t)1 << 20) /* floats staged at a time: 4 MiB */

/* Visits src[0, n) (backend memory) as host chunks: fn(user, chunk, k, at) for chunk =
 * src[at, at + k); on a host backend one call with src itself. Stops at the first
 * non-zero return of fn and returns it; -1 (andrea_error) when out of memory. */
typedef int (*andrea_tio_read_fn)(void *user, const float *chunk, size_t k, size_t at);
int andrea_tio_each(be_t be, const float *src, size_t n, andrea_tio_read_fn fn, void *user);

/* Fills dst[0, n) (backend memory) from host chunks that fn writes: fn(user, chunk, k, at)
 * provides dst[at, at + k). On a host backend, one call writing dst itself. */
typedef int (*andrea_tio_write_fn)(void *user, float *chunk, size_t k, size_t at);
int andrea_tio_fill(be_t be, float *dst, size_t n, andrea_tio_write_fn fn, void *user);

/* A host view of src[0, n) for small tensors (a row of logits, one attention map):
 * src itself on a host backend, else a copy in *scratch (grown with realloc as needed,
 * the caller frees it). NULL when out of memory. */
const float *andrea_tio_view(be_t be, const float *src, size_t n, float **scratch,
                             size_t *scratch_n);

/* dst[0, n) <- host src / host dst <- src[0, n), whole (small or already-host data). */
void andrea_tio_write(be_t be, float *dst, const float *host_src, size_t n);
void andrea_tio_read(be_t be, float *host_dst, const float *src, size_t n);

/* src[0, n) as a host array: src itself on a host backend (*owned NULL), else a copy in
 * *owned (malloc'd, the caller frees it). For the flat format's writer (small models; the
 * others stage one tensor at a time with andrea_tio_view). NULL when out of memory. */
const float *andrea_tio_host(be_t be, const float *src, size_t n, float **owned);

/* The index of the first of x[0, n) that is NaN or infinite (or negative, with nonneg),
 * its value in *value; -1 when there is none (counted by the backend: one pass, no copy). */
int64_t andrea_tio_first_nonfinite(be_t be, const float *x, size_t n, int nonneg, float *value);

/* A copy of src[0, n) (on from) in to's memory, through host chunks; NULL when out of
 * memory. src stays. */
float *andrea_tio_move(be_t from, be_t to, const float *src, size_t n);
/* dst[0, n) (to's memory) <- src[0, n) (from's), through host chunks; 0, or -1 when out of
 * memory. */
int andrea_tio_copy(be_t from, be_t to, float *dst, const float *src, size_t n);

#endif
