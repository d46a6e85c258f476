/* safetensors.c - Hugging Face's safetensors: u64 header length N, N bytes of JSON
 * ({name: {dtype, shape, data_offsets}}, "__metadata__": {string: string}), then the
 * tensors' bytes. GPT-2-style models go under HF's GPT-2 names, whose Conv1D weights
 * are stored (in, out): the transpose of our (out, in). andrea's names and config
 * (in __metadata__) carry every architecture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/tensor_io.h"
#include "formats/fmt.h"
#include "formats/st_header.h"
#include "util/error.h"
#include "util/le.h"

#define ST_MAX_HEADER (100u << 20) /* the reference implementation's limit */

static int hf_names_fit(const andrea_config *c) {
    return c->norm == ANDREA_NORM_LAYER && c->act == ANDREA_ACT_GELU && c->bias == 1;
}

static void put_meta_config(andrea_wbuf *w, const andrea_config *c, int names,
                            const andrea_tokenizer *tok) {
    char buf[1024];
    snprintf(buf, sizeof buf,
             "\"__metadata__\":{\"format\":\"pt\",\"andrea.names\":\"%s\",\"andrea.n_layer\":\"%d\","
             "\"andrea.n_head\":\"%d\",\"andrea.d_model\":\"%d\",\"andrea.ctx\":\"%d\","
             "\"andrea.vocab\":\"%d\",\"andrea.norm\":\"%s\",\"andrea.act\":\"%s\","
             "\"andrea.bias\":\"%d\",\"andrea.tied\":\"%d\",\"andrea.norm_eps\":\"%.9g\","
             "\"andrea.init_std\":\"%.9g\"",
             names == ANDREA_NAMES_HF ? "hf" : "andrea", c->n_layer, c->n_head, c->d_model, c->ctx,
             c->vocab, andrea_norm_name(c->norm), andrea_act_name(c->act), c->bias, c->tied,
             (double)c->norm_eps, (double)c->init_std);
    andrea_wb_str(w, buf);
    if (tok) {
        snprintf(buf, sizeof buf, ",\"andrea.tokenizer\":\"%s\",\"andrea.tokenizer_checksum\":\"%016llx\"",
                 andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)),
                 (unsigned long long)andrea_tokenizer_checksum(tok));
        andrea_wb_str(w, buf);
    }
    andrea_wb_str(w, "}");
}

/* The file's name, shape (ndim, dims) and transpose flag of one of our tensors. */
static int st_name(const andrea_tensor_info *t, int names, const char *prefix, char *out,
                   size_t n, int *ndim, int64_t dims[2], int *transposed) {
    *transposed = 0;
    if (names == ANDREA_NAMES_HF) {
        char base[96];
        if (andrea_fmt_foreign_name(t->name, ANDREA_SCHEME_HF, base, sizeof base, transposed))
            return andrea_set_error("tensor '%s' has no Hugging Face GPT-2 name", t->name);
        /* lm_head lives outside the transformer prefix in GPT2LMHeadModel */
        snprintf(out, n, "%s%s", strcmp(t->name, "lm_head") == 0 ? "" : prefix, base);
    } else {
        snprintf(out, n, "%s", t->name);
    }
    *ndim = t->cols ? 2 : 1;
    dims[0] = *transposed ? t->cols : t->rows;
    dims[1] = *transposed ? t->rows : t->cols;
    return 0;
}



