/* test_util.h - tiny assertion helpers: every failure prints and fails the process. */
#ifndef ANDREA_TEST_UTIL_H
#define ANDREA_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int tu_failures = 0;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            tu_failures++;                                                          \
        }                                                                           \
    } while (0)

/* |a - b| <= atol + rtol * |b| */
#define CHECK_CLOSE(a, b, atol, rtol)                                                      \
    do {                                                                                   \
        double _a = (a), _b = (b);                                                         \
        if (!(fabs(_a - _b) <= (atol) + (rtol) * fabs(_b))) {                              \
            fprintf(stderr, "%s:%d: %s = %.9g, expected %s = %.9g (atol %g, rtol %g)\n",   \
                    __FILE__, __LINE__, #a, _a, #b, _b, (double)(atol), (double)(rtol));   \
            tu_failures++;                                                                 \
        }                                                                                  \
    } while (0)

/* Compares two float arrays; reports the worst element. Returns 1 if all close. */
static inline int tu_check_array(const char *what, const float *got, const float *want,
                                 size_t n, double atol, double rtol) {
    size_t worst = 0;
    double worst_excess = -1;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        double lim = atol + rtol * fabs((double)want[i]);
        if (!(d <= lim)) ok = 0;
        double excess = isnan(d) ? INFINITY : d - lim;
        if (excess > worst_excess) { worst_excess = excess; worst = i; }
    }
    if (!ok) {
        fprintf(stderr, "%s: mismatch at [%zu]: got %.9g want %.9g (atol %g rtol %g)\n", what,
                worst, got[worst], want[worst], atol, rtol);
        tu_failures++;
    }
    return ok;
}

static inline int tu_finish(const char *name) {
    if (tu_failures) {
        fprintf(stderr, "%s: %d check(s) FAILED\n", name, tu_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
