/* bigalloc.h - allocations of tensors (parameters, gradients, optimizer moments,
 * activations, quantised weights): aligned to 2 MiB and, on Linux, advised into
 * transparent huge pages, so that streaming hundreds of MB (batch-1 decoding reads every
 * weight per token) is not slowed by a TLB miss every 4 KiB. Free with free(). */
#ifndef ANDREA_UTIL_BIGALLOC_H
#define ANDREA_UTIL_BIGALLOC_H

#include <stddef.h>

void *andrea_big_alloc(size_t bytes);  /* uninitialised; NULL when out of memory */
void *andrea_big_calloc(size_t bytes); /* zeroed */

#endif
