/* gguf_write.c - a GGUF file llama.cpp runs: architecture `gpt2` (src/models/gpt2.cpp
 * in llama.cpp: learned positions, LayerNorm with bias, fused qkv with bias, GELU MLP,
 * optional untied output.weight), the GPT-2 BPE tokenizer in the metadata, 2-D weights
 * in f32, f16, q8_0 or q4_0 (1-D tensors stay f32, as llama.cpp's own converter keeps them).
 *
 * Layout: "GGUF", u32 version 3, u64 tensor count, u64 kv count, the kvs (key string,
 * u32 type, value), the tensor infos (name, u32 n_dims, u64 ne[] fastest first, u32
 * ggml type, u64 offset), padding to 32, the tensor data (each 32-aligned). Strings are
 * u64 length + bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tensor_io.h"
#include "formats/fmt.h"
#include "formats/gguf.h"
#include "util/error.h"

int andrea_gguf_check_arch(const andrea_config *c) {
    if (c->norm == ANDREA_NORM_LAYER && c->act == ANDREA_ACT_GELU) return 0;
    return andrea_set_error(
        "GGUF export refused: llama.cpp has no architecture computing %s + %s with learned "
        "positions (those with learned positions - gpt2, starcoder, mpt, bert - use LayerNorm + "
        "GELU; those with ReLU^2 - arcee, jais2, nemotron, nemotron-h, plm - use RoPE or none); "
        "safetensors carries this model exactly",
        andrea_norm_name(c->norm), andrea_act_name(c->act));
}

static void w_string(andrea_wbuf *w, const char *s, size_t n) {
    andrea_wb_u64(w, n);
    andrea_wb_put(w, s, n);
}

static void kv_head(andrea_wbuf *w, const char *key, uint32_t type) {
    w_string(w, key, strlen(key));
    andrea_wb_u32(w, type);
}

static void kv_u32(andrea_wbuf *w, const char *key, uint32_t v) {
    kv_head(w, key, ANDREA_GGUF_U32);
    andrea_wb_u32(w, v);
}

static void kv_f32(andrea_wbuf *w, const char *key, float v) {
    kv_head(w, key, ANDREA_GGUF_F32);
    andrea_wb_f32(w, v);
}

static void kv_str(andrea_wbuf *w, const char *key, const char *v) {
    kv_head(w, key, ANDREA_GGUF_STRING);
    w_string(w, v, strlen(v));
}

static void kv_bool(andrea_wbuf *w, const char *key, int v) {
    kv_head(w, key, ANDREA_GGUF_BOOL);
    uint8_t b = v ? 1 : 0;
    andrea_wb_put(w, &b, 1);
}

/* tokens, token types and merges; returns the number of kvs written or -1. */
static int put_tokenizer(andrea_wbuf *w, const andrea_tokenizer *tok) {
    int32_t V = andrea_tokenizer_vocab_size(tok), bos = andrea_tokenizer_bos(tok), nm, *merges;
    if (andrea_fmt_tok_merges(tok, &merges, &nm)) return -1;
    char s[1024], s2[1024];
    kv_str(w, "tokenizer.ggml.model", "gpt2");
    kv_str(w, "tokenizer.ggml.pre", "gpt-2");
    kv_head(w, "tokenizer.ggml.tokens", ANDREA_GGUF_ARRAY);
    andrea_wb_u32(w, ANDREA_GGUF_STRING);
    andrea_wb_u64(w, (uint64_t)V);
    for (int32_t i = 0; i < V; i++) {
        if (andrea_fmt_token_string(tok, i, s, sizeof s)) {
            free(merges);
            return andrea_set_error("token %d is too long for GGUF", i);
        }
        w_string(w, s, strlen(s));
    }
    kv_head(w, "tokenizer.ggml.token_type", ANDREA_GGUF_ARRAY);
    andrea_wb_u32(w, ANDREA_GGUF_I32);
    andrea_wb_u64(w, (uint64_t)V);
    for (int32_t i = 0; i < V; i++)
        andrea_wb_u32(w, i == bos ? ANDREA_GGUF_TOKEN_CONTROL : ANDREA_GGUF_TOKEN_NORMAL);
    kv_head(w, "tokenizer.ggml.merges", ANDREA_GGUF_ARRAY);
    andrea_wb_u32(w, ANDREA_GGUF_STRING);
    andrea_wb_u64(w, (uint64_t)nm);
    for (int32_t i = 0; i < nm; i++) {
        andrea_fmt_token_string(tok, merges[3 * i], s, sizeof s);
        andrea_fmt_token_string(tok, merges[3 * i + 1], s2, sizeof s2);
        size_t a = strlen(s), b = strlen(s2);
        andrea_wb_u64(w, a + 1 + b);
        andrea_wb_put(w, s, a);
        andrea_wb_put(w, " ", 1);
        andrea_wb_put(w, s2, b);
    }
    free(merges);
    /* <|endoftext|> both starts and ends GPT-2 text; llama.cpp must not add it itself */
    kv_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
    kv_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)bos);
    kv_bool(w, "tokenizer.ggml.add_bos_token", 0);
    kv_str(w, "andrea.tokenizer.kind", andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)));
    return 9;
}

