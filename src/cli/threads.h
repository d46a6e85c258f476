/* threads.h - apply -t/--threads (0 = OpenMP's default: all cores). */
#ifndef ANDREA_CLI_THREADS_H
#define ANDREA_CLI_THREADS_H

#ifdef _OPENMP
#include <omp.h>
#endif

static inline int cli_set_threads(int n) {
#ifdef _OPENMP
    if (n > 0) omp_set_num_threads(n);
    return omp_get_max_threads();
#else
    (void)n;
    return 1;
#endif
}

#endif
