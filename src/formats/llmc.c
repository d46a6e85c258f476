/* llmc.c - llm.c's checkpoint (train_gpt2.c, gpt2_124M.bin): 256 int32 header
 * [20240326, version, maxT, V, L, NH, C, Vp, 0...], then the parameters as 16
 * tensors, each covering all layers, in this order:
 *   wte (Vp, C)  wpe (maxT, C)  ln1w (L, C)  ln1b (L, C)  qkvw (L, 3C, C)  qkvb (L, 3C)
 *   attprojw (L, C, C)  attprojb (L, C)  ln2w (L, C)  ln2b (L, C)  fcw (L, 4C, C)
 *   fcb (L, 4C)  fcprojw (L, C, 4C)  fcprojb (L, C)  lnfw (C)  lnfb (C)
 * Version 3 stores f32, version 5 bf16. Vp is V padded to a multiple of 128 (the
 * padded rows of wte are zeros and never read). Only GPT-2's architecture fits:
 * LayerNorm with bias, GELU, biases, tied head, epsilon 1e-5. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tensor_io.h"
#include "formats/fmt.h"
#include "util/error.h"
#include "util/le.h"

#define LLMC_MAGIC 20240326
#define LLMC_HEADER 256

/* Per llm.c tensor: our per-layer name suffix (NULL: wte/wpe/lnf), rows and cols in C units. */
typedef struct {
    const char *ours; /* "ln1.w" for layer tensors, "wte" etc. for the others */
    int per_layer;
} llmc_tensor;

static const llmc_tensor ORDER[16] = {
    {"wte", 0},       {"wpe", 0},       {"ln1.w", 1},    {"ln1.b", 1},
    {"attn.wqkv", 1}, {"attn.bqkv", 1}, {"attn.wo", 1},  {"attn.bo", 1},
    {"ln2.w", 1},     {"ln2.b", 1},     {"mlp.wfc", 1},  {"mlp.bfc", 1},
    {"mlp.wproj", 1}, {"mlp.bproj", 1}, {"lnf.w", 0},    {"lnf.b", 0},
};

static const andrea_tensor_info *find_tensor(const andrea_model *m, const char *name) {
    for (int i = 0; i < m->layout.n; i++)
        if (strcmp(m->layout.t[i].name, name) == 0) return &m->layout.t[i];
    return NULL;
}

/* Calls visit(ctx, our tensor, index of its first float in llm.c's stream, floats). */
typedef void (*visit_fn)(void *ctx, const andrea_tensor_info *t, int64_t pos, int64_t n);
static int64_t walk(const andrea_model *m, int Vp, visit_fn visit, void *ctx) {
    int64_t pos = 0;
    const andrea_config *c = &m->cfg;
    for (int k = 0; k < 16; k++) {
        for (int l = 0; l < (ORDER[k].per_layer ? c->n_layer : 1); l++) {
            char name[48];
            if (ORDER[k].per_layer) snprintf(name, sizeof name, "h.%d.%s", l, ORDER[k].ours);
            else snprintf(name, sizeof name, "%s", ORDER[k].ours);
            const andrea_tensor_info *t = find_tensor(m, name);
            if (visit) visit(ctx, t, pos, t->size);
            pos += t->size;
            if (k == 0) pos += (int64_t)(Vp - c->vocab) * c->d_model; /* padded rows */
        }
    }
    return pos;
}

typedef struct {
    const andrea_model *m;
    uint8_t *out;      /* writing */
    const uint8_t *in; /* reading */
    float *params;     /* reading: the host model's */
    int bf16;
    float *stage;      /* writing: one tensor as host memory (a backend with its own) */
    size_t stage_n;
    int oom;
} llmc_io;

static void put_tensor(void *vctx, const andrea_tensor_info *t, int64_t pos, int64_t n) {
    llmc_io *x = vctx;
    const float *h = andrea_tio_view(x->m->be, x->m->params + t->offset, (size_t)n, &x->stage,
                                     &x->stage_n);
    if (!h) {
        x->oom = 1;
        return;
    }
    for (int64_t i = 0; i < n; i++) put_f32(x->out + 4 * (pos + i), h[i]);
}

static void get_tensor(void *vctx, const andrea_tensor_info *t, int64_t pos, int64_t n) {
    llmc_io *x = vctx;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *e = x->in + (x->bf16 ? 2 : 4) * (pos + i);
        x->params[t->offset + i] = x->bf16 ? andrea_bf16_to_f32((uint16_t)(e[0] | e[1] << 8)) : get_f32(e);
    }
}