int andrea_safetensors_save(const char *path, const andrea_model *m, const andrea_tokenizer *tok,
                            int names) {
    const andrea_config *c = &m->cfg;
    if (names == ANDREA_NAMES_AUTO) names = hf_names_fit(c) ? ANDREA_NAMES_HF : ANDREA_NAMES_ANDREA;
    if (names == ANDREA_NAMES_HF && !hf_names_fit(c))
        return andrea_set_error("'%s': Hugging Face GPT-2 names need LayerNorm, GELU and biases; this "
                                "model has %s, %s, bias %d (use andrea names)", path,
                                andrea_norm_name(c->norm), andrea_act_name(c->act), c->bias);
    andrea_wbuf h = {0}, w = {0};
    andrea_wb_str(&h, "{");
    put_meta_config(&h, c, names, tok);
    uint64_t off = 0;
    for (int i = 0; i < m->layout.n; i++) {
        const andrea_tensor_info *t = &m->layout.t[i];
        char name[128], buf[512];
        int ndim = 0, tr = 0;
        int64_t dims[2] = {0, 0};
        if (st_name(t, names, "", name, sizeof name, &ndim, dims, &tr)) return -1;
        uint64_t bytes = 4 * (uint64_t)t->size;
        if (ndim == 2)
            snprintf(buf, sizeof buf, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld],"
                     "\"data_offsets\":[%llu,%llu]}", name, (long long)dims[0], (long long)dims[1],
                     (unsigned long long)off, (unsigned long long)(off + bytes));
        else
            snprintf(buf, sizeof buf, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld],"
                     "\"data_offsets\":[%llu,%llu]}", name, (long long)dims[0],
                     (unsigned long long)off, (unsigned long long)(off + bytes));
        andrea_wb_str(&h, buf);
        off += bytes;
    }
    andrea_wb_str(&h, "}");
    while (h.n % 8) andrea_wb_str(&h, " "); /* tensors start 8-byte aligned */
    andrea_wb_u64(&w, h.n);
    andrea_wb_put(&w, h.p, h.n);
    float *stage = NULL; /* one tensor at a time, on a backend with its own memory */
    size_t stage_n = 0;
    for (int i = 0; !w.oom && i < m->layout.n; i++) {
        const andrea_tensor_info *t = &m->layout.t[i];
        char name[128];
        int ndim = 0, tr = 0;
        int64_t dims[2] = {0, 0};
        st_name(t, names, "", name, sizeof name, &ndim, dims, &tr);
        const float *src = andrea_tio_view(m->be, m->params + t->offset, (size_t)t->size, &stage,
                                           &stage_n);
        if (!src) {
            w.oom = 1;
            break;
        }
        /* (rows, cols) row-major -> (cols, rows) for HF's Conv1D */
        for (int64_t r = 0; r < (tr ? t->cols : t->size); r++) {
            if (!tr) {
                andrea_wb_f32(&w, src[r]);
                continue;
            }
            for (int64_t k = 0; k < t->rows; k++) andrea_wb_f32(&w, src[k * t->cols + r]);
        }
    }
    free(stage);
    int rc = andrea_wb_save(&w, path);
    andrea_wb_free(&h);
    andrea_wb_free(&w);
    if (!rc && tok) rc = andrea_st_write_tokenizer_files(path, tok);
    return rc;
}

/* ---- reading --------------------------------------------------------------------------- */

typedef struct {
    const andrea_st_header *h;
    const uint8_t *data;
    int names;
    const char *prefix;
    const char *what;
    int native; /* the matrices' common 16-bit type, andrea_fmt_native_merge's */
} st_ctx;

static int st_fill(void *vctx, const andrea_tensor_info *t, float *dst) {
    st_ctx *x = vctx;
    char name[160];
    int ndim = 0, tr = 0;
    int64_t dims[2] = {0, 0};
    if (st_name(t, x->names, x->prefix, name, sizeof name, &ndim, dims, &tr)) return -1;
    const andrea_st_tensor *s = andrea_st_find(x->h, name);
    if (!s) return andrea_set_error("%s: no tensor '%s'", x->what, name);
    int ok = s->ndim == ndim && s->shape[0] == dims[0] && (ndim == 1 || s->shape[1] == dims[1]);
    if (!ok)
        return andrea_set_error("%s: tensor '%s' has shape [%lld%s...], the config needs [%lld, %lld]",
                                x->what, name, (long long)(s->ndim ? s->shape[0] : -1),
                                s->ndim > 1 ? ", " : "", (long long)dims[0],
                                (long long)(ndim == 2 ? dims[1] : 0));
    const uint8_t *p = x->data + s->begin;
    int esz = s->dtype == ANDREA_ST_F32 ? 4 : 2;
    for (int64_t i = 0; i < t->size; i++) {
        /* element i of the file tensor lands at dst[i] or, transposed, at dst[(i % R) * C + i / R] */
        const uint8_t *e = p + (size_t)i * (size_t)esz;
        float v = s->dtype == ANDREA_ST_F32 ? get_f32(e)
                  : s->dtype == ANDREA_ST_F16 ? andrea_f16_to_f32((uint16_t)(e[0] | e[1] << 8))
                                              : andrea_bf16_to_f32((uint16_t)(e[0] | e[1] << 8));
        if (tr) dst[(i % t->rows) * t->cols + i / t->rows] = v;
        else dst[i] = v;
    }
    if (t->cols) /* f16 and bf16 matrices decode in their own 16 bits, each value exact */
        x->native = andrea_fmt_native_merge(x->native, s->dtype == ANDREA_ST_F16    ? ANDREA_QUANT_F16
                                                       : s->dtype == ANDREA_ST_BF16 ? ANDREA_QUANT_BF16
                                                                                    : ANDREA_QUANT_NONE);
    return 0;
}

