/* test_formats.c - safetensors, GGUF and llm.c: round trips are bit-identical for f32
 * (both architectures where the format carries them), f16/q8_0 stay within their
 * rounding, architectures a format cannot carry are refused, and every reader rejects
 * malformed files (truncated at every length, header beyond the file, offsets outside
 * or overlapping, wrong dtype or ggml type, absurd shapes) with a one-line message. */
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_formats.h"
#include "andrea_tokenizer.h"
#include "formats/fmt.h"
#include "model/model.h"
#include "test_decode.h"
#include "test_util.h"
#include "util/le.h"

static char tmpdir[1024];

static const char *tmp(const char *name) { return tu_path(tmpdir, name); }

static andrea_config gpt2_cfg(void) { return td_gpt2_tiny(); }

static int same_model(const andrea_model *a, const andrea_model *b) {
    return memcmp(&a->cfg, &b->cfg, sizeof a->cfg) == 0 && a->layout.total == b->layout.total &&
           memcmp(a->params, b->params, sizeof(float) * (size_t)a->layout.total) == 0;
}

/* The error of the last failed call: set and a single line. */
static void check_one_line(const char *ctx) {
    const char *e = andrea_error();
    if (!e[0] || strchr(e, '\n')) {
        fprintf(stderr, "%s: error message '%s' is not one line\n", ctx, e);
        tu_failures++;
    }
}

static void round_trip(const char *label, const andrea_config *cfg, int format, const char *file,
                       int expect_ok) {
    andrea_model *m = andrea_model_create(cfg, 7);
    andrea_tokenizer *tok = andrea_tokenizer_byte();
    int rc = andrea_model_save_as(tmp(file), format, m, tok, ANDREA_DTYPE_F32, ANDREA_NAMES_AUTO);
    if (!expect_ok) {
        CHECK(rc != 0);
        check_one_line(label);
        printf("%s: refused: %s\n", label, andrea_error());
    } else {
        CHECK(rc == 0);
        andrea_tokenizer *back_tok = NULL;
        andrea_model *back = andrea_model_load_any(tmp(file), &back_tok);
        if (!back) fprintf(stderr, "%s: %s\n", label, andrea_error());
        CHECK(back != NULL);
        if (back) {
            if (!same_model(m, back)) fprintf(stderr, "%s: round trip not bit-identical\n", label);
            CHECK(same_model(m, back));
        }
        if (format != ANDREA_FORMAT_LLMC) { /* llm.c files carry no tokenizer */
            CHECK(back_tok != NULL);
            if (back_tok) CHECK(andrea_tokenizer_checksum(back_tok) == andrea_tokenizer_checksum(tok));
        }
        andrea_tokenizer_free(back_tok);
        andrea_model_free(back);
        printf("%s: bit-identical round trip\n", label);
    }
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
}

/* f16 and q8_0 GGUF: every weight within its format's rounding. */
static void gguf_lossy(int dtype, double rel_block) {
    andrea_config c = gpt2_cfg();
    andrea_model *m = andrea_model_create(&c, 3);
    andrea_tokenizer *tok = andrea_tokenizer_byte(), *bt = NULL;
    CHECK(andrea_gguf_save(tmp("lossy.gguf"), m, tok, dtype) == 0);
    andrea_model *b = andrea_gguf_load(tmp("lossy.gguf"), &bt);
    CHECK(b != NULL);
    for (int i = 0; b && i < m->layout.n; i++) {
        const andrea_tensor_info *t = &m->layout.t[i];
        const float *x = m->params + t->offset, *y = b->params + t->offset;
        for (int64_t r = 0; r < t->size; r += 32) {
            int64_t n = t->size - r < 32 ? t->size - r : 32;
            double amax = tu_max_abs(x + r, (size_t)n);
            /* 1-D tensors stay f32; f16 rounds to 2^-11 relative (2^-25 absolute below
             * 2^-14, where f16 is subnormal); q8_0 to half a step of
             * max|block| / 127 (plus the f16 rounding of that scale) */
            double tol = !t->cols ? 0 : dtype == ANDREA_DTYPE_F16 ? 0x1p-25 : rel_block * amax;
            double rtol = !t->cols ? 0 : dtype == ANDREA_DTYPE_F16 ? 1.0 / 2048 : 1e-3;
            char what[96];
            snprintf(what, sizeof what, "gguf %s %s", andrea_dtype_name(dtype), t->name);
            if (!tu_check_array(what, y + r, x + r, (size_t)n, tol, rtol)) break;
        }
    }
    andrea_model_free(b);
    andrea_tokenizer_free(bt);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
}

