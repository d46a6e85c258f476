/*
 * test_checkpoint_v2.c - checkpoint format version 2: a full round trip of every part,
 * explicit little-endian bytes at the documented offsets, an unknown section skipped,
 * the size andrea_checkpoint_size predicts, truncation, the tokenizer identity checked on
 * load, and version 1 files (a fixture written by the version-1 code) still loading.
 * Also: a stale error message never turns a NaN loss into a failed evaluation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "model/model.h"
#include "test_util.h"
#include "train/data/batch_source.h"
#include "train/checkpoint/checkpoint.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/le.h"

static char g_dir[512];

static const char *tmp_path(const char *name) { return tu_path(g_dir, name); }

static uint64_t file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n + 64);
    if (b && fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

static void spit(const char *path, const uint8_t *b, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b, 1, n, f) == n);
    if (f) fclose(f);
}

/* a state with every field set to something recognisable */
static void full_state(andrea_ckpt_state *st, const andrea_tokenizer *tok) {
    memset(st, 0, sizeof *st);
    st->tokenizer_kind = (uint32_t)andrea_tokenizer_kind(tok);
    st->tokenizer_checksum = andrea_tokenizer_checksum(tok);
    st->step = 1234567890123ll;
    st->best_val_loss = 2.5f;
    st->smooth_loss = 2.75f;
    st->gate_fails = 3;
    uint64_t rng[2] = {0x0123456789abcdefull, 0xfedcba9876543210ull};
    andrea_corpus_position_encode(0x1122334455667788ull, rng, st->batch_pos);
    st->batch_pos_len = ANDREA_CORPUS_POS_BYTES;
    st->batch = 9;
    st->seq = 17;
    st->grad_accum = 2;
    st->max_steps = 5000;
    st->lr = 3e-4f;
    st->lr_min = 3e-5f;
    st->beta2 = 0.95f;
    st->eps = 1e-7f;
    st->seed = 0xdeadbeefcafef00dull;
    st->val_fraction = 0.05f;
    st->gate_threshold = 42.5f;
    snprintf(st->data_path, sizeof st->data_path, "/data/some corpus.txt");
}

