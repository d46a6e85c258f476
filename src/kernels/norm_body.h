/*
 * norm_body.h - the norms' loops, included by norm.c once per instruction set with
 * NORM_FN(name) naming that copy (name_generic, name_avx2, name_avx512) and the ISA's
 * target in force, so that the same C runs at each ISA's vector width. No include
 * guard: it is meant to be included several times.
 */
static void NORM_FN(layernorm_forward)(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int C, float eps) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
    for (int i = 0; i < N; i++) {
        const float *x = inp + (long)i * C;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += x[c];
        float mu = s / C;
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int c = 0; c < C; c++) v += (x[c] - mu) * (x[c] - mu);
        float r = 1.0f / sqrtf(v / C + eps);
        float *o = out + (long)i * C;
        for (int c = 0; c < C; c++) o[c] = (x[c] - mu) * r * w[c] + (b ? b[c] : 0.0f);
        mean[i] = mu;
        rstd[i] = r;
    }
}

static void NORM_FN(layernorm_backward)(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, int N, int C) {
    if (dinp) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
        for (int i = 0; i < N; i++) {
            const float *x = inp + (long)i * C, *d = dout + (long)i * C;
            float mu = mean[i], r = rstd[i];
            /* dx = r * (dn - mean(dn) - n * mean(dn * n)), dn = dout * w, n = (x - mu) r */
            float sum_dn = 0.0f, sum_dn_n = 0.0f;
#pragma omp simd reduction(+ : sum_dn, sum_dn_n)
            for (int c = 0; c < C; c++) {
                float dn = d[c] * w[c];
                sum_dn += dn;
                sum_dn_n += dn * (x[c] - mu) * r;
            }
            float m_dn = sum_dn / C, m_dn_n = sum_dn_n / C;
            float *dx = dinp + (long)i * C;
            for (int c = 0; c < C; c++) {
                float n = (x[c] - mu) * r;
                dx[c] += r * (d[c] * w[c] - m_dn - n * m_dn_n);
            }
        }
    }
    if (dw || db) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
        for (int c0 = 0; c0 < C; c0 += COL_CHUNK) {
            int c1 = c0 + COL_CHUNK < C ? c0 + COL_CHUNK : C;
            for (int i = 0; i < N; i++) {
                const float *x = inp + (long)i * C, *d = dout + (long)i * C;
                float mu = mean[i], r = rstd[i];
                for (int c = c0; c < c1; c++) {
                    if (dw) dw[c] += d[c] * (x[c] - mu) * r;
                    if (db) db[c] += d[c];
                }
            }
        }
    }
}

static void NORM_FN(rmsnorm_forward)(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                     float eps) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
    for (int i = 0; i < N; i++) {
        const float *x = inp + (long)i * C;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; c++) ss += x[c] * x[c];
        float r = 1.0f / sqrtf(ss / C + eps);
        float *o = out + (long)i * C;
        for (int c = 0; c < C; c++) o[c] = x[c] * r * w[c];
        rstd[i] = r;
    }
}

static void NORM_FN(rmsnorm_backward)(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                      const float *rstd, int N, int C) {
    if (dinp) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
        for (int i = 0; i < N; i++) {
            const float *x = inp + (long)i * C, *d = dout + (long)i * C;
            float r = rstd[i];
            /* dx = r * (dn - n * mean(dn * n)), dn = dout * w, n = x r */
            float sum_dn_n = 0.0f;
#pragma omp simd reduction(+ : sum_dn_n)
            for (int c = 0; c < C; c++) sum_dn_n += d[c] * w[c] * x[c] * r;
            float m = sum_dn_n / C;
            float *dx = dinp + (long)i * C;
            for (int c = 0; c < C; c++) dx[c] += r * (d[c] * w[c] - x[c] * r * m);
        }
    }
    if (dw) {
#pragma omp parallel for schedule(static) if ((long)N * C >= (1L << 14))
        for (int c0 = 0; c0 < C; c0 += COL_CHUNK) {
            int c1 = c0 + COL_CHUNK < C ? c0 + COL_CHUNK : C;
            for (int i = 0; i < N; i++) {
                const float *x = inp + (long)i * C, *d = dout + (long)i * C;
                float r = rstd[i];
                for (int c = c0; c < c1; c++) dw[c] += d[c] * x[c] * r;
            }
        }
    }
}
