/* test_fastmath.c - the vectorisable expf/tanhf against double-precision libm. */
#include <math.h>

#include "backend/cpu/kernels/fastmath.h"
#include "test_util.h"

int main(void) {
    double worst_exp = 0, worst_tanh = 0;
    for (int i = 0; i <= 2000000; i++) {
        float x = -87.0f + 175.0f * (float)i / 2000000.0f;
        double want = exp((double)x);
        double rel = fabs(andrea_expf(x) - want) / want;
        if (rel > worst_exp) worst_exp = rel;
        float u = -12.0f + 24.0f * (float)i / 2000000.0f;
        double terr = fabs(andrea_tanhf(u) - tanh((double)u));
        if (terr > worst_tanh) worst_tanh = terr;
    }
    printf("expf: worst relative error %.3g; tanhf: worst absolute error %.3g\n", worst_exp,
           worst_tanh);
    /* Cephes' polynomial is good to ~1 ulp (6e-8); allow a few ulps for the final scaling */
    CHECK(worst_exp < 3e-7);
    /* 1 - 2/(1 + e^2u): absolute error bounded by a few ulps of 1 */
    CHECK(worst_tanh < 3e-7);
    CHECK(andrea_expf(-1000.0f) >= 0.0f && andrea_expf(-1000.0f) < 1e-37f); /* clamped, no NaN */
    CHECK(isfinite(andrea_expf(1000.0f)));
    CHECK(andrea_tanhf(50.0f) == 1.0f && andrea_tanhf(-50.0f) == -1.0f);
    CHECK(andrea_expf(0.0f) == 1.0f);
    /* NaN and Inf are defined (the UBSan build aborted converting NaN to int): NaN in, NaN
     * out, so the trainer's NaN guard sees it; Inf clamps like any large input */
    volatile float nan_in = NAN, inf_in = INFINITY; /* volatile: evaluated at run time */
    CHECK(isnan(andrea_expf(nan_in)));
    CHECK(isnan(andrea_expf(-nan_in)));
    CHECK(isnan(andrea_tanhf(nan_in)));
    CHECK(isfinite(andrea_expf(inf_in)) && andrea_expf(inf_in) > 1e38f);
    CHECK(andrea_expf(-inf_in) >= 0.0f && andrea_expf(-inf_in) < 1e-37f);
    CHECK(andrea_tanhf(inf_in) == 1.0f && andrea_tanhf(-inf_in) == -1.0f);
    /* the vectorised loop shape the kernels use: NaN lanes stay NaN, the others exact */
    float v[16];
    for (int i = 0; i < 16; i++) v[i] = i % 3 == 0 ? nan_in : (float)i;
    for (int i = 0; i < 16; i++) v[i] = andrea_expf(v[i]);
    for (int i = 0; i < 16; i++) CHECK(i % 3 == 0 ? isnan(v[i]) : v[i] == andrea_expf((float)i));
    return tu_finish("test_fastmath");
}
