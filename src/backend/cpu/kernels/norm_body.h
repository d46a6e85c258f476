/*
 * norm_body.h - the norms' loops over a range of rows (forward, the input gradient) or
 * of columns (the weight gradients), included by norm.c once per instruction set with
 * NORM_FN(name) naming that copy (name_generic, name_avx2, name_avx512) and the ISA's
 * target in force, so that the same C runs at each ISA's vector width. norm.c runs the
 * ranges in parallel (isa_copies.h says why not here). No include guard: it is meant to
 * be included several times.
 */
static void NORM_FN(layernorm_forward_rows)(const norm_job *j, int i0, int i1) {
    const int C = j->C;
    for (int i = i0; i < i1; i++) {
        const float *x = j->inp + (long)i * C;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += x[c];
        float mu = s / C;
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int c = 0; c < C; c++) v += (x[c] - mu) * (x[c] - mu);
        float r = 1.0f / sqrtf(v / C + j->eps);
        float *o = j->out + (long)i * C;
        const float *w = j->w, *b = j->b;
        for (int c = 0; c < C; c++) o[c] = (x[c] - mu) * r * w[c] + (b ? b[c] : 0.0f);
        j->mean[i] = mu;
        j->rstd[i] = r;
    }
}

static void NORM_FN(layernorm_dinp_rows)(const norm_job *j, int i0, int i1) {
    const int C = j->C;
    const float *w = j->w;
    for (int i = i0; i < i1; i++) {
        const float *x = j->inp + (long)i * C, *d = j->dout + (long)i * C;
        float mu = j->saved_mean[i], r = j->saved_rstd[i];
        /* dx = r * (dn - mean(dn) - n * mean(dn * n)), dn = dout * w, n = (x - mu) r */
        float sum_dn = 0.0f, sum_dn_n = 0.0f;
#pragma omp simd reduction(+ : sum_dn, sum_dn_n)
        for (int c = 0; c < C; c++) {
            float dn = d[c] * w[c];
            sum_dn += dn;
            sum_dn_n += dn * (x[c] - mu) * r;
        }
        float m_dn = sum_dn / C, m_dn_n = sum_dn_n / C;
        float *dx = j->dinp + (long)i * C;
        for (int c = 0; c < C; c++) {
            float n = (x[c] - mu) * r;
            dx[c] += r * (d[c] * w[c] - m_dn - n * m_dn_n);
        }
    }
}

/* dw and db over columns [c0, c1), every row in order: one fixed sum per column */
static void NORM_FN(layernorm_dw_cols)(const norm_job *j, int c0, int c1) {
    const int C = j->C;
    float *dw = j->dw, *db = j->db;
    for (int i = 0; i < j->N; i++) {
        const float *x = j->inp + (long)i * C, *d = j->dout + (long)i * C;
        float mu = j->saved_mean[i], r = j->saved_rstd[i];
        for (int c = c0; c < c1; c++) {
            if (dw) dw[c] += d[c] * (x[c] - mu) * r;
            if (db) db[c] += d[c];
        }
    }
}

static void NORM_FN(rmsnorm_forward_rows)(const norm_job *j, int i0, int i1) {
    const int C = j->C;
    for (int i = i0; i < i1; i++) {
        const float *x = j->inp + (long)i * C;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; c++) ss += x[c] * x[c];
        float r = 1.0f / sqrtf(ss / C + j->eps);
        float *o = j->out + (long)i * C;
        const float *w = j->w;
        for (int c = 0; c < C; c++) o[c] = x[c] * r * w[c];
        j->rstd[i] = r;
    }
}

static void NORM_FN(rmsnorm_dinp_rows)(const norm_job *j, int i0, int i1) {
    const int C = j->C;
    const float *w = j->w;
    for (int i = i0; i < i1; i++) {
        const float *x = j->inp + (long)i * C, *d = j->dout + (long)i * C;
        float r = j->saved_rstd[i];
        /* dx = r * (dn - n * mean(dn * n)), dn = dout * w, n = x r */
        float sum_dn_n = 0.0f;
#pragma omp simd reduction(+ : sum_dn_n)
        for (int c = 0; c < C; c++) sum_dn_n += d[c] * w[c] * x[c] * r;
        float m = sum_dn_n / C;
        float *dx = j->dinp + (long)i * C;
        for (int c = 0; c < C; c++) dx[c] += r * (d[c] * w[c] - x[c] * r * m);
    }
}

static void NORM_FN(rmsnorm_dw_cols)(const norm_job *j, int c0, int c1) {
    const int C = j->C;
    float *dw = j->dw;
    for (int i = 0; i < j->N; i++) {
        const float *x = j->inp + (long)i * C, *d = j->dout + (long)i * C;
        float r = j->saved_rstd[i];
        for (int c = c0; c < c1; c++) dw[c] += d[c] * x[c] * r;
    }
}
