/*
 * test_model.c - model-level contracts: preset parameter counts (ANDREA-120M's
 * published 98,698,752), config validation, KV-cached decoding equal to the
 * full forward, determinism, discarded gradients overwritten by the next backward
 * exactly as zeroed ones are added to, checkpoint round trip and corruption detection,
 * the learning-rate schedule and the sampler.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "andrea.h"
#include "model/model.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"

static void test_presets(void) {
    andrea_config c;
    CHECK(andrea_config_preset("andrea-120m", &c) == 0);
    andrea_param_counts pc = andrea_config_param_counts(&c);
    /* the model card's 98.7M: embeddings + matrices, norm gains listed apart */
    CHECK(pc.total - pc.norms == 98698752);
    CHECK(pc.norms == 25 * 768);
    CHECK(andrea_config_preset("andrea-12m", &c) == 0);
    pc = andrea_config_param_counts(&c);
    CHECK(pc.total - pc.norms == 12780288); /* 12.8M with V = 2,305 */
    CHECK(andrea_config_preset("andrea-480m", &c) == 0);
    pc = andrea_config_param_counts(&c);
    CHECK(pc.total - pc.norms == 480513024);
    CHECK(andrea_config_preset("gpt2-124m", &c) == 0);
    pc = andrea_config_param_counts(&c);
    CHECK(pc.total == 124439808); /* GPT-2 small, tied head, with biases and LayerNorms */
    CHECK(andrea_config_preset("nope", &c) != 0);
    CHECK(strstr(andrea_error(), "nope") != NULL);
}

static void test_validation(void) {
    andrea_config c;
    andrea_config_preset("tiny", &c);
    c.n_head = 3; /* 32 % 3 != 0 */
    CHECK(andrea_config_validate(&c) != 0);
    CHECK(strstr(andrea_error(), "divisible") != NULL);
    CHECK(andrea_model_create(&c, 1) == NULL);
    andrea_config_preset("tiny", &c);
    c.n_layer = 0;
    CHECK(andrea_config_validate(&c) != 0);
    andrea_config_preset("tiny", &c);
    c.vocab = -5;
    CHECK(andrea_config_validate(&c) != 0);
    andrea_config_preset("tiny", &c);
    c.norm = 9;
    CHECK(andrea_config_validate(&c) != 0);
    int v;
    CHECK(andrea_norm_parse("rmsnorm", &v) == 0 && v == ANDREA_NORM_RMS);
    CHECK(andrea_act_parse("relu2", &v) == 0 && v == ANDREA_ACT_RELU2);
    CHECK(andrea_act_parse("swish", &v) != 0);
}

/* KV-cached logits at every position equal the full forward's (same maths, other code path). */
static void test_kv_matches_forward(int preset_gpt2) {
    andrea_config c;
    andrea_config_preset(preset_gpt2 ? "gpt2-124m" : "tiny", &c);
    c.n_layer = 2; c.n_head = 4; c.d_model = 32; c.ctx = 16; c.vocab = 50;
    andrea_model *m = andrea_model_create(&c, 3);
    int32_t toks[16];
    for (int i = 0; i < 16; i++) toks[i] = (i * 7 + 3) % 50;
    CHECK(andrea_model_forward(m, toks, NULL, 1, 16) == 0.0f);
    float *full = malloc(sizeof(float) * 16 * 50);
    memcpy(full, andrea_model_logits(m), sizeof(float) * 16 * 50);
    andrea_kv *kv = andrea_kv_create(m);
    int32_t toks17[17];
    memcpy(toks17, toks, sizeof toks);
    for (int t = 0; t < 16; t++) {
        const float *lg = andrea_kv_step(m, kv, toks[t]);
        CHECK(lg != NULL);
        /* float32, different summation order: ~1e-6 relative */
        if (lg) tu_check_array("kv logits", lg, full + t * 50, 50, 1e-5, 1e-4);
    }
    CHECK(andrea_kv_step(m, kv, 1) == NULL); /* context full: an error, not a crash */
    /* batched prefill of 10 tokens, then steps: the same logits as the full forward */
    andrea_kv_reset(kv);
    const float *pl = andrea_kv_prefill(m, kv, toks, 10);
    CHECK(pl != NULL && andrea_kv_pos(kv) == 10);
    if (pl) tu_check_array("prefill logits", pl, full + 9 * 50, 50, 1e-5, 1e-4);
    for (int t = 10; t < 16; t++) {
        const float *lg = andrea_kv_step(m, kv, toks[t]);
        if (lg) tu_check_array("steps after prefill", lg, full + t * 50, 50, 1e-5, 1e-4);
    }
    andrea_kv_reset(kv);
    CHECK(andrea_kv_prefill(m, kv, toks17, 17) == NULL); /* longer than the context */
    CHECK(strstr(andrea_error(), "context") != NULL);
    andrea_kv_reset(kv);
    CHECK(andrea_kv_step(m, kv, 99) == NULL); /* out of vocabulary */
    andrea_kv_free(kv);
    free(full);
    andrea_model_free(m);
}

