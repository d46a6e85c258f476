/* test_util.h - tiny assertion helpers: every failure prints and fails the process. */
#ifndef ANDREA_TEST_UTIL_H
#define ANDREA_TEST_UTIL_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* Test data: a small deterministic generator (xorshift64*) that each test seeds, so a
 * failure reproduces exactly. Kept apart from the library's andrea_rng on purpose: the
 * tests of the library should not depend on it. */
static inline uint64_t *tu_rng_state(void) {
    static uint64_t state = 0x9E3779B97F4A7C15ull;
    return &state;
}
static inline void tu_rng_seed(uint64_t seed) { *tu_rng_state() = seed; }
static inline uint64_t tu_rng_u64(void) {
    uint64_t *s = tu_rng_state();
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}
static inline double tu_rnd_unit(void) { /* [0, 1) */
    return (double)(tu_rng_u64() >> 11) * (1.0 / 9007199254740992.0);
}
static inline float tu_rnd_normal(void) { /* Box-Muller: N(0, 1) */
    double u = tu_rnd_unit(), v = tu_rnd_unit();
    return (float)(sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v));
}
/* malloc that ends the test on failure */
static inline float *tu_falloc(size_t n) {
    float *p = (float *)malloc((n ? n : 1) * sizeof(float)); /* (cast: C++ tests include this too) */
    if (!p) {
        fprintf(stderr, "test: out of memory (%zu floats)\n", n);
        exit(1);
    }
    return p;
}

static inline float *tu_normal_array(size_t n) { /* n draws of tu_rnd_normal */
    float *x = tu_falloc(n);
    for (size_t i = 0; i < n; i++) x[i] = tu_rnd_normal();
    return x;
}
static inline float *tu_dup(const float *x, size_t n) {
    float *y = tu_falloc(n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}
static inline double tu_max_abs(const float *x, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        if (fabs((double)x[i]) > m) m = fabs((double)x[i]);
    return m;
}
/* Elementwise |got - want| <= rel * max|want| + rel * |want|: for tensors whose elements
 * can cancel to ~0 (norm and attention outputs and gradients), the error is judged
 * against the scale of the whole tensor. */
static inline int tu_check_rel(const char *what, const float *got, const float *want, size_t n,
                               double rel) {
    return tu_check_array(what, got, want, n, rel * tu_max_abs(want, n), rel);
}

/* rel 0: got must be want to the bit; else tu_check_rel. A NULL side is a failure (an API
 * that should have produced the tensor did not). */
static inline void tu_same(const char *what, const float *got, const float *want, size_t n,
                           double rel) {
    if (!got || !want) {
        fprintf(stderr, "%s: missing\n", what);
        tu_failures++;
    } else if (rel == 0.0) {
        if (memcmp(got, want, sizeof(float) * n) != 0) {
            fprintf(stderr, "%s: not bit-identical\n", what);
            tu_failures++;
        }
    } else {
        tu_check_rel(what, got, want, n, rel);
    }
}

/* dir/name in one of 4 rotating buffers: a few paths can be alive at once. */
static inline const char *tu_path(const char *dir, const char *name) {
    static char buf[4][1200];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* The test's scratch directory into dir: $ANDREA_TMP (set by CTest) or /tmp, created if
 * missing. 0, or -1 when it cannot be made. */
static inline int tu_tmp_dir(char *dir, size_t n) {
    const char *tmp = getenv("ANDREA_TMP");
    snprintf(dir, n, "%s", tmp && *tmp ? tmp : "/tmp");
    return mkdir(dir, 0777) == 0 || errno == EEXIST ? 0 : -1;
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
