/*
 * test_flat.c - ANDREA's flat checkpoint (src/formats/andrea_flat.c): the byte layout
 * written by hand-checkable rules, a round trip of weights and moments, norm gains folded
 * into the matrices they feed (same logits), the round trip through andrea's training
 * checkpoint (bit-identical), and a file of the published ANDREA-12M's shape: 12,780,288
 * parameters, 153,363,464 bytes, written, read back and removed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "andrea.h"
#include "andrea_formats.h"
#include "model/model.h"
#include "test_util.h"
#include "util/le.h"

static const char *tmpdir(void) {
    const char *d = getenv("ANDREA_TMP");
    if (!d) d = "/tmp";
    mkdir(d, 0777);
    return d;
}

static long file_size(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

static float *random_moments(int64_t n, int positive) {
    float *x = tu_normal_array((size_t)n);
    if (positive)
        for (int64_t i = 0; i < n; i++) x[i] = x[i] * x[i];
    return x;
}

static const andrea_tensor_info *find(const andrea_model *m, const char *name) {
    for (int i = 0; i < m->layout.n; i++)
        if (strcmp(m->layout.t[i].name, name) == 0) return &m->layout.t[i];
    return NULL;
}

/* The tiny preset (L 2, C 32, T 32, V 257): layout, values, moments and step survive. */
static void test_round_trip(void) {
    andrea_config cfg;
    CHECK(andrea_config_preset("tiny", &cfg) == 0);
    int64_t n = andrea_flat_num_params(&cfg);
    /* 2 V C + T C + 12 L C^2 = 2*257*32 + 32*32 + 12*2*32*32 */
    CHECK(n == 2 * 257 * 32 + 32 * 32 + 12 * 2 * 32 * 32);
    andrea_model *m = andrea_model_create(&cfg, 7);
    int64_t total = m->layout.total;
    float *mm = random_moments(total, 0), *vv = random_moments(total, 1);
    const char *path = tu_path(tmpdir(), "tiny_flat.bin");
    andrea_flat_info info;
    CHECK(andrea_flat_save(path, m, mm, vv, 4321, &info) == 0);
    CHECK(info.max_gain_dev == 0.0f && info.has_moments && info.n_params == n);
    CHECK(file_size(path) == 8 + 12 * n);

    /* the bytes by hand: header, wte[0][0], wpe first, layer 0's Wq row 0 after wpe, Wk
     * after Wq (the fused wqkv's second third), lm_head last; v's last float last */
    FILE *f = fopen(path, "rb");
    uint8_t *b = malloc((size_t)(8 + 12 * n));
    CHECK(f && fread(b, 1, (size_t)(8 + 12 * n), f) == (size_t)(8 + 12 * n));
    if (f) fclose(f);
    CHECK(get_u32(b) == 4321 && (int64_t)get_u32(b + 4) == n);
    const float *P = m->params;
    int64_t C = 32, V = 257, T = 32;
    CHECK(get_f32(b + 8) == P[find(m, "wte")->offset]);
    CHECK(get_f32(b + 8 + 4 * V * C) == P[find(m, "wpe")->offset]);
    int64_t l0 = V * C + T * C;
    CHECK(get_f32(b + 8 + 4 * l0) == P[find(m, "h.0.attn.wqkv")->offset]);
    CHECK(get_f32(b + 8 + 4 * (l0 + C * C)) == P[find(m, "h.0.attn.wqkv")->offset + C * C]);
    CHECK(get_f32(b + 8 + 4 * (l0 + 3 * C * C)) == P[find(m, "h.0.attn.wo")->offset]);
    CHECK(get_f32(b + 8 + 4 * (l0 + 4 * C * C)) == P[find(m, "h.0.mlp.wfc")->offset]);
    CHECK(get_f32(b + 8 + 4 * (l0 + 8 * C * C)) == P[find(m, "h.0.mlp.wproj")->offset]);
    CHECK(get_f32(b + 8 + 4 * (l0 + 12 * C * C)) == P[find(m, "h.1.attn.wqkv")->offset]);
    CHECK(get_f32(b + 8 + 4 * (n - V * C)) == P[find(m, "lm_head")->offset]);
    CHECK(get_f32(b + 8 + 4 * n) == mm[find(m, "wte")->offset]);
    CHECK(get_f32(b + 8 + 4 * (3 * n - 1)) == vv[find(m, "lm_head")->offset + V * C - 1]);
    free(b);

    float *m2 = NULL, *v2 = NULL;
    andrea_model *back = andrea_flat_load(path, &cfg, &m2, &v2, &info);
    CHECK(back && m2 && v2 && info.step == 4321 && info.has_moments);
    if (back && m2 && v2) {
        CHECK(memcmp(back->params, m->params, sizeof(float) * (size_t)total) == 0);
        /* the norm gains have no moments in the file: zeros */
        for (int i = 0; i < m->layout.n; i++) {
            const andrea_tensor_info *t = &m->layout.t[i];
            if (m->layout.group[i] == GROUP_NORM) {
                for (int64_t k = 0; k < t->size; k++) CHECK(m2[t->offset + k] == 0 && v2[t->offset + k] == 0);
            } else {
                CHECK(memcmp(m2 + t->offset, mm + t->offset, sizeof(float) * (size_t)t->size) == 0);
                CHECK(memcmp(v2 + t->offset, vv + t->offset, sizeof(float) * (size_t)t->size) == 0);
            }
        }
    }
    free(m2), free(v2), free(mm), free(vv);
    andrea_model_free(back);

    /* not ANDREA's architecture: refused with the reason */
    andrea_config g;
    CHECK(andrea_config_preset("gpt2-124m", &g) == 0);
    CHECK(andrea_flat_num_params(&g) == -1 && strstr(andrea_error(), "ANDREA's architecture"));
    /* a file of the wrong size is no flat file */
    FILE *w = fopen(path, "r+b");
    if (w) {
        fseek(w, 4, SEEK_SET);
        uint8_t four[4];
        put_u32(four, (uint32_t)(n + 1));
        fwrite(four, 1, 4, w);
        fclose(w);
    }
    CHECK(andrea_flat_peek(path, &info) == -1 && strstr(andrea_error(), "not an ANDREA flat"));
    andrea_model_free(m);
    remove(path);
}