typedef struct {
    char name[96];
    int ndim;
    uint64_t ne[2];      /* fastest first: (cols, rows) */
    uint32_t type;
    const float *data;   /* the model's backend memory; NULL: zeros (a bias it does not have) */
    uint64_t bytes, offset;
} out_tensor;

static uint64_t type_bytes(uint32_t type, uint64_t n) {
    return type == ANDREA_GGML_F32   ? 4 * n
           : type == ANDREA_GGML_F16 ? 2 * n
           : type == ANDREA_GGML_Q4_0 ? n / 32 * ANDREA_Q4_0_BYTES
                                      : n / 32 * ANDREA_Q8_0_BYTES;
}

/* The tensors in file order: ours, with zero biases for a model without them. */
static int plan(const andrea_model *m, int dtype, out_tensor **out, int *n_out) {
    const andrea_config *c = &m->cfg;
    int cap = m->layout.n + 7 * c->n_layer + 8, n = 0;
    out_tensor *t = calloc((size_t)cap, sizeof *t);
    if (!t) return andrea_set_error("out of memory (GGUF tensor list)");
    static const char *const LAYER_BIASES[] = {"attn_norm.bias", "attn_qkv.bias", "attn_output.bias",
                                               "ffn_norm.bias", "ffn_up.bias", "ffn_down.bias"};
    static const int BIAS_MULT[] = {1, 3, 1, 1, 4, 1};
    for (int i = 0; i < m->layout.n; i++) {
        const andrea_tensor_info *ti = &m->layout.t[i];
        out_tensor *o = &t[n++];
        int tr;
        andrea_fmt_foreign_name(ti->name, ANDREA_SCHEME_GGUF, o->name, sizeof o->name, &tr);
        o->ndim = ti->cols ? 2 : 1;
        o->ne[0] = (uint64_t)(ti->cols ? ti->cols : ti->rows);
        o->ne[1] = (uint64_t)(ti->cols ? ti->rows : 1);
        o->type = ANDREA_GGML_F32;
        if (ti->cols && dtype == ANDREA_DTYPE_F16) o->type = ANDREA_GGML_F16;
        /* q8_0 and q4_0 need rows that are whole blocks of 32; others fall back to f16 */
        if (ti->cols && (dtype == ANDREA_DTYPE_Q8_0 || dtype == ANDREA_DTYPE_Q4_0))
            o->type = ti->cols % 32 ? ANDREA_GGML_F16
                      : dtype == ANDREA_DTYPE_Q8_0 ? ANDREA_GGML_Q8_0 : ANDREA_GGML_Q4_0;
        o->data = m->params + ti->offset;
        /* after the last tensor of a layer (or lnf.w), add the biases it lacks */
        int layer, used = 0;
        int last_of_layer = sscanf(ti->name, "h.%d.mlp.wproj%n", &layer, &used) == 1 &&
                            ti->name[used] == 0;
        if (!c->bias && last_of_layer)
            for (int b = 0; b < 6; b++) {
                out_tensor *z = &t[n++];
                snprintf(z->name, sizeof z->name, "blk.%d.%s", layer, LAYER_BIASES[b]);
                z->ndim = 1;
                z->ne[0] = (uint64_t)c->d_model * (uint64_t)BIAS_MULT[b];
                z->ne[1] = 1;
                z->type = ANDREA_GGML_F32;
            }
        if (!c->bias && strcmp(ti->name, "lnf.w") == 0) {
            out_tensor *z = &t[n++];
            snprintf(z->name, sizeof z->name, "output_norm.bias");
            z->ndim = 1;
            z->ne[0] = (uint64_t)c->d_model;
            z->ne[1] = 1;
            z->type = ANDREA_GGML_F32;
        }
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        t[i].bytes = type_bytes(t[i].type, t[i].ne[0] * t[i].ne[1]);
        t[i].offset = off;
        off += (t[i].bytes + ANDREA_GGUF_ALIGN - 1) / ANDREA_GGUF_ALIGN * ANDREA_GGUF_ALIGN;
    }
    *out = t;
    *n_out = n;
    return 0;
}

