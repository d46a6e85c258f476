/*
 * andrea_flat.c - ANDREA's own checkpoint (spec §1.8, §4.6): little-endian
 *     int32 step, int32 n_params, float32 weights[n_params], m[n_params], v[n_params]
 * (a file of weights only, 8 + 4 n bytes, is read too: its moments are zeros). The
 * parameter order is ANDREA's iterator: wte (V, C), wpe (T, C), then per layer
 * Wq Wk Wv (C, C each; andrea's fused attn.wqkv (3C, C) holds them in that order),
 * Wo (C, C), fc1 (4C, C), fc2 (C, 4C), then lm_head (V, C); rows [out][in].
 *
 * The file has no norm parameters (12,780,288 for ANDREA-12M = no gains), andrea's
 * RMSNorms have a gain. Reading sets the gains to 1 (moments 0); writing folds each
 * gain into the matrix that reads the normalised vector (ln1 -> Wqkv columns, ln2 ->
 * fc1 columns, final norm -> lm_head columns), which computes the same function; the
 * moments of those matrices are written as they are. info->max_gain_dev says how far
 * from 1 the folded gains were (0: the export is exact, moments included).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tensor_io.h"
#include "formats/fmt.h"
#include "util/error.h"
#include "util/file.h"
#include "util/le.h"

#define FLAT_HEADER 8

static const andrea_tensor_info *tensor(const andrea_model *m, const char *name) {
    for (int i = 0; i < m->layout.n; i++)
        if (strcmp(m->layout.t[i].name, name) == 0) return &m->layout.t[i];
    return NULL;
}

/* The flat file's tensors in its order; returns their number (at most cap). */
static int flat_order(const andrea_model *m, const andrea_tensor_info **out, int cap) {
    static const char *const LAYER[] = {"attn.wqkv", "attn.wo", "mlp.wfc", "mlp.wproj"};
    int n = 0;
    out[n++] = tensor(m, "wte");
    out[n++] = tensor(m, "wpe");
    for (int l = 0; l < m->cfg.n_layer && n + 4 < cap; l++)
        for (int k = 0; k < 4; k++) {
            char name[48];
            snprintf(name, sizeof name, "h.%d.%s", l, LAYER[k]);
            out[n++] = tensor(m, name);
        }
    out[n++] = tensor(m, "lm_head");
    return n;
}

static int check_arch(const andrea_config *c) {
    if (c->bias || c->tied || c->norm != ANDREA_NORM_RMS)
        return andrea_set_error("ANDREA's flat checkpoint holds ANDREA's architecture only "
                                "(RMSNorm, no biases, untied head); this model has %s, bias %d, "
                                "tied %d", andrea_norm_name(c->norm), c->bias, c->tied);
    return 0;
}

int64_t andrea_flat_num_params(const andrea_config *c) {
    if (check_arch(c)) return -1;
    int64_t C = c->d_model, V = c->vocab, T = c->ctx, L = c->n_layer;
    return 2 * V * C + T * C + 12 * L * C * C;
}

int andrea_flat_guess_config(int64_t n_params, int32_t vocab, andrea_config *out) {
    static const char *const PRESETS[] = {"andrea-12m", "andrea-120m", "andrea-480m"};
    for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++) {
        andrea_config c;
        if (andrea_config_preset(PRESETS[i], &c)) return -1;
        c.vocab = vocab;
        if (andrea_flat_num_params(&c) == n_params) return *out = c, 0;
    }
    return andrea_set_error("%lld parameters with V = %d is none of ANDREA's shapes (12M, 120M, "
                            "480M at T = 1024); give the shape (--preset, --n-layer, --d-model, "
                            "--ctx ...)", (long long)n_params, vocab);
}