static int meta_int(const andrea_st_header *h, const char *key, int32_t *out, const char *what) {
    const char *v = andrea_st_meta_get(h, key);
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *v == 0 || *end || x < 0 || x > (1L << 30))
        return andrea_set_error("%s: __metadata__ '%s' missing or not a size", what, key);
    *out = (int32_t)x;
    return 0;
}

static int meta_config(const andrea_st_header *h, andrea_config *c, const char *what) {
    const char *norm = andrea_st_meta_get(h, "andrea.norm"), *act = andrea_st_meta_get(h, "andrea.act");
    const char *eps = andrea_st_meta_get(h, "andrea.norm_eps"), *std = andrea_st_meta_get(h, "andrea.init_std");
    if (meta_int(h, "andrea.n_layer", &c->n_layer, what) || meta_int(h, "andrea.n_head", &c->n_head, what) ||
        meta_int(h, "andrea.d_model", &c->d_model, what) || meta_int(h, "andrea.ctx", &c->ctx, what) ||
        meta_int(h, "andrea.vocab", &c->vocab, what) || meta_int(h, "andrea.bias", &c->bias, what) ||
        meta_int(h, "andrea.tied", &c->tied, what))
        return -1;
    if (!norm || !act || !eps || !std)
        return andrea_set_error("%s: __metadata__ lacks andrea.norm, act, norm_eps or init_std", what);
    if (andrea_norm_parse(norm, &c->norm) || andrea_act_parse(act, &c->act)) {
        char pn[84], pa[84];
        return andrea_set_error("%s: __metadata__: unknown norm '%s' or activation '%s'", what,
                                andrea_fmt_printable(norm, strlen(norm), pn),
                                andrea_fmt_printable(act, strlen(act), pa));
    }
    c->norm_eps = strtof(eps, NULL);
    c->init_std = strtof(std, NULL);
    return 0;
}

/* A Hugging Face GPT-2 file without our metadata: the shapes give V, C, T and L. */
static int hf_config(const andrea_st_header *h, const char *prefix, int n_head, float eps,
                     andrea_config *c, const char *what) {
    char name[160];
    snprintf(name, sizeof name, "%swte.weight", prefix);
    const andrea_st_tensor *wte = andrea_st_find(h, name);
    snprintf(name, sizeof name, "%swpe.weight", prefix);
    const andrea_st_tensor *wpe = andrea_st_find(h, name);
    if (!wte || !wpe || wte->ndim != 2 || wpe->ndim != 2 || wte->shape[0] > (1 << 24) ||
        wte->shape[1] > 65536 || wpe->shape[0] > (1 << 20))
        return andrea_set_error("%s: no andrea metadata and no usable GPT-2 wte/wpe tensors", what);
    memset(c, 0, sizeof *c);
    c->vocab = (int32_t)wte->shape[0];
    c->d_model = (int32_t)wte->shape[1];
    c->ctx = (int32_t)wpe->shape[0];
    for (c->n_layer = 0; c->n_layer < 4096; c->n_layer++) {
        snprintf(name, sizeof name, "%sh.%d.ln_1.weight", prefix, c->n_layer);
        if (!andrea_st_find(h, name)) break;
    }
    c->n_head = n_head > 0 ? n_head : c->d_model % 64 == 0 ? c->d_model / 64 : 0;
    if (c->n_head <= 0)
        return andrea_set_error("%s: n_head unknown (d_model %d is not a multiple of 64); put "
                                "config.json with \"n_head\" beside the file", what, c->d_model);
    c->norm = ANDREA_NORM_LAYER;
    c->act = ANDREA_ACT_GELU;
    c->bias = 1;
    c->tied = andrea_st_find(h, "lm_head.weight") == NULL;
    c->norm_eps = eps > 0 ? eps : 1e-5f;
    c->init_std = 0.02f;
    return 0;
}