/* ---- malformed files ---------------------------------------------------------------- */

static uint8_t *st_file(const char *json, size_t data_len, size_t *n) {
    size_t hl = strlen(json);
    uint8_t *p = calloc(8 + hl + data_len + 1, 1);
    put_u64(p, hl);
    memcpy(p + 8, json, hl);
    *n = 8 + hl + data_len;
    return p;
}

static void st_reject(const char *label, const char *json, size_t data_len, const char *needle) {
    size_t n;
    uint8_t *p = st_file(json, data_len, &n);
    andrea_model *m = andrea_safetensors_parse(p, n, "bad.safetensors", 0, 0);
    CHECK(m == NULL);
    check_one_line(label);
    if (!strstr(andrea_error(), needle)) {
        fprintf(stderr, "%s: error '%s' lacks '%s'\n", label, andrea_error(), needle);
        tu_failures++;
    }
    printf("safetensors %s: %s\n", label, andrea_error());
    andrea_model_free(m);
    free(p);
}

static void safetensors_malformed(void) {
    st_reject("offsets outside", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
              "outside");
    st_reject("overlap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 16, "overlap");
    st_reject("wrong dtype", "{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "dtype");
    st_reject("shape vs bytes", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
              "need");
    st_reject("absurd shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776],"
              "\"data_offsets\":[0,8]}}", 8, "absurd");
    st_reject("bad json", "{\"a\":{\"dtype\":\"F32\",", 8, "JSON");
    st_reject("duplicate", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "twice");
    /* header length beyond the file */
    size_t n;
    uint8_t *p = st_file("{}", 0, &n);
    put_u64(p, 1ull << 40);
    CHECK(andrea_safetensors_parse(p, n, "bad.safetensors", 0, 0) == NULL);
    check_one_line("header length");
    CHECK(strstr(andrea_error(), "beyond the file") != NULL);
    printf("safetensors header length: %s\n", andrea_error());
    free(p);
}

/* A GGUF with one tensor "t" {ne0, ne1} of ggml type `type` at `offset`, data_len bytes. */
static uint8_t *gguf_file(uint64_t ne0, uint64_t ne1, uint32_t type, uint64_t offset, int two,
                          size_t data_len, size_t *n) {
    andrea_wbuf w = {0};
    andrea_wb_put(&w, "GGUF", 4);
    andrea_wb_u32(&w, 3);
    andrea_wb_u64(&w, two ? 2 : 1);
    andrea_wb_u64(&w, 1);
    andrea_wb_u64(&w, 20);
    andrea_wb_str(&w, "general.architecture");
    andrea_wb_u32(&w, 8);
    andrea_wb_u64(&w, 4);
    andrea_wb_str(&w, "gpt2");
    for (int k = 0; k < (two ? 2 : 1); k++) {
        andrea_wb_u64(&w, 1);
        andrea_wb_str(&w, k ? "u" : "t");
        andrea_wb_u32(&w, 2);
        andrea_wb_u64(&w, ne0);
        andrea_wb_u64(&w, ne1);
        andrea_wb_u32(&w, type);
        andrea_wb_u64(&w, k ? 0 : offset);
    }
    while (w.n % 32) andrea_wb_zeros(&w, 1);
    andrea_wb_zeros(&w, data_len);
    *n = w.n;
    return w.p;
}

static void gguf_reject(const char *label, uint8_t *p, const size_t *np, const char *needle) {
    size_t n = *np; /* by pointer: the argument that builds p sets it */
    andrea_model *m = andrea_gguf_parse(p, n, "bad.gguf", NULL);
    CHECK(m == NULL);
    check_one_line(label);
    if (!strstr(andrea_error(), needle)) {
        fprintf(stderr, "gguf %s: error '%s' lacks '%s'\n", label, andrea_error(), needle);
        tu_failures++;
    }
    printf("gguf %s: %s\n", label, andrea_error());
    andrea_model_free(m);
    free(p);
}

static void gguf_malformed(void) {
    size_t n;
    uint8_t *p;
    p = gguf_file(32, 2, 0, 0, 0, 256, &n);
    CHECK(andrea_gguf_parse(p, n, "ok.gguf", NULL) == NULL);
    if (!strstr(andrea_error(), "hyperparameters")) fprintf(stderr, "gguf ok: %s\n", andrea_error());
    CHECK(strstr(andrea_error(), "hyperparameters") != NULL);
    free(p); /* well-formed structure: it fails only for lacking the gpt2 keys */
    gguf_reject("offset outside", gguf_file(32, 2, 0, 64, 0, 100, &n), &n, "outside");
    gguf_reject("misaligned", gguf_file(32, 2, 0, 4, 0, 400, &n), &n, "misaligned");
    gguf_reject("overlap", gguf_file(32, 2, 0, 32, 1, 400, &n), &n, "overlap");
    gguf_reject("wrong type", gguf_file(32, 2, 12, 0, 0, 400, &n), &n, "ggml type"); /* q4_K */
    gguf_reject("absurd shape", gguf_file(1ull << 40, 1ull << 40, 0, 0, 0, 400, &n), &n, "absurd");
    gguf_reject("q8_0 partial block", gguf_file(33, 1, 8, 0, 0, 400, &n), &n, "blocks of 32");
    p = gguf_file(32, 2, 0, 0, 0, 256, &n);
    put_u64(p + 8, 1ull << 50); /* tensor count */
    gguf_reject("absurd count", p, &n, "cannot fit");
    p = gguf_file(32, 2, 0, 0, 0, 256, &n);
    memcpy(p, "GGUG", 4);
    gguf_reject("bad magic", p, &n, "not a GGUF");
}

static void llmc_malformed(const uint8_t *good, size_t n) {
    uint8_t *p = malloc(n);
    memcpy(p, good, n);
    put_u32(p, 20240327);
    CHECK(andrea_llmc_parse(p, n, "bad.bin") == NULL);
    check_one_line("llmc magic");
    memcpy(p, good, n);
    put_u32(p + 4, 4);
    CHECK(andrea_llmc_parse(p, n, "bad.bin") == NULL);
    CHECK(strstr(andrea_error(), "version") != NULL);
    memcpy(p, good, n);
    put_u32(p + 28, 7); /* Vp < V */
    CHECK(andrea_llmc_parse(p, n, "bad.bin") == NULL);
    CHECK(strstr(andrea_error(), "padded") != NULL);
    memcpy(p, good, n);
    put_u32(p + 16, 4000); /* L: the sizes no longer match the file */
    CHECK(andrea_llmc_parse(p, n, "bad.bin") == NULL);
    CHECK(strstr(andrea_error(), "needs") != NULL);
    printf("llmc sizes: %s\n", andrea_error());
    free(p);
}

/* llm.c version 5: the same layout in bf16 (the top half of each f32). */
static void llmc_bf16(const uint8_t *v3, size_t n) {
    size_t nf = (n - 1024) / 4;
    uint8_t *v5 = malloc(1024 + 2 * nf);
    memcpy(v5, v3, 1024);
    put_u32(v5 + 4, 5);
    for (size_t i = 0; i < nf; i++) memcpy(v5 + 1024 + 2 * i, v3 + 1024 + 4 * i + 2, 2);
    andrea_model *a = andrea_llmc_parse(v3, n, "v3"), *b = andrea_llmc_parse(v5, 1024 + 2 * nf, "v5");
    CHECK(a && b);
    int exact = a && b;
    for (int64_t i = 0; exact && i < a->layout.total; i++) {
        uint32_t u;
        memcpy(&u, &a->params[i], 4);
        u &= 0xffff0000u; /* what bf16 keeps */
        float want;
        memcpy(&want, &u, 4);
        exact = b->params[i] == want;
    }
    CHECK(exact);
    printf("llmc version 5 (bf16): read as the bf16 values of the f32 file\n");
    andrea_model_free(a);
    andrea_model_free(b);
    free(v5);
}

typedef andrea_model *(*parse_fn)(const void *, size_t, const char *);
static andrea_model *st_parse(const void *p, size_t n, const char *w) { return andrea_safetensors_parse(p, n, w, 0, 0); }
static andrea_model *gg_parse(const void *p, size_t n, const char *w) { return andrea_gguf_parse(p, n, w, NULL); }
static andrea_model *lc_parse(const void *p, size_t n, const char *w) { return andrea_llmc_parse(p, n, w); }

/* Every prefix of a good file is rejected with one line (a copy of exactly that length,
 * so ASan sees any read past it). */
static void truncations(const char *label, const char *path, parse_fn parse) {
    uint8_t *d;
    size_t n;
    if (andrea_fmt_slurp(path, &d, &n)) {
        CHECK(0);
        return;
    }
    andrea_model *whole = parse(d, n, label);
    CHECK(whole != NULL);
    andrea_model_free(whole);
    int bad = 0;
    for (size_t k = 0; k < n; k += (k < 4096 ? 1 : 997)) {
        uint8_t *c = malloc(k ? k : 1);
        memcpy(c, d, k);
        andrea_model *m = parse(c, k, label);
        const char *e = andrea_error();
        if (m || !e[0] || strchr(e, '\n')) bad++;
        andrea_model_free(m);
        free(c);
    }
    if (bad) fprintf(stderr, "%s: %d truncated copies not rejected cleanly\n", label, bad);
    CHECK(bad == 0);
    printf("%s: every truncation of %zu bytes rejected\n", label, n);
    if (parse == lc_parse) {
        llmc_malformed(d, n);
        llmc_bf16(d, n);
    }
    free(d);
}

int main(void) {
    const char *base = getenv("ANDREA_TMP");
    snprintf(tmpdir, sizeof tmpdir, "%s", base ? base : "/tmp/test_formats");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", tmpdir);
    if (system(cmd) != 0) return 1;

    andrea_config g = gpt2_cfg(), a;
    andrea_config_preset("tiny", &a); /* ANDREA: RMSNorm, ReLU^2, no biases, untied */
    andrea_config g_untied = g;       /* GGUF writes the missing biases as zeros */
    g_untied.bias = 0;
    g_untied.tied = 0;
    round_trip("safetensors hf gpt2", &g, ANDREA_FORMAT_SAFETENSORS, "g.safetensors", 1);
    round_trip("safetensors andrea", &a, ANDREA_FORMAT_SAFETENSORS, "a.safetensors", 1);
    round_trip("gguf gpt2 f32", &g, ANDREA_FORMAT_GGUF, "g.gguf", 1);
    round_trip("gguf gpt2 no bias untied", &g_untied, ANDREA_FORMAT_GGUF, "gu.gguf", 1);
    round_trip("gguf andrea", &a, ANDREA_FORMAT_GGUF, "a.gguf", 0);
    round_trip("llmc gpt2", &g, ANDREA_FORMAT_LLMC, "g.llmc", 1);
    round_trip("llmc andrea", &a, ANDREA_FORMAT_LLMC, "a.llmc", 0);
    round_trip("andrea checkpoint", &a, ANDREA_FORMAT_ANDREA, "a.ckpt", 1);
    CHECK(strstr((andrea_gguf_check_arch(&a), andrea_error()), "RoPE") != NULL);

    gguf_lossy(ANDREA_DTYPE_F16, 0);
    gguf_lossy(ANDREA_DTYPE_Q8_0, 0.5 / 127 * 1.001);
    /* q4_0: d = max / -8 and q clamped at 15, so the far end of the block is a whole step
     * (max / 8) off at worst */
    gguf_lossy(ANDREA_DTYPE_Q4_0, 1.0 / 8 * 1.002);

    safetensors_malformed();
    gguf_malformed();
    truncations("safetensors", tmp("g.safetensors"), st_parse);
    truncations("gguf", tmp("g.gguf"), gg_parse);
    truncations("llmc", tmp("g.llmc"), lc_parse);
    return tu_finish("test_formats");
}
