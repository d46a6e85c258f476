/*
 * matmul_blas.c - the BLAS compiled in (OpenBLAS), run so that its threads and ours do
 * not fight: OpenBLAS's own pool is kept at one thread, and each product is cut into
 * a fixed number of slabs (set by the shape alone) that our OpenMP threads share, each
 * slab one single-threaded sgemm. Two pools spinning on two cores took turns: OpenBLAS's
 * pthreads spin after a call while OpenMP's wait for the next region, and the other
 * way round (docs/performance.md has the measurement). Fixed slabs also keep results
 * independent of the thread count, as the built-in kernels' are.
 * ANDREA_BLAS_THREADS=pool restores OpenBLAS's own pool (for measuring the two).
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/kernels.h"

#ifdef ANDREA_HAVE_BLAS
#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int use_pool(void) {
    static int cached = -1; /* a benign race: every thread computes the same value */
    if (cached < 0) {
        const char *v = getenv("ANDREA_BLAS_THREADS");
        cached = v && strcmp(v, "pool") == 0;
    }
    return cached;
}

/* C(M, N) += op(A) @ op(B), row-major; op(X) = X^T when t_x. Slabs of rows (the longer
 * side when M >= N) or of columns, 8 of them at most, whole multiples of 16. */
void andrea_blas_gemm(int t_a, int t_b, int M, int N, int K, const float *a, int lda,
                      const float *b, int ldb, float *c, int ldc) {
    enum CBLAS_TRANSPOSE ta = t_a ? CblasTrans : CblasNoTrans, tb = t_b ? CblasTrans : CblasNoTrans;
    if (use_pool()) {
#ifdef _OPENMP
        openblas_set_num_threads(omp_get_max_threads());
#endif
        cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
        return;
    }
    openblas_set_num_threads(1);
    int rows = M >= N, len = rows ? M : N;
    int slab = (len + 7) / 8;
    slab = (slab + 15) / 16 * 16;
    if (slab < 64) slab = 64;
    int n_slabs = (len + slab - 1) / slab;
#pragma omp parallel for schedule(dynamic, 1) if (n_slabs > 1)
    for (int s = 0; s < n_slabs; s++) {
        int lo = s * slab, n = len - lo < slab ? len - lo : slab;
        if (rows) /* rows lo.. of op(A) and C */
            cblas_sgemm(CblasRowMajor, ta, tb, n, N, K, 1.0f, t_a ? a + lo : a + (long)lo * lda,
                        lda, b, ldb, 1.0f, c + (long)lo * ldc, ldc);
        else /* columns lo.. of op(B) and C */
            cblas_sgemm(CblasRowMajor, ta, tb, M, n, K, 1.0f, a, lda,
                        t_b ? b + (long)lo * ldb : b + lo, ldb, 1.0f, c + lo, ldc);
    }
}

const char *andrea_blas_core(void) { return openblas_get_corename(); }
#else
void andrea_blas_gemm(int t_a, int t_b, int M, int N, int K, const float *a, int lda,
                      const float *b, int ldb, float *c, int ldc) {
    (void)t_a, (void)t_b, (void)M, (void)N, (void)K, (void)a, (void)lda, (void)b, (void)ldb;
    (void)c, (void)ldc; /* never called: andrea_blas_available() is 0 */
}
const char *andrea_blas_core(void) { return "none"; }
#endif