static void test_determinism(void) {
    andrea_config c;
    andrea_config_preset("tiny", &c);
    andrea_model *a = andrea_model_create(&c, 11), *b = andrea_model_create(&c, 11);
    andrea_model *d = andrea_model_create(&c, 12);
    int64_t n = andrea_model_num_params(a);
    CHECK(memcmp(a->params, b->params, sizeof(float) * n) == 0);
    CHECK(memcmp(a->params, d->params, sizeof(float) * n) != 0);
    int32_t x[2 * 32], y[2 * 32];
    for (int i = 0; i < 64; i++) x[i] = (i * 13) % 257, y[i] = (i * 17 + 1) % 257;
    float la = andrea_model_forward(a, x, y, 2, 32), lb = andrea_model_forward(b, x, y, 2, 32);
    CHECK(la == lb);
    CHECK(fabsf(la - logf(257.0f)) < 0.2f); /* fresh init predicts ~uniformly */
    andrea_model_zero_grad(a);
    andrea_model_zero_grad(b);
    andrea_model_backward(a);
    andrea_model_backward(b);
    CHECK(memcmp(andrea_model_grads(a), andrea_model_grads(b), sizeof(float) * n) == 0);
    /* bad inputs are errors */
    x[5] = 999;
    CHECK(isnan(andrea_model_forward(a, x, y, 2, 32)));
    CHECK(strstr(andrea_error(), "vocabulary") != NULL);
    CHECK(isnan(andrea_model_forward(a, x, y, 2, 33)));
    andrea_model_free(a);
    andrea_model_free(b);
    andrea_model_free(d);
}

/* andrea_model_discard_grads + backward (the products overwrite, the rest is zeroed) =
 * zero_grad + backward, whatever the gradients held, over two accumulated micro-batches:
 * tied and untied heads, with and without biases, LayerNorm and RMSNorm. */
static void test_discard_grads(void) {
    for (int variant = 0; variant < 3; variant++) {
        andrea_config c;
        andrea_config_preset("tiny", &c);
        c.tied = variant != 1;
        c.bias = variant != 2;
        c.norm = variant == 2 ? ANDREA_NORM_RMS : ANDREA_NORM_LAYER;
        andrea_model *a = andrea_model_create(&c, 5), *b = andrea_model_create(&c, 5);
        CHECK(a && b);
        if (!a || !b) return;
        int64_t n = andrea_model_num_params(a);
        int32_t x[2 * 16], y[2 * 16];
        andrea_model_zero_grad(a);
        andrea_model_zero_grad(b);
        for (int64_t i = 0; i < n; i++) b->grads[i] = NAN; /* a stale step's leftovers */
        andrea_model_discard_grads(b);
        for (int micro = 0; micro < 2; micro++) {
            for (int i = 0; i < 32; i++) x[i] = (i * 7 + micro) % 257, y[i] = (i * 5 + 3) % 257;
            andrea_model_forward(a, x, y, 2, 16);
            andrea_model_forward(b, x, y, 2, 16);
            CHECK(andrea_model_backward(a) == 0 && andrea_model_backward(b) == 0);
        }
        int64_t same = 0;
        for (int64_t i = 0; i < n; i++) same += a->grads[i] == b->grads[i]; /* NaN: never */
        CHECK(same == n);
        if (same != n) fprintf(stderr, "  variant %d: %lld of %lld gradients differ\n", variant,
                               (long long)(n - same), (long long)n);
        andrea_model_free(a);
        andrea_model_free(b);
    }
}