static void test_round_trip(andrea_model *m, const andrea_tokenizer *tok, const andrea_bytes *blob) {
    const char *path = tmp_path("v2.bin");
    int64_t n = andrea_model_num_params(m);
    float *mm = malloc(sizeof(float) * n), *vv = malloc(sizeof(float) * n);
    for (int64_t i = 0; i < n; i++) mm[i] = (float)i * 0.5f, vv[i] = (float)(3 * i);
    static andrea_ckpt_state st, st2;
    full_state(&st, tok);
    CHECK(andrea_checkpoint_save(path, m, mm, vv, &st, blob->data, blob->len) == 0);
    CHECK(file_size(path) == andrea_checkpoint_size(&m->cfg, 1, blob->len, &st));
    float *m2 = NULL, *v2 = NULL;
    void *b2 = NULL;
    uint64_t blen = 0;
    andrea_model *r = andrea_checkpoint_load(path, &m2, &v2, &st2, &b2, &blen);
    CHECK(r != NULL);
    if (r) {
        CHECK(memcmp(&r->cfg, &m->cfg, sizeof m->cfg) == 0);
        CHECK(memcmp(r->params, m->params, sizeof(float) * n) == 0);
        CHECK(memcmp(m2, mm, sizeof(float) * n) == 0 && memcmp(v2, vv, sizeof(float) * n) == 0);
        CHECK(blen == blob->len && memcmp(b2, blob->data, blen) == 0);
        CHECK(st2.version == 2 && st2.has_moments == 1 && st2.tokenizer_blob == blob->len);
        CHECK(st2.step == st.step && st2.best_val_loss == 2.5f && st2.smooth_loss == 2.75f);
        CHECK(st2.gate_fails == 3 && st2.tokenizer_kind == st.tokenizer_kind);
        CHECK(st2.tokenizer_checksum == st.tokenizer_checksum);
        CHECK(st2.batch_pos_len == ANDREA_CORPUS_POS_BYTES &&
              memcmp(st2.batch_pos, st.batch_pos, ANDREA_CORPUS_POS_BYTES) == 0);
        CHECK(st2.data_checksum == 0x1122334455667788ull && st2.data_rng[1] == 0xfedcba9876543210ull);
        CHECK(st2.batch == 9 && st2.seq == 17 && st2.grad_accum == 2 && st2.max_steps == 5000);
        CHECK(st2.lr == 3e-4f && st2.lr_min == 3e-5f && st2.beta2 == 0.95f && st2.eps == 1e-7f);
        CHECK(st2.seed == 0xdeadbeefcafef00dull && st2.val_fraction == 0.05f);
        CHECK(st2.gate_threshold == 42.5f && strcmp(st2.data_path, "/data/some corpus.txt") == 0);
        andrea_model_free(r);
    }
    free(m2);
    free(v2);
    free(b2);

    /* the bytes themselves: little-endian at the documented places */
    size_t len = 0;
    uint8_t *f = slurp(path, &len);
    CHECK(f && len == file_size(path));
    if (f) {
        CHECK(memcmp(f, "ANDRCKPT", 8) == 0);
        CHECK(f[8] == 2 && f[9] == 0 && f[10] == 0 && f[11] == 0);
        CHECK(get_u32(f + 12) == 24 && get_u64(f + 16) == len);
        CHECK(memcmp(f + 24, "CONF", 4) == 0 && get_u64(f + 32) == 44);
        CHECK(get_u32(f + 40) == (uint32_t)m->cfg.n_layer && get_f32(f + 76) == m->cfg.norm_eps);
        CHECK(get_u64(f + len - 8) == andrea_hash(ANDREA_HASH_INIT, f, len - 8));
        /* weights only: no ADAM section, 8 n bytes shorter */
        const char *w = tmp_path("v2_weights.bin");
        CHECK(andrea_checkpoint_save(w, m, NULL, NULL, &st, blob->data, blob->len) == 0);
        CHECK(file_size(w) == len - 16 - 8 * (uint64_t)n);
        CHECK(file_size(w) == andrea_checkpoint_size(&m->cfg, 0, blob->len, &st));

        /* an unknown section after the preamble is skipped (with a fixed-up size and checksum) */
        size_t extra = 16 + 8;
        uint8_t *g = malloc(len + extra);
        memcpy(g, f, 24);
        memcpy(g + 24, "ZZZZ", 4);
        put_u32(g + 28, 0);
        put_u64(g + 32, 5); /* 5 bytes, padded to 8 */
        memcpy(g + 40, "hello\0\0\0", 8);
        memcpy(g + 24 + extra, f + 24, len - 24);
        put_u64(g + 16, len + extra);
        put_u64(g + len + extra - 8, andrea_hash(ANDREA_HASH_INIT, g, len + extra - 8));
        const char *u = tmp_path("v2_unknown.bin");
        spit(u, g, len + extra);
        andrea_model *x = andrea_checkpoint_load(u, NULL, NULL, &st2, NULL, NULL);
        CHECK(x != NULL && st2.step == st.step && strcmp(st2.data_path, st.data_path) == 0);
        if (!x) fprintf(stderr, "  unknown section: %s\n", andrea_error());
        andrea_model_free(x);

        /* truncated, too long, flipped: named as such, and the size check comes first */
        spit(u, f, len - 100);
        CHECK(andrea_checkpoint_load_model(u) == NULL && strstr(andrea_error(), "truncated") != NULL);
        g[0] = 0;
        memcpy(g, f, len);
        memset(g + len, 0, 8);
        spit(u, g, len + 8);
        CHECK(andrea_checkpoint_load_model(u) == NULL && strstr(andrea_error(), "too long") != NULL);
        for (size_t at = 24; at < 24 + 400; at += 37) { /* anywhere in the sections */
            memcpy(g, f, len);
            g[at] ^= 0x40;
            spit(u, g, len);
            andrea_model *y = andrea_checkpoint_load_model(u);
            CHECK(y == NULL);
            if (y) fprintf(stderr, "  a flipped byte at %zu was not noticed\n", at);
            andrea_model_free(y);
        }
        free(g);
        free(f);
    }
    free(mm);
    free(vv);
}

/* The tokenizer a checkpoint embeds must be the one its TOKN section names. */
static void test_tokenizer_identity(andrea_model *m, const andrea_tokenizer *tok,
                                    const andrea_bytes *blob) {
    static andrea_ckpt_state st;
    const char *path = tmp_path("v2_tok.bin");
    full_state(&st, tok);
    CHECK(andrea_checkpoint_save(path, m, NULL, NULL, &st, blob->data, blob->len) == 0);
    andrea_tokenizer *t = NULL;
    andrea_model *ok = andrea_checkpoint_load_with_tokenizer(path, &t);
    CHECK(ok != NULL && t != NULL);
    andrea_model_free(ok);
    andrea_tokenizer_free(t);

    st.tokenizer_checksum ^= 1;
    CHECK(andrea_checkpoint_save(path, m, NULL, NULL, &st, blob->data, blob->len) == 0);
    CHECK(andrea_checkpoint_load_with_tokenizer(path, &t) == NULL && t == NULL);
    CHECK(strstr(andrea_error(), path) != NULL && strstr(andrea_error(), "tokenizer") != NULL);
    CHECK(strchr(andrea_error(), '\n') == NULL);

    full_state(&st, tok);
    st.tokenizer_kind = 2; /* char */
    CHECK(andrea_checkpoint_save(path, m, NULL, NULL, &st, blob->data, blob->len) == 0);
    CHECK(andrea_checkpoint_load_with_tokenizer(path, &t) == NULL);
    CHECK(strstr(andrea_error(), "kind 2") != NULL);
}