/* One tensor's data; host is t->data as host memory (one tensor staged at a time). */
static void put_data(andrea_wbuf *w, const out_tensor *t, const float *host) {
    uint64_t n = t->ne[0] * t->ne[1];
    if (!host) {
        andrea_wb_zeros(w, (size_t)t->bytes);
    } else if (t->type == ANDREA_GGML_F32) {
        for (uint64_t i = 0; i < n; i++) andrea_wb_f32(w, host[i]);
    } else if (t->type == ANDREA_GGML_F16) {
        for (uint64_t i = 0; i < n; i++) {
            uint16_t h = andrea_f32_to_f16(host[i]);
            uint8_t b[2] = {(uint8_t)h, (uint8_t)(h >> 8)};
            andrea_wb_put(w, b, 2);
        }
    } else if (t->type == ANDREA_GGML_Q4_0) {
        uint8_t blk[ANDREA_Q4_0_BYTES];
        for (uint64_t i = 0; i < n; i += ANDREA_Q4_0_BLOCK) {
            andrea_q4_0_quantize(host + i, blk, ANDREA_Q4_0_BLOCK);
            andrea_wb_put(w, blk, sizeof blk);
        }
    } else {
        uint8_t blk[ANDREA_Q8_0_BYTES];
        for (uint64_t i = 0; i < n; i += ANDREA_Q8_0_BLOCK) {
            andrea_q8_0_quantize(host + i, blk, ANDREA_Q8_0_BLOCK);
            andrea_wb_put(w, blk, sizeof blk);
        }
    }
    while (w->n % ANDREA_GGUF_ALIGN) andrea_wb_zeros(w, 1);
}