/* Trained gains are folded into Wqkv, fc1 and lm_head: the read-back model (gains 1)
 * computes the same logits. */
static void test_fold(void) {
    andrea_config cfg;
    CHECK(andrea_config_preset("tiny", &cfg) == 0);
    andrea_model *m = andrea_model_create(&cfg, 11);
    for (int i = 0; i < m->layout.n; i++)
        if (m->layout.group[i] == GROUP_NORM)
            for (int64_t k = 0; k < m->layout.t[i].size; k++)
                m->params[m->layout.t[i].offset + k] = 0.5f + (float)tu_rnd_unit();
    const char *path = tu_path(tmpdir(), "fold_flat.bin");
    andrea_flat_info info;
    CHECK(andrea_flat_save(path, m, NULL, NULL, 0, &info) == 0);
    CHECK(info.max_gain_dev > 0.1f && !info.has_moments);
    andrea_model *back = andrea_flat_load(path, &cfg, NULL, NULL, &info);
    CHECK(back != NULL && info.has_moments); /* written with zero moments: the full size */
    if (back) {
        andrea_kv *k1 = andrea_kv_create(m), *k2 = andrea_kv_create(back);
        const int32_t toks[5] = {72, 101, 108, 108, 111};
        for (int t = 0; t < 5; t++) {
            const float *a = andrea_kv_step(m, k1, toks[t]);
            const float *b = andrea_kv_step(back, k2, toks[t]);
            tu_check_rel("folded logits", b, a, (size_t)cfg.vocab, 1e-4);
        }
        andrea_kv_free(k1);
        andrea_kv_free(k2);
    }
    andrea_model_free(back);
    andrea_model_free(m);
    remove(path);
}

/* flat -> andrea training checkpoint -> flat: the same bytes. */
static void test_checkpoint_bridge(void) {
    andrea_config cfg;
    CHECK(andrea_config_preset("tiny", &cfg) == 0);
    andrea_model *m = andrea_model_create(&cfg, 3);
    int64_t total = m->layout.total;
    float *mm = random_moments(total, 0), *vv = random_moments(total, 1);
    const char *a = tu_path(tmpdir(), "bridge_a.bin"), *c = tu_path(tmpdir(), "bridge.ckpt"),
               *b = tu_path(tmpdir(), "bridge_b.bin");
    andrea_flat_info info;
    CHECK(andrea_flat_save(a, m, mm, vv, 77, &info) == 0);
    CHECK(andrea_flat_to_checkpoint(a, c, &cfg, "byte", NULL, &info) == 0);
    CHECK(andrea_checkpoint_to_flat(c, b, &info) == 0);
    CHECK(info.step == 77 && info.has_moments && info.max_gain_dev == 0.0f);
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    long sa = file_size(a), sb = file_size(b);
    CHECK(sa == sb && sa == 8 + 12 * andrea_flat_num_params(&cfg));
    if (fa && fb && sa == sb && sa > 0) {
        uint8_t *pa = malloc((size_t)sa), *pb = malloc((size_t)sb);
        CHECK(fread(pa, 1, (size_t)sa, fa) == (size_t)sa && fread(pb, 1, (size_t)sb, fb) == (size_t)sb);
        CHECK(memcmp(pa, pb, (size_t)sa) == 0);
        free(pa), free(pb);
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    free(mm), free(vv);
    andrea_model_free(m);
    remove(a), remove(b), remove(c);
}

/* The published ANDREA-12M's shape: V 2305 (2048 segments + 256 bytes + BOS). */
static void test_andrea_12m(void) {
    andrea_config cfg;
    CHECK(andrea_config_preset("andrea-12m", &cfg) == 0);
    cfg.vocab = 2305;
    CHECK(andrea_flat_num_params(&cfg) == 12780288);
    andrea_config guessed;
    CHECK(andrea_flat_guess_config(12780288, 2305, &guessed) == 0);
    CHECK(guessed.n_layer == 6 && guessed.d_model == 384 && guessed.n_head == 12 &&
          guessed.ctx == 1024 && guessed.vocab == 2305);
    andrea_model *m = andrea_model_create(&cfg, 12);
    if (!m) {
        CHECK(!"andrea-12m model");
        return;
    }
    const char *path = tu_path(tmpdir(), "andrea12m_flat.bin");
    andrea_flat_info info;
    CHECK(andrea_flat_save(path, m, NULL, NULL, 43587, &info) == 0);
    CHECK(file_size(path) == 153363464L);
    CHECK(andrea_flat_peek(path, &info) == 0 && info.step == 43587 && info.n_params == 12780288 &&
          info.has_moments);
    float *mm = NULL, *vv = NULL;
    andrea_model *back = andrea_flat_load(path, &cfg, &mm, &vv, &info);
    CHECK(back != NULL);
    if (back) CHECK(memcmp(back->params, m->params, sizeof(float) * (size_t)m->layout.total) == 0);
    free(mm), free(vv);
    andrea_model_free(back);
    andrea_model_free(m);
    remove(path);
    CHECK(file_size(path) == -1);
}

int main(void) {
    tu_rng_seed(42);
    test_round_trip();
    test_fold();
    test_checkpoint_bridge();
    test_andrea_12m();
    return tu_finish("test_flat");
}
