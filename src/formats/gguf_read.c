/* gguf_read.c - reads a GGUF file of llama.cpp's `gpt2` architecture (ours or
 * llama.cpp's converter's): every count, length, dimension and offset is checked
 * against the file before use; tensors in f32, f16, q8_0 or q4_0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fmt.h"
#include "formats/gguf.h"
#include "backend/cpu/kernels/kernels.h"
#include "model/model.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/le.h"

typedef struct {
    const uint8_t *key;
    uint64_t key_len;
    uint32_t type, arr_type;
    uint64_t arr_n;
    const uint8_t *val; /* the value (for arrays: the first element) */
} kv_t;

typedef struct {
    const uint8_t *name;
    uint64_t name_len;
    uint32_t ndim, type;
    uint64_t ne[4], offset, bytes;
} ti_t;

typedef struct {
    andrea_rd r;
    kv_t *kv;
    uint64_t n_kv;
    ti_t *ti;
    uint64_t n_ti;
    const uint8_t *data;
    uint64_t data_len;
    /* the weight format every matrix read so far is in exactly (q8_0 or q4_0 blocks that
     * requantize to themselves), ANDREA_QUANT_NONE once one is not, -1 before the first */
    int native;
} gguf;

static const uint8_t TYPE_SIZE[ANDREA_GGUF_NTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

/* A name in the file, hashed, for finding repeats in O(n log n) (a hostile file may hold
 * millions of keys: pairwise comparison would never end). */
typedef struct {
    uint64_t hash;
    const uint8_t *s;
    uint64_t len;
} name_ref;

static int cmp_name_ref(const void *a, const void *b) {
    const name_ref *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return memcmp(x->s, y->s, (size_t)x->len);
}

/* -1 with an error naming the first name that appears twice among refs[0..n) (what: "key",
 * "tensor"), else 0. Sorts refs. */
static int refuse_repeats(const gguf *g, name_ref *refs, uint64_t n, const char *what) {
    for (uint64_t i = 0; i < n; i++)
        refs[i].hash = andrea_fnv1a64(ANDREA_HASH_INIT, refs[i].s, (size_t)refs[i].len);
    qsort(refs, (size_t)n, sizeof *refs, cmp_name_ref);
    char pr[96];
    for (uint64_t i = 1; i < n; i++)
        if (cmp_name_ref(&refs[i - 1], &refs[i]) == 0)
            return andrea_set_error("%s: %s '%s' appears twice (which one would count?)", g->r.what,
                                    what, andrea_fmt_printable(refs[i].s, (size_t)refs[i].len, pr));
    return 0;
}

static int refuse_duplicate_names(const gguf *g) {
    uint64_t n = g->n_kv > g->n_ti ? g->n_kv : g->n_ti;
    name_ref *refs = malloc((size_t)(n ? n : 1) * sizeof *refs);
    if (!refs) return andrea_set_error("out of memory (%s)", g->r.what);
    for (uint64_t i = 0; i < g->n_kv; i++)
        refs[i] = (name_ref){0, g->kv[i].key, g->kv[i].key_len};
    int rc = refuse_repeats(g, refs, g->n_kv, "key");
    for (uint64_t i = 0; i < g->n_ti && !rc; i++)
        refs[i] = (name_ref){0, g->ti[i].name, g->ti[i].name_len};
    if (!rc) rc = refuse_repeats(g, refs, g->n_ti, "tensor");
    free(refs);
    return rc;
}

static int rd_string(andrea_rd *r, const uint8_t **s, uint64_t *len, const char *field) {
    if (andrea_rd_u64(r, len, field)) return -1;
    return andrea_rd_bytes(r, *len > SIZE_MAX ? SIZE_MAX : (size_t)*len, s, field);
}

static int read_kv(gguf *g, kv_t *kv) {
    andrea_rd *r = &g->r;
    char pr[84];
    if (rd_string(r, &kv->key, &kv->key_len, "a key") || andrea_rd_u32(r, &kv->type, "a value type"))
        return -1;
    const uint8_t *p = NULL;
    uint32_t t = kv->type;
    uint64_t n = 1;
    if (t == ANDREA_GGUF_ARRAY) {
        if (andrea_rd_u32(r, &kv->arr_type, "an array type") || andrea_rd_u64(r, &kv->arr_n, "an array length"))
            return -1;
        t = kv->arr_type;
        n = kv->arr_n;
        if (t == ANDREA_GGUF_ARRAY)
            return andrea_set_error("%s: key '%s': arrays of arrays are not supported", r->what,
                                    andrea_fmt_printable(kv->key, (size_t)kv->key_len, pr));
    }
    if (t >= ANDREA_GGUF_NTYPES)
        return andrea_set_error("%s: key '%s': unknown value type %u", r->what,
                                andrea_fmt_printable(kv->key, (size_t)kv->key_len, pr), t);
    kv->val = r->p + r->pos;
    if (t == ANDREA_GGUF_STRING) {
        /* each string is at least its 8-byte length: a cheap bound before walking them */
        if (n > (r->n - r->pos) / 8)
            return andrea_set_error("%s: an array of %llu strings does not fit in the file", r->what,
                                    (unsigned long long)n);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t len;
            if (rd_string(r, &p, &len, "a string value")) return -1;
        }
        return 0;
    }
    if (n > (r->n - r->pos) / TYPE_SIZE[t])
        return andrea_set_error("%s: an array of %llu values does not fit in the file", r->what,
                                (unsigned long long)n);
    return andrea_rd_bytes(r, (size_t)(n * TYPE_SIZE[t]), &p, "a value");
}