static void test_checkpoint(void) {
    const char *dir = getenv("ANDREA_TMP") ? getenv("ANDREA_TMP") : "/tmp";
    char cmd[600], path[512];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/model_test.bin", dir);
    andrea_config c;
    andrea_config_preset("tiny", &c);
    c.bias = 1; c.norm = ANDREA_NORM_LAYER;
    andrea_model *m = andrea_model_create(&c, 5);
    int64_t n = andrea_model_num_params(m);
    float *mm = malloc(sizeof(float) * n), *vv = malloc(sizeof(float) * n);
    for (int64_t i = 0; i < n; i++) mm[i] = (float)i, vv[i] = (float)(2 * i);
    andrea_ckpt_state st;
    memset(&st, 0, sizeof st);
    st.step = 77;
    st.data_rng[0] = 123;
    st.data_rng[1] = 456;
    st.lr = 3e-4f;
    st.batch = 9;
    CHECK(andrea_checkpoint_save(path, m, mm, vv, &st, "tok", 3) == 0);
    float *m2, *v2;
    andrea_ckpt_state st2;
    void *blob;
    uint64_t blen;
    andrea_model *r = andrea_checkpoint_load(path, &m2, &v2, &st2, &blob, &blen);
    CHECK(r != NULL);
    if (r) {
        CHECK(memcmp(&r->cfg, &c, sizeof c) == 0);
        CHECK(memcmp(r->params, m->params, sizeof(float) * n) == 0);
        CHECK(memcmp(m2, mm, sizeof(float) * n) == 0 && memcmp(v2, vv, sizeof(float) * n) == 0);
        CHECK(st2.step == 77 && st2.data_rng[1] == 456 && st2.lr == 3e-4f && st2.batch == 9);
        CHECK(blen == 3 && memcmp(blob, "tok", 3) == 0);
        free(m2); free(v2); free(blob);
        andrea_model_free(r);
    }
    /* flip one byte in the weights: the checksum catches it */
    FILE *f = fopen(path, "r+b");
    fseek(f, 600, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 600, SEEK_SET);
    fputc(ch ^ 0x40, f);
    fclose(f);
    CHECK(andrea_checkpoint_load_model(path) == NULL);
    CHECK(strstr(andrea_error(), "checksum") != NULL);
    /* truncation is named as such */
    CHECK(andrea_checkpoint_save(path, m, mm, vv, &st, NULL, 0) == 0);
    CHECK(truncate(path, 1000) == 0);
    CHECK(andrea_checkpoint_load_model(path) == NULL);
    CHECK(strstr(andrea_error(), "truncated") != NULL);
    /* a non-finite model is never saved, and the good file stays */
    CHECK(andrea_checkpoint_save(path, m, mm, vv, &st, NULL, 0) == 0);
    m->params[3] = NAN;
    CHECK(andrea_checkpoint_save(path, m, mm, vv, &st, NULL, 0) != 0);
    CHECK(strstr(andrea_error(), "not finite") != NULL);
    andrea_model *ok = andrea_checkpoint_load_model(path);
    CHECK(ok != NULL);
    andrea_model_free(ok);
    free(mm);
    free(vv);
    andrea_model_free(m);
}

