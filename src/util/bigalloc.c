/* bigalloc.c - huge-page friendly allocations of big tensors (see bigalloc.h). */
#define _DEFAULT_SOURCE /* madvise */
#include "util/bigalloc.h"

#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define HUGE_PAGE ((size_t)2 << 20)

void *andrea_big_alloc(size_t bytes) {
    if (bytes < HUGE_PAGE) return malloc(bytes ? bytes : 1);
    void *p = NULL;
    size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (posix_memalign(&p, HUGE_PAGE, rounded) != 0) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, rounded, MADV_HUGEPAGE); /* advice only: failure changes nothing */
#endif
    return p;
}

void *andrea_big_calloc(size_t bytes) {
    void *p = andrea_big_alloc(bytes);
    if (p) memset(p, 0, bytes);
    return p;
}