static const kv_t *find_kv(const gguf *g, const char *key) {
    size_t n = strlen(key);
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key_len == n && memcmp(g->kv[i].key, key, n) == 0) return &g->kv[i];
    return NULL;
}

/* An integer kv of any integer type; -1 if missing or negative/too large. */
static int64_t kv_int(const gguf *g, const char *key) {
    const kv_t *kv = find_kv(g, key);
    if (!kv) return -1;
    const uint8_t *v = kv->val;
    switch (kv->type) {
    case ANDREA_GGUF_U32: return get_u32(v);
    case ANDREA_GGUF_I32: return (int32_t)get_u32(v);
    case ANDREA_GGUF_U64: return get_u64(v) > INT32_MAX ? -1 : (int64_t)get_u64(v);
    case ANDREA_GGUF_I64: return (int64_t)get_u64(v);
    default: return -1;
    }
}

static int kv_str_eq(const kv_t *kv, const char *s) {
    if (!kv || kv->type != ANDREA_GGUF_STRING) return 0;
    uint64_t len = get_u64(kv->val);
    return len == strlen(s) && memcmp(kv->val + 8, s, (size_t)len) == 0;
}

static uint64_t tensor_bytes(uint32_t type, uint64_t n, uint64_t ne0) {
    if (type == ANDREA_GGML_F32) return 4 * n;
    if (type == ANDREA_GGML_F16) return 2 * n;
    return ne0 % 32 ? 0 : n / 32 * (type == ANDREA_GGML_Q4_0 ? ANDREA_Q4_0_BYTES : ANDREA_Q8_0_BYTES);
}