static void test_schedule(void) {
    andrea_train_options o;
    andrea_train_options_default(&o);
    o.lr = 1e-3f; o.lr_min = 1e-4f; o.warmup = 100; o.max_steps = 2000;
    /* step 0: cosine ~ lr, warmup factor 1/100 */
    CHECK_CLOSE(andrea_lr_at(&o, 0), 1e-5, 1e-9, 1e-4);
    /* step 49: cosine value times warmup factor (49 + 1) / 100 */
    double cos49 = 1e-4 + 0.5 * (1e-3 - 1e-4) * (1 + cos(3.14159265358979323846 * 49 / 2000.0));
    CHECK_CLOSE(andrea_lr_at(&o, 49), cos49 * 0.5, 1e-9, 1e-5);
    CHECK_CLOSE(andrea_lr_at(&o, 1000), 0.5 * (1e-3 + 1e-4), 1e-9, 1e-5); /* halfway */
    CHECK_CLOSE(andrea_lr_at(&o, 2000), 1e-4, 1e-9, 1e-5);
    o.warmup = 0;
    CHECK_CLOSE(andrea_lr_at(&o, 0), 1e-3, 1e-9, 1e-5);
}

static void test_sampler(void) {
    float logits[5] = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
    andrea_rng rng;
    andrea_rng_seed(&rng, 1);
    /* {temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n} */
    andrea_sampler greedy = {0.0f, 0, 1.0f, 0.0f, 1.0f, 64};
    CHECK(andrea_sample(logits, 5, &greedy, &rng) == 1); /* first of the tied maxima */
    andrea_sampler k1 = {1.0f, 1, 1.0f, 0.0f, 1.0f, 64};
    for (int i = 0; i < 20; i++) CHECK(andrea_sample(logits, 5, &k1, &rng) == 1);
    andrea_sampler k3 = {1.0f, 3, 1.0f, 0.0f, 1.0f, 64};
    int seen[5] = {0};
    for (int i = 0; i < 2000; i++) seen[andrea_sample(logits, 5, &k3, &rng)]++;
    CHECK(seen[0] == 0 && seen[4] == 0 && seen[1] > 0 && seen[2] > 0 && seen[3] > 0);
    /* frequencies follow softmax: p(3.0) / p(2.0) = e */
    CHECK(fabs((double)seen[1] / seen[2] - exp(1.0)) < 0.5);
    andrea_sampler p = {1.0f, 0, 0.5f, 0.0f, 1.0f, 64}; /* the two 3.0 logits hold ~0.66 of the mass */
    for (int i = 0; i < 200; i++) {
        int t = andrea_sample(logits, 5, &p, &rng);
        CHECK(t == 1 || t == 3);
    }
    /* min-p 0.5: keeps tokens with p >= 0.5 p_max: the two 3.0 logits only (e^-1 < 0.5) */
    andrea_sampler mp = {1.0f, 0, 1.0f, 0.5f, 1.0f, 64};
    for (int i = 0; i < 200; i++) {
        int t = andrea_sample(logits, 5, &mp, &rng);
        CHECK(t == 1 || t == 3);
    }
    /* repeat penalty: with 1 and 3 in the history, 3.0 / 2 = 1.5 < 2.0, so greedy picks 2 */
    andrea_sampler rp = {0.0f, 0, 1.0f, 0.0f, 2.0f, 64};
    int32_t hist[3] = {1, 3, 1};
    CHECK(andrea_sample_ex(logits, 5, &rp, hist, 3, &rng) == 2);
    /* negative logits are multiplied: -1 * 2 = -2 stays the least likely */
    float neg[3] = {-1.0f, -0.5f, -3.0f};
    int32_t h2[1] = {0};
    CHECK(andrea_sample_ex(neg, 3, &rp, h2, 1, &rng) == 1);
    /* the repeat window: a token older than repeat_last_n is not penalised */
    andrea_sampler rp1 = {0.0f, 0, 1.0f, 0.0f, 2.0f, 1};
    int32_t h3[2] = {1, 4};
    CHECK(andrea_sample_ex(logits, 5, &rp1, h3, 2, &rng) == 1);
    CHECK_CLOSE(andrea_logprob(logits, 5, 1), 3.0 - log(exp(1) + 2 * exp(3) + exp(2) + exp(-1)), 1e-6, 1e-6);
}

int main(void) {
    test_presets();
    test_validation();
    test_kv_matches_forward(0);
    test_kv_matches_forward(1);
    test_determinism();
    test_discard_grads();
    test_checkpoint();
    test_schedule();
    test_sampler();
    return tu_finish("test_model");
}