static int check_arch(const andrea_config *c, const char *path) {
    if (andrea_fmt_is_gpt2(c) && c->norm_eps == 1e-5f) return 0;
    return andrea_set_error("'%s': llm.c's format holds only GPT-2's architecture (layernorm, gelu, "
                            "bias 1, tied 1, eps 1e-5); this model is %s, %s, bias %d, tied %d: "
                            "use safetensors", path, andrea_norm_name(c->norm),
                            andrea_act_name(c->act), c->bias, c->tied);
}

int andrea_llmc_save(const char *path, const andrea_model *m) {
    const andrea_config *c = &m->cfg;
    if (check_arch(c, path)) return -1;
    int Vp = (c->vocab + 127) / 128 * 128;
    int64_t n = walk(m, Vp, NULL, NULL);
    andrea_wbuf w = {0};
    int32_t h[LLMC_HEADER] = {LLMC_MAGIC, 3, c->ctx, c->vocab, c->n_layer, c->n_head, c->d_model, Vp};
    for (int i = 0; i < LLMC_HEADER; i++) andrea_wb_u32(&w, (uint32_t)h[i]);
    size_t start = w.n;
    andrea_wb_zeros(&w, (size_t)n * 4);
    if (!w.oom) {
        llmc_io x = {m, w.p + start, NULL, NULL, 0, NULL, 0, 0};
        walk(m, Vp, put_tensor, &x);
        free(x.stage);
        if (x.oom) w.oom = 1;
    }
    int rc = andrea_wb_save(&w, path);
    andrea_wb_free(&w);
    return rc;
}

andrea_model *andrea_llmc_parse(const void *buf, size_t n, const char *what) {
    const uint8_t *p = buf;
    if (n < 4 * LLMC_HEADER)
        return andrea_set_error("%s: %zu bytes, too short for llm.c's 1024-byte header", what, n), NULL;
    int32_t h[8];
    for (int i = 0; i < 8; i++) h[i] = (int32_t)get_u32(p + 4 * i);
    if (h[0] != LLMC_MAGIC) return andrea_set_error("%s: not an llm.c checkpoint (bad magic)", what), NULL;
    if (h[1] != 3 && h[1] != 5)
        return andrea_set_error("%s: llm.c version %d; this reader takes 3 (f32) and 5 (bf16)", what,
                                h[1]), NULL;
    int32_t T = h[2], V = h[3], L = h[4], NH = h[5], C = h[6], Vp = h[7];
    if (V <= 0 || Vp < V || Vp > (1 << 24))
        return andrea_set_error("%s: padded vocabulary %d is smaller than the vocabulary %d or absurd",
                                what, Vp, V), NULL;
    andrea_config cfg = {L, NH, C, T, V, ANDREA_NORM_LAYER, ANDREA_ACT_GELU, 1, 1, 1e-5f, 0.02f};
    if (andrea_config_validate(&cfg)) {
        return andrea_set_error("%s: %s", what, andrea_error()), NULL;
    }
    /* the file must be exactly header + parameters: check before allocating anything big */
    andrea_param_counts pc = andrea_config_param_counts(&cfg);
    int esz = h[1] == 3 ? 4 : 2;
    uint64_t floats = (uint64_t)pc.total + (uint64_t)(Vp - V) * (uint64_t)C;
    if (floats > (n - 4 * LLMC_HEADER) / (uint64_t)esz || 4 * LLMC_HEADER + floats * (uint64_t)esz != n)
        return andrea_set_error("%s: %zu bytes, but its header (L %d, C %d, V %d, Vp %d, T %d) needs "
                                "%llu", what, n, L, C, V, Vp, T,
                                (unsigned long long)(4 * LLMC_HEADER + floats * (uint64_t)esz)), NULL;
    andrea_model *m = andrea_model_alloc_on(&cfg, &andrea_backend_cpu); /* filled in place */
    if (!m) return NULL;
    llmc_io x = {m, NULL, p + 4 * LLMC_HEADER, m->params, esz == 2, NULL, 0, 0};
    walk(m, Vp, get_tensor, &x);
    m->native_quant = esz == 2 ? ANDREA_QUANT_BF16 : ANDREA_QUANT_NONE; /* v5: bf16, each exact */
    return andrea_model_to_default(m);
}

andrea_model *andrea_llmc_load(const char *path) {
    uint8_t *d;
    size_t n;
    if (andrea_fmt_slurp(path, &d, &n)) return NULL;
    char what[4200];
    snprintf(what, sizeof what, "'%s'", path);
    andrea_model *m = andrea_llmc_parse(d, n, what);
    free(d);
    return m;
}