static int read_tensor_info(gguf *g, ti_t *t) {
    andrea_rd *r = &g->r;
    char pr[84];
    if (rd_string(r, &t->name, &t->name_len, "a tensor name") || andrea_rd_u32(r, &t->ndim, "n_dims"))
        return -1;
    if (t->name_len > 256 || t->ndim < 1 || t->ndim > 4)
        return andrea_set_error("%s: tensor name of %llu bytes or %u dimensions is absurd", r->what,
                                (unsigned long long)t->name_len, t->ndim);
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->ndim; d++) {
        if (andrea_rd_u64(r, &t->ne[d], "a dimension")) return -1;
        if (t->ne[d] == 0 || t->ne[d] > (1ull << 40) || n > (1ull << 40) / t->ne[d])
            return andrea_set_error("%s: tensor '%s': absurd shape", r->what,
                                    andrea_fmt_printable(t->name, (size_t)t->name_len, pr));
        n *= t->ne[d];
    }
    for (uint32_t d = t->ndim; d < 4; d++) t->ne[d] = 1;
    if (andrea_rd_u32(r, &t->type, "a tensor type") || andrea_rd_u64(r, &t->offset, "a tensor offset"))
        return -1;
    if (t->type != ANDREA_GGML_F32 && t->type != ANDREA_GGML_F16 && t->type != ANDREA_GGML_Q8_0 &&
        t->type != ANDREA_GGML_Q4_0)
        return andrea_set_error("%s: tensor '%s' has ggml type %u; this reader takes f32, f16, "
                                "q8_0 and q4_0", r->what, andrea_fmt_printable(t->name, (size_t)t->name_len, pr),
                                t->type);
    t->bytes = tensor_bytes(t->type, n, t->ne[0]);
    if (!t->bytes)
        return andrea_set_error("%s: tensor '%s': %s rows must be whole blocks of 32", r->what,
                                andrea_fmt_printable(t->name, (size_t)t->name_len, pr),
                                t->type == ANDREA_GGML_Q4_0 ? "q4_0" : "q8_0");
    return 0;
}