typedef struct {
    uint64_t begin, end;
    const char *name;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Every tensor inside the data section, no two overlapping. */
static int check_spans(const andrea_st_header *h, uint64_t dlen, const char *what) {
    char pr[84], pr2[84];
    span *s = malloc(((size_t)h->nt + 1) * sizeof *s);
    if (!s) return andrea_set_error("out of memory (%s)", what);
    int rc = 0;
    for (int i = 0; i < h->nt && !rc; i++) {
        s[i] = (span){h->t[i].begin, h->t[i].end, h->t[i].name};
        if (h->t[i].end > dlen)
            rc = andrea_set_error("%s: tensor '%s' ends at byte %llu of a %llu-byte data section "
                                  "(outside the file)", what,
                                  andrea_fmt_printable(h->t[i].name, strlen(h->t[i].name), pr),
                                  (unsigned long long)h->t[i].end, (unsigned long long)dlen);
    }
    if (!rc) qsort(s, (size_t)h->nt, sizeof *s, cmp_span);
    for (int i = 1; i < h->nt && !rc; i++)
        if (s[i].begin < s[i - 1].end)
            rc = andrea_set_error("%s: tensors '%s' and '%s' overlap", what,
                                  andrea_fmt_printable(s[i - 1].name, strlen(s[i - 1].name), pr),
                                  andrea_fmt_printable(s[i].name, strlen(s[i].name), pr2));
    free(s);
    return rc;
}

andrea_model *andrea_safetensors_parse(const void *buf, size_t n, const char *what, int n_head,
                                       float norm_eps) {
    const uint8_t *p = buf;
    if (n < 8) return andrea_set_error("%s: %zu bytes, too short for a safetensors file", what, n), NULL;
    uint64_t hlen = get_u64(p);
    if (hlen > n - 8)
        return andrea_set_error("%s: header length %llu goes beyond the file (%zu bytes)", what,
                                (unsigned long long)hlen, n), NULL;
    if (hlen > ST_MAX_HEADER || hlen < 2)
        return andrea_set_error("%s: header length %llu is absurd", what, (unsigned long long)hlen), NULL;
    andrea_st_header h;
    if (andrea_st_header_parse(p + 8, (size_t)hlen, &h, what)) return NULL;
    andrea_model *m = NULL;
    if (check_spans(&h, n - 8 - hlen, what)) goto done;
    andrea_config cfg;
    st_ctx x = {&h, p + 8 + hlen, ANDREA_NAMES_ANDREA, "", what, -1};
    if (andrea_st_meta_get(&h, "andrea.n_layer")) {
        if (meta_config(&h, &cfg, what)) goto done;
        const char *nm = andrea_st_meta_get(&h, "andrea.names");
        x.names = nm && strcmp(nm, "hf") == 0 ? ANDREA_NAMES_HF : ANDREA_NAMES_ANDREA;
    } else {
        x.names = ANDREA_NAMES_HF;
        x.prefix = andrea_st_find(&h, "transformer.wte.weight") ? "transformer." : "";
        if (hf_config(&h, x.prefix, n_head, norm_eps, &cfg, what)) goto done;
    }
    m = andrea_fmt_build(&cfg, st_fill, &x, what, n);
    if (m) m->native_quant = x.native < 0 ? ANDREA_QUANT_NONE : x.native;
done:
    andrea_st_header_free(&h);
    return m;
}