int andrea_flat_peek(const char *path, andrea_flat_info *info) {
    memset(info, 0, sizeof *info);
    uint64_t fsize = 0; /* a regular file only: never a FIFO or a device */
    FILE *f = andrea_file_fopen_regular(path, "ANDREA flat checkpoint", 0, &fsize);
    if (!f) return -1;
    uint8_t h[FLAT_HEADER];
    int ok = fread(h, 1, sizeof h, f) == sizeof h && fseek(f, 0, SEEK_END) == 0;
    long size = ok ? ftell(f) : -1;
    fclose(f);
    if (!ok || size < 0) return andrea_set_error("'%s': not an ANDREA flat checkpoint (too short)", path);
    info->step = (int32_t)get_u32(h);
    int32_t n = (int32_t)get_u32(h + 4);
    info->n_params = n;
    uint64_t w = FLAT_HEADER + 4 * (uint64_t)(n > 0 ? n : 0);
    uint64_t full = FLAT_HEADER + 12 * (uint64_t)(n > 0 ? n : 0);
    if (n <= 0 || info->step < 0 || ((uint64_t)size != full && (uint64_t)size != w))
        return andrea_set_error("'%s': not an ANDREA flat checkpoint (step %d, n_params %d: "
                                "expected %llu or %llu bytes, the file has %ld)", path, info->step,
                                n, (unsigned long long)full, (unsigned long long)w, size);
    info->has_moments = (uint64_t)size == full;
    return 0;
}

/* Copies the file's floats (from p, n_params of them) into dst under the layout. */
static void scatter(const andrea_model *m, const uint8_t *p, float *dst) {
    const andrea_tensor_info *ts[3 + 4 * 256];
    int nt = flat_order(m, ts, (int)(sizeof ts / sizeof ts[0]));
    int64_t at = 0;
    for (int k = 0; k < nt; k++)
        for (int64_t i = 0; i < ts[k]->size; i++, at++) dst[ts[k]->offset + i] = get_f32(p + 4 * at);
}

andrea_model *andrea_flat_load(const char *path, const andrea_config *cfg, float **adam_m,
                               float **adam_v, andrea_flat_info *info) {
    if (adam_m) *adam_m = NULL;
    if (adam_v) *adam_v = NULL;
    if (andrea_flat_peek(path, info)) return NULL;
    int64_t want = andrea_flat_num_params(cfg);
    if (want < 0) return NULL;
    if (want != info->n_params)
        return andrea_set_error("'%s' holds %lld parameters; the shape given (L %d, C %d, T %d, "
                                "V %d) has %lld", path, (long long)info->n_params, cfg->n_layer,
                                cfg->d_model, cfg->ctx, cfg->vocab, (long long)want), NULL;
    uint8_t *data = NULL;
    size_t n = 0;
    if (andrea_fmt_slurp(path, &data, &n)) return NULL;
    andrea_model *m = andrea_model_create_on(cfg, 0, "cpu"); /* filled in place, then moved */
    int64_t total = m ? m->layout.total : 0;
    float *mm = NULL, *vv = NULL;
    if (m && adam_m && adam_v) {
        mm = calloc((size_t)total, sizeof *mm);
        vv = calloc((size_t)total, sizeof *vv);
    }
    if (!m || (adam_m && adam_v && (!mm || !vv))) {
        free(data), free(mm), free(vv);
        andrea_model_free(m);
        return andrea_set_error("out of memory loading '%s'", path), NULL;
    }
    for (int i = 0; i < m->layout.n; i++) /* the gains ANDREA does not have */
        if (m->layout.group[i] == GROUP_NORM)
            for (int64_t k = 0; k < m->layout.t[i].size; k++) m->params[m->layout.t[i].offset + k] = 1.0f;
    const uint8_t *p = data + FLAT_HEADER;
    scatter(m, p, m->params);
    if (mm && info->has_moments) {
        scatter(m, p + 4 * (size_t)info->n_params, mm);
        scatter(m, p + 8 * (size_t)info->n_params, vv);
    }
    free(data);
    if (andrea_model_move(m, NULL, mm ? &mm : NULL, vv ? &vv : NULL)) {
        free(mm), free(vv);
        andrea_model_free(m);
        return NULL;
    }
    if (adam_m && adam_v) *adam_m = mm, *adam_v = vv;
    return m;
}