static int cmp_ti(const void *a, const void *b) {
    const ti_t *x = *(ti_t *const *)a, *y = *(ti_t *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Data inside the file, aligned, no two tensors overlapping. */
static int check_data(gguf *g, uint64_t align) {
    char pr[84], pr2[84];
    ti_t **s = malloc((size_t)(g->n_ti + 1) * sizeof *s);
    if (!s) return andrea_set_error("out of memory (%s)", g->r.what);
    int rc = 0;
    for (uint64_t i = 0; i < g->n_ti && !rc; i++) {
        ti_t *t = &g->ti[i];
        s[i] = t;
        if (t->offset % align || t->offset > g->data_len || t->bytes > g->data_len - t->offset)
            rc = andrea_set_error("%s: tensor '%s' at offset %llu (%llu bytes) is misaligned or "
                                  "outside the file's %llu data bytes", g->r.what,
                                  andrea_fmt_printable(t->name, (size_t)t->name_len, pr),
                                  (unsigned long long)t->offset,
                                  (unsigned long long)t->bytes, (unsigned long long)g->data_len);
    }
    if (!rc) qsort(s, (size_t)g->n_ti, sizeof *s, cmp_ti);
    for (uint64_t i = 1; i < g->n_ti && !rc; i++)
        if (s[i]->offset < s[i - 1]->offset + s[i - 1]->bytes)
            rc = andrea_set_error("%s: tensors '%s' and '%s' overlap", g->r.what,
                                  andrea_fmt_printable(s[i - 1]->name, (size_t)s[i - 1]->name_len, pr),
                                  andrea_fmt_printable(s[i]->name, (size_t)s[i]->name_len, pr2));
    free(s);
    return rc;
}

static int parse_structure(gguf *g) {
    andrea_rd *r = &g->r;
    const uint8_t *magic;
    uint32_t version;
    if (andrea_rd_bytes(r, 4, &magic, "the magic") || andrea_rd_u32(r, &version, "the version"))
        return -1;
    if (memcmp(magic, ANDREA_GGUF_MAGIC, 4) != 0) return andrea_set_error("%s: not a GGUF file", r->what);
    if (version != 2 && version != 3)
        return andrea_set_error("%s: GGUF version %u; this reader takes 2 and 3", r->what, version);
    if (andrea_rd_u64(r, &g->n_ti, "the tensor count") || andrea_rd_u64(r, &g->n_kv, "the kv count"))
        return -1;
    /* a kv takes at least 12 bytes, a tensor info at least 32: bound the counts by the file */
    if (g->n_kv > (r->n - r->pos) / 12 || g->n_ti > (r->n - r->pos) / 32)
        return andrea_set_error("%s: %llu kvs and %llu tensors cannot fit in %zu bytes", r->what,
                                (unsigned long long)g->n_kv, (unsigned long long)g->n_ti, r->n);
    g->kv = calloc((size_t)g->n_kv + 1, sizeof *g->kv);
    g->ti = calloc((size_t)g->n_ti + 1, sizeof *g->ti);
    if (!g->kv || !g->ti) return andrea_set_error("out of memory (%s)", r->what);
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (read_kv(g, &g->kv[i])) return -1;
    for (uint64_t i = 0; i < g->n_ti; i++)
        if (read_tensor_info(g, &g->ti[i])) return -1;
    if (refuse_duplicate_names(g)) return -1;
    int64_t align = find_kv(g, "general.alignment") ? kv_int(g, "general.alignment") : ANDREA_GGUF_ALIGN;
    if (align <= 0 || align > 65536 || (align & (align - 1)))
        return andrea_set_error("%s: general.alignment %lld is not a power of two", r->what, (long long)align);
    uint64_t start = (r->pos + (uint64_t)align - 1) / (uint64_t)align * (uint64_t)align;
    if (start > r->n) return andrea_set_error("%s: truncated before the tensor data", r->what);
    g->data = r->p + start;
    g->data_len = r->n - start;
    return check_data(g, (uint64_t)align);
}

static const ti_t *find_ti(const gguf *g, const char *name) {
    size_t n = strlen(name);
    for (uint64_t i = 0; i < g->n_ti; i++)
        if (g->ti[i].name_len == n && memcmp(g->ti[i].name, name, n) == 0) return &g->ti[i];
    return NULL;
}

/* Whether the n values of a q8_0 tensor (dequantised) requantize to themselves under the
 * decoding path's rule: then the q8_0 path decodes the file's own weights, exactly. */
static int q8_0_exact(const float *x, int64_t n) {
    int8_t q[ANDREA_Q8_0_BLOCK];
    for (int64_t b = 0; b < n; b += ANDREA_Q8_0_BLOCK) {
        float d = andrea_q8_0_block(x + b, q);
        for (int j = 0; j < ANDREA_Q8_0_BLOCK; j++)
            if (d * (float)q[j] != x[b + j]) return 0;
    }
    return 1;
}

/* The same for q4_0: ggml's quantizer maps each block's extreme value to q = 0 (-8 d),
 * so its blocks come back with the same d and nibbles; another writer's need not. */
static int q4_0_exact(const float *x, int64_t n) {
    uint8_t qs[ANDREA_Q4_0_BLOCK / 2];
    for (int64_t b = 0; b < n; b += ANDREA_Q4_0_BLOCK) {
        float d = andrea_q4_0_block(x + b, qs);
        for (int j = 0; j < 16; j++)
            if (d * (float)((qs[j] & 15) - 8) != x[b + j] ||
                d * (float)((qs[j] >> 4) - 8) != x[b + 16 + j])
                return 0;
    }
    return 1;
}

static int gguf_fill(void *ctx, const andrea_tensor_info *t, float *dst) {
    gguf *g = ctx;
    char name[96];
    int tr;
    if (andrea_fmt_foreign_name(t->name, ANDREA_SCHEME_GGUF, name, sizeof name, &tr))
        return andrea_set_error("%s: no GGUF name for '%s'", g->r.what, t->name);
    const ti_t *s = find_ti(g, name);
    if (!s) return andrea_set_error("%s: no tensor '%s'", g->r.what, name);
    uint64_t ne0 = (uint64_t)(t->cols ? t->cols : t->rows), ne1 = (uint64_t)(t->cols ? t->rows : 1);
    if (s->ne[0] != ne0 || s->ne[1] != ne1 || s->ne[2] != 1 || s->ne[3] != 1)
        return andrea_set_error("%s: tensor '%s' is {%llu, %llu}, the config needs {%llu, %llu}",
                                g->r.what, name, (unsigned long long)s->ne[0],
                                (unsigned long long)s->ne[1], (unsigned long long)ne0,
                                (unsigned long long)ne1);
    const uint8_t *p = g->data + s->offset;
    int blocks = s->type == ANDREA_GGML_Q8_0 || s->type == ANDREA_GGML_Q4_0;
    if (s->type == ANDREA_GGML_Q8_0) andrea_q8_0_dequantize(p, dst, t->size);
    if (s->type == ANDREA_GGML_Q4_0) andrea_q4_0_dequantize(p, dst, t->size);
    for (int64_t i = 0; !blocks && i < t->size; i++)
        dst[i] = s->type == ANDREA_GGML_F32 ? get_f32(p + 4 * i)
                                            : andrea_f16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
    if (t->cols) { /* a matrix: the file decodes in a block format only if every matrix is in it */
        int kind = s->type == ANDREA_GGML_Q8_0 && q8_0_exact(dst, t->size)   ? ANDREA_QUANT_Q8_0
                   : s->type == ANDREA_GGML_Q4_0 && q4_0_exact(dst, t->size) ? ANDREA_QUANT_Q4_0
                   : s->type == ANDREA_GGML_F16                              ? ANDREA_QUANT_F16
                                                                            : ANDREA_QUANT_NONE;
        g->native = andrea_fmt_native_merge(g->native, kind);
    }
    return 0;
}

static int gguf_config(const gguf *g, andrea_config *c) {
    const char *what = g->r.what;
    if (!kv_str_eq(find_kv(g, "general.architecture"), "gpt2"))
        return andrea_set_error("%s: general.architecture is not 'gpt2' (the only GGUF architecture "
                                "andrea computes)", what);
    int64_t T = kv_int(g, "gpt2.context_length"), C = kv_int(g, "gpt2.embedding_length");
    int64_t ff = kv_int(g, "gpt2.feed_forward_length"), L = kv_int(g, "gpt2.block_count");
    int64_t NH = kv_int(g, "gpt2.attention.head_count");
    const kv_t *eps = find_kv(g, "gpt2.attention.layer_norm_epsilon");
    const ti_t *wte = find_ti(g, "token_embd.weight");
    if (T <= 0 || C <= 0 || L <= 0 || NH <= 0 || !eps || eps->type != ANDREA_GGUF_F32 || !wte ||
        T > INT32_MAX || C > INT32_MAX || L > INT32_MAX || NH > INT32_MAX)
        return andrea_set_error("%s: gpt2 hyperparameters or token_embd.weight missing or invalid", what);
    if (ff != 4 * C)
        return andrea_set_error("%s: feed_forward_length %lld is not 4 x %lld (andrea's MLP width)",
                                what, (long long)ff, (long long)C);
    if (wte->ne[1] > INT32_MAX) return andrea_set_error("%s: absurd vocabulary", what);
    int64_t bias = find_kv(g, "andrea.bias") ? kv_int(g, "andrea.bias") : 1;
    const kv_t *std = find_kv(g, "andrea.init_std");
    *c = (andrea_config){(int32_t)L, (int32_t)NH, (int32_t)C, (int32_t)T, (int32_t)wte->ne[1],
                         ANDREA_NORM_LAYER, ANDREA_ACT_GELU, bias == 0 ? 0 : 1,
                         find_ti(g, "output.weight") == NULL, get_f32(eps->val),
                         std && std->type == ANDREA_GGUF_F32 ? get_f32(std->val) : 0.02f};
    return 0;
}

/* The tokenizer from tokenizer.ggml.* (byte-level BPE only). */
static andrea_tokenizer *gguf_tokenizer(const gguf *g, int32_t model_vocab) {
    const char *what = g->r.what;
    const kv_t *tk = find_kv(g, "tokenizer.ggml.tokens"), *mg = find_kv(g, "tokenizer.ggml.merges");
    if (!kv_str_eq(find_kv(g, "tokenizer.ggml.model"), "gpt2") || !tk || tk->type != ANDREA_GGUF_ARRAY ||
        tk->arr_type != ANDREA_GGUF_STRING || (mg && (mg->type != ANDREA_GGUF_ARRAY ||
                                                      mg->arr_type != ANDREA_GGUF_STRING)))
        return andrea_set_error("%s: no gpt2 BPE tokenizer (tokenizer.ggml.model/tokens/merges)", what), NULL;
    if (tk->arr_n < 2 || tk->arr_n > (uint64_t)model_vocab)
        return andrea_set_error("%s: %llu tokens for a model of vocabulary %d", what,
                                (unsigned long long)tk->arr_n, model_vocab), NULL;
    int32_t V = (int32_t)tk->arr_n;
    int64_t nm = mg ? (int64_t)(mg->arr_n > INT32_MAX ? INT32_MAX : mg->arr_n) : 0;
    int64_t bos = kv_int(g, "tokenizer.ggml.bos_token_id");
    const uint8_t **s = malloc(((size_t)V + (size_t)nm + 1) * sizeof *s);
    uint64_t *len = malloc(((size_t)V + (size_t)nm + 1) * sizeof *len);
    andrea_tokenizer *t = NULL;
    if (!s || !len) {
        andrea_set_error("out of memory (%s)", what);
        goto done;
    }
    /* the arrays were bounds-checked when the kvs were read: walk them again */
    const uint8_t *p = tk->val;
    for (int32_t i = 0; i < V; i++) {
        len[i] = get_u64(p);
        s[i] = p + 8;
        p += 8 + len[i];
    }
    p = mg ? mg->val : NULL;
    for (int64_t i = 0; i < nm; i++) {
        len[V + i] = get_u64(p);
        s[V + i] = p + 8;
        p += 8 + len[V + i];
    }
    const kv_t *kind_kv = find_kv(g, "andrea.tokenizer.kind");
    int kind = kv_str_eq(kind_kv, "byte") ? ANDREA_TOK_BYTE : kv_str_eq(kind_kv, "bpe") ? ANDREA_TOK_BPE
                                                                                    : ANDREA_TOK_GPT2;
    if (bos < 0 || bos >= V) {
        andrea_set_error("%s: tokenizer.ggml.bos_token_id missing or outside the vocabulary", what);
        goto done;
    }
    t = andrea_fmt_tok_from_strings(kind, V, (int32_t)bos, s, len, s + V, len + V, nm, what);
done:
    free(s);
    free(len);
    return t;
}

andrea_model *andrea_gguf_parse(const void *buf, size_t n, const char *what,
                                andrea_tokenizer **tok) {
    if (tok) *tok = NULL;
    gguf g;
    memset(&g, 0, sizeof g);
    g.r = (andrea_rd){buf, n, 0, what};
    andrea_model *m = NULL;
    andrea_config cfg;
    if (parse_structure(&g) || gguf_config(&g, &cfg)) goto done;
    g.native = -1;
    m = andrea_fmt_build(&cfg, gguf_fill, &g, what, n);
    if (m) m->native_quant = g.native < 0 ? ANDREA_QUANT_NONE : g.native;
    if (m && tok && !(*tok = gguf_tokenizer(&g, cfg.vocab))) {
        andrea_model_free(m);
        m = NULL;
    }
done:
    free(g.kv);
    free(g.ti);
    return m;
}

andrea_model *andrea_gguf_load(const char *path, andrea_tokenizer **tok) {
    uint8_t *d;
    size_t n;
    if (tok) *tok = NULL;
    if (andrea_fmt_slurp(path, &d, &n)) return NULL;
    char what[4200];
    snprintf(what, sizeof what, "'%s'", path);
    andrea_model *m = andrea_gguf_parse(d, n, what, tok);
    free(d);
    return m;
}