int andrea_gguf_save(const char *path, const andrea_model *m, const andrea_tokenizer *tok,
                     int dtype) {
    const andrea_config *c = &m->cfg;
    if (andrea_gguf_check_arch(c)) return -1;
    if (dtype < ANDREA_DTYPE_F32 || dtype > ANDREA_DTYPE_Q4_0)
        return andrea_set_error("'%s': unknown GGUF tensor type %d", path, dtype);
    if (!tok) return andrea_set_error("'%s': GGUF carries the tokenizer and none was given", path);
    if (!andrea_fmt_tok_is_bpe(tok))
        return andrea_set_error("'%s': a %s tokenizer cannot be written as GGUF's gpt2 BPE "
                                "tokenizer (byte, bpe and gpt2 can)", path,
                                andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)));
    if (andrea_tokenizer_vocab_size(tok) != c->vocab)
        return andrea_set_error("'%s': the tokenizer has %d tokens, the model %d; llama.cpp needs "
                                "them equal", path, andrea_tokenizer_vocab_size(tok), c->vocab);
    out_tensor *t = NULL;
    int nt = 0;
    if (plan(m, dtype, &t, &nt)) return -1;
    andrea_wbuf kv = {0}, w = {0};
    int nkv = 0;
    kv_str(&kv, "general.architecture", "gpt2"), nkv++;
    kv_str(&kv, "general.name", "andrea"), nkv++;
    kv_u32(&kv, "general.alignment", ANDREA_GGUF_ALIGN), nkv++;
    /* llama_ftype: 0 all f32, 1 mostly f16, 2 mostly q4_0, 7 mostly q8_0 */
    static const uint32_t FTYPE[] = {0, 1, 7, 2}; /* by ANDREA_DTYPE_* */
    kv_u32(&kv, "general.file_type", FTYPE[dtype]), nkv++;
    kv_u32(&kv, "general.quantization_version", 2), nkv++;
    kv_u32(&kv, "gpt2.context_length", (uint32_t)c->ctx), nkv++;
    kv_u32(&kv, "gpt2.embedding_length", (uint32_t)c->d_model), nkv++;
    kv_u32(&kv, "gpt2.feed_forward_length", 4u * (uint32_t)c->d_model), nkv++;
    kv_u32(&kv, "gpt2.block_count", (uint32_t)c->n_layer), nkv++;
    kv_u32(&kv, "gpt2.attention.head_count", (uint32_t)c->n_head), nkv++;
    kv_f32(&kv, "gpt2.attention.layer_norm_epsilon", c->norm_eps), nkv++;
    /* what gpt2 cannot say: whether the zero biases are really absent, and the init std */
    kv_u32(&kv, "andrea.bias", (uint32_t)c->bias), nkv++;
    kv_f32(&kv, "andrea.init_std", c->init_std), nkv++;
    int ntok = put_tokenizer(&kv, tok);
    if (ntok < 0) {
        free(t);
        andrea_wb_free(&kv);
        return -1;
    }
    nkv += ntok;
    andrea_wb_put(&w, ANDREA_GGUF_MAGIC, 4);
    andrea_wb_u32(&w, ANDREA_GGUF_VERSION);
    andrea_wb_u64(&w, (uint64_t)nt);
    andrea_wb_u64(&w, (uint64_t)nkv);
    andrea_wb_put(&w, kv.p, kv.n);
    for (int i = 0; i < nt; i++) {
        w_string(&w, t[i].name, strlen(t[i].name));
        andrea_wb_u32(&w, (uint32_t)t[i].ndim);
        for (int d = 0; d < t[i].ndim; d++) andrea_wb_u64(&w, t[i].ne[d]);
        andrea_wb_u32(&w, t[i].type);
        andrea_wb_u64(&w, t[i].offset);
    }
    while (w.n % ANDREA_GGUF_ALIGN) andrea_wb_zeros(&w, 1);
    float *stage = NULL; /* the largest tensor at most, on a backend with its own memory */
    size_t stage_n = 0;
    for (int i = 0; i < nt; i++) {
        size_t n = (size_t)(t[i].ne[0] * t[i].ne[1]);
        const float *host =
            t[i].data ? andrea_tio_view(m->be, t[i].data, n, &stage, &stage_n) : NULL;
        if (t[i].data && !host) w.oom = 1;
        put_data(&w, &t[i], host);
    }
    free(stage);
    int rc = andrea_wb_save(&w, path);
    free(t);
    andrea_wb_free(&kv);
    andrea_wb_free(&w);
    return rc;
}