/* Writes the floats of src under the flat order; a folded tensor's columns are scaled
 * by the gain (fold: the gain per column, NULL: none). */
static void gather(andrea_wbuf *w, const andrea_model *m, const float *params, const float *src,
                   int fold) {
    const andrea_tensor_info *ts[3 + 4 * 256];
    int nt = flat_order(m, ts, (int)(sizeof ts / sizeof ts[0]));
    for (int k = 0; k < nt; k++) {
        const float *g = NULL; /* the gain of the norm that feeds this matrix */
        if (fold) {
            const char *name = ts[k]->name, *dot = strrchr(name, '.');
            char gname[48];
            if (strcmp(name, "lm_head") == 0) snprintf(gname, sizeof gname, "lnf.w");
            else if (dot && strcmp(dot, ".wqkv") == 0)
                snprintf(gname, sizeof gname, "%.*sln1.w", (int)(strchr(name + 2, '.') - name + 1), name);
            else if (dot && strcmp(dot, ".wfc") == 0)
                snprintf(gname, sizeof gname, "%.*sln2.w", (int)(strchr(name + 2, '.') - name + 1), name);
            else gname[0] = '\0';
            const andrea_tensor_info *gt = gname[0] ? tensor(m, gname) : NULL;
            if (gt) g = params + gt->offset;
        }
        const float *t = src + ts[k]->offset;
        int64_t cols = ts[k]->cols;
        for (int64_t i = 0; i < ts[k]->size; i++) andrea_wb_f32(w, g ? t[i] * g[i % cols] : t[i]);
    }
}

static int write_flat(const char *path, const andrea_model *m, const float *params,
                      const float *adam_m, const float *adam_v, int32_t step, int64_t n,
                      andrea_flat_info *info);

int andrea_flat_save(const char *path, const andrea_model *m, const float *adam_m,
                     const float *adam_v, int32_t step, andrea_flat_info *info) {
    memset(info, 0, sizeof *info);
    int64_t n = andrea_flat_num_params(&m->cfg);
    if (n < 0) return -1;
    if (n > INT32_MAX) return andrea_set_error("%lld parameters do not fit the flat file's int32", (long long)n);
    size_t total = (size_t)m->layout.total;
    float *cp = NULL, *cm = NULL, *cv = NULL; /* host copies (a backend with its own memory) */
    const float *params = andrea_tio_host(m->be, m->params, total, &cp);
    if (adam_m && adam_v) {
        adam_m = andrea_tio_host(m->be, adam_m, total, &cm);
        adam_v = andrea_tio_host(m->be, adam_v, total, &cv);
    }
    int rc = write_flat(path, m, params, adam_m, adam_v, step, n, info);
    free(cp), free(cm), free(cv);
    return rc;
}

static int write_flat(const char *path, const andrea_model *m, const float *params,
                      const float *adam_m, const float *adam_v, int32_t step, int64_t n,
                      andrea_flat_info *info) {
    if (!params) return -1;
    for (int i = 0; i < m->layout.n; i++)
        if (m->layout.group[i] == GROUP_NORM)
            for (int64_t k = 0; k < m->layout.t[i].size; k++) {
                float d = fabsf(params[m->layout.t[i].offset + k] - 1.0f);
                if (d > info->max_gain_dev) info->max_gain_dev = d;
            }
    andrea_wbuf w = {0};
    andrea_wb_u32(&w, (uint32_t)step);
    andrea_wb_u32(&w, (uint32_t)n);
    gather(&w, m, params, params, info->max_gain_dev > 0);
    if (adam_m && adam_v) {
        gather(&w, m, params, adam_m, 0);
        gather(&w, m, params, adam_v, 0);
    } else {
        andrea_wb_zeros(&w, 8 * (size_t)n);
    }
    int rc = w.oom ? andrea_set_error("out of memory writing '%s'", path) : andrea_wb_save(&w, path);
    andrea_wb_free(&w);
    info->step = step;
    info->n_params = n;
    info->has_moments = adam_m && adam_v;
    return rc;
}
