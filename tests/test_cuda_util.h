/* test_cuda_util.h - what the tests that run the "cuda" backend share: the backend or a
 * skip (77, with andrea_error()'s reason), and the check that no CUDA failure was recorded. */
#ifndef ANDREA_TEST_CUDA_UTIL_H
#define ANDREA_TEST_CUDA_UTIL_H

#include "andrea.h"
#include "backend/backend.h"
#include "test_util.h"

#ifdef ANDREA_HAVE_CUDA
#include "backend/cuda/cuda_api.h"
#endif

/* The cuda backend; where this machine or build has none, prints why and exits 77. */
static inline const andrea_backend *tu_cuda_or_skip(const char *test) {
    const andrea_backend *be = andrea_backend_find("cuda");
    if (!be) {
        printf("%s: skipped: %s\n", test, andrea_error());
        exit(77);
    }
    return be;
}

/* CHECKs that no CUDA call or launch failed (the backend's first recorded failure, printed). */
static inline void tu_check_no_cuda_error(const char *test) {
#ifdef ANDREA_HAVE_CUDA
    const char *err = andrea_cuda_last_error();
    if (err) printf("%s: first CUDA error: %s\n", test, err);
    CHECK(err == NULL);
#else
    (void)test;
#endif
}

#endif