/* tests/fixtures/ckpt_v1.bin: written by the version-1 code (andrea before issue 9):
 * tiny, L=1 C=8 NH=1 ctx 8 tied, stopped at step 3 of 6 (--stop-at 3). */
static void test_version1(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *slash = strrchr(path, '/');
    if (!slash) return;
    snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "fixtures/ckpt_v1.bin");
    static andrea_ckpt_state st;
    andrea_config cfg;
    CHECK(andrea_checkpoint_peek(path, &cfg, &st) == 0);
    CHECK(st.version == 1 && cfg.n_layer == 1 && cfg.d_model == 8 && cfg.ctx == 8 && cfg.tied == 1);
    CHECK(st.step == 3 && st.batch == 2 && st.seq == 8 && st.max_steps == 6 && st.warmup == 2);
    CHECK(st.seed == 1337 && st.lr == 1e-3f && st.data_path[0] == '\0' && st.has_moments);
    CHECK(st.batch_pos_len == ANDREA_CORPUS_POS_BYTES);
    float *mm = NULL, *vv = NULL;
    andrea_model *m = andrea_checkpoint_load(path, &mm, &vv, &st, NULL, NULL);
    CHECK(m != NULL && mm != NULL && vv != NULL);
    andrea_model_free(m);
    free(mm);
    free(vv);
    andrea_tokenizer *tok = NULL;
    m = andrea_checkpoint_load_with_tokenizer(path, &tok); /* its kind and checksum match */
    CHECK(m != NULL && tok != NULL && andrea_tokenizer_kind(tok) == ANDREA_TOK_BYTE);
    if (!m) fprintf(stderr, "  v1: %s\n", andrea_error());
    andrea_model_free(m);
    andrea_tokenizer_free(tok);
}

/* A message left by an earlier failed call must not make a NaN loss look like an error. */
static void test_stale_error(andrea_model *m) {
    int32_t tokens[200];
    for (int i = 0; i < 200; i++) tokens[i] = (i * 7) % 257;
    double loss = 0;
    andrea_set_error("an old failure");
    CHECK(andrea_eval_tokens(m, tokens, 200, 2, 16, 0, &loss, NULL) == 0 && isfinite(loss));
#if !defined(__SANITIZE_ADDRESS__)
    /* (not under the sanitizers: andrea_expf of a NaN shifts a negative int, which UBSan
     * stops at; src/backend/cpu/kernels/fastmath.h, reported) */
    float *wte = malloc(sizeof(float) * 257 * (size_t)m->cfg.d_model);
    memcpy(wte, m->params, sizeof(float) * 257 * (size_t)m->cfg.d_model);
    for (int64_t i = 0; i < 257 * m->cfg.d_model; i++) m->params[i] = NAN;
    andrea_set_error("an old failure");
    CHECK(andrea_eval_tokens(m, tokens, 200, 2, 16, 0, &loss, NULL) == 0 && isnan(loss));
    memcpy(m->params, wte, sizeof(float) * 257 * (size_t)m->cfg.d_model);
    free(wte);
#endif
    /* a real failure still fails */
    tokens[3] = 9999;
    CHECK(andrea_eval_tokens(m, tokens, 200, 2, 16, 0, &loss, NULL) != 0);
    CHECK(strstr(andrea_error(), "outside the vocabulary") != NULL);
}

int main(void) {
    const char *dir = getenv("ANDREA_TMP") ? getenv("ANDREA_TMP") : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", g_dir);
    CHECK(system(cmd) == 0);
    andrea_config c;
    andrea_config_preset("tiny", &c);
    c.bias = 1;
    andrea_model *m = andrea_model_create(&c, 7);
    andrea_tokenizer *tok = andrea_tokenizer_byte();
    andrea_bytes blob = {0};
    CHECK(m && tok && andrea_tokenizer_serialize(tok, &blob) == 0);
    CHECK(blob.len == 32); /* the byte tokenizer's blob: a header, no payload */
    test_round_trip(m, tok, &blob);
    test_tokenizer_identity(m, tok, &blob);
    test_version1();
    test_stale_error(m);
    andrea_bytes_free(&blob);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    return tu_finish("test_checkpoint_v2");
}
