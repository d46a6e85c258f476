/* test_decode.h - what the weight-format decode tests share: the tiny GPT-2-style config
 * that GGUF can carry, greedy KV-cached decoding that keeps every step's logits, and the
 * check that a file's own weight format decodes as its dequantised f32 weights. */
#ifndef ANDREA_TEST_DECODE_H
#define ANDREA_TEST_DECODE_H

#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "model/model.h"
#include "test_util.h"

/* The "tiny" preset as GPT-2's architecture (LayerNorm, GELU, biases, tied head). */
static inline andrea_config td_gpt2_tiny(void) {
    andrea_config c;
    andrea_config_preset("tiny", &c);
    c.norm = ANDREA_NORM_LAYER;
    c.act = ANDREA_ACT_GELU;
    c.bias = 1;
    c.tied = 1;
    return c;
}

static inline int td_argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) b = v[i] > v[b] ? i : b;
    return b;
}

/* Greedy decoding of n tokens from `first` in weight format kind; the tokens in ids,
 * every step's logits in lg (n, V). */
static inline void td_decode(andrea_model *m, int kind, int first, int n, int32_t *ids, float *lg) {
    CHECK(andrea_model_quantize(m, kind) == 0);
    int V = andrea_model_config(m)->vocab;
    andrea_kv *kv = andrea_kv_create(m);
    int tok = first;
    for (int t = 0; t < n && kv; t++) {
        const float *l = andrea_kv_step(m, kv, tok);
        CHECK(l != NULL);
        if (!l) break;
        memcpy(lg + (size_t)t * V, l, sizeof(float) * (size_t)V);
        ids[t] = tok = td_argmax(l, V);
    }
    andrea_kv_free(kv);
}

/* A model read from a file in weight format kind (its own, --quant auto) decodes 24
 * greedy steps to the logits and tokens of the same weights in f32: equal to the bit on
 * the vector ISAs (the tolerance: the baseline's float noise). */
static inline void td_same_as_f32(andrea_model *q, int kind, const char *what) {
    enum { STEPS = 24 };
    int V = andrea_model_config(q)->vocab;
    float *lq = malloc(sizeof(float) * STEPS * (size_t)V), *lf = malloc(sizeof(float) * STEPS * (size_t)V);
    int32_t iq[STEPS], iff[STEPS];
    CHECK(lq && lf);
    if (lq && lf) {
        td_decode(q, ANDREA_QUANT_AUTO, 1, STEPS, iq, lq);
        CHECK(q->quant == kind); /* the path that ran */
        td_decode(q, ANDREA_QUANT_NONE, 1, STEPS, iff, lf);
        CHECK(tu_check_array(what, lq, lf, (size_t)STEPS * V, 1e-5, 1e-5));
        CHECK(memcmp(iq, iff, sizeof iq) == 0);
    }
    free(lq);
    free(lf);
}

/* The test's scratch folder, made: $ANDREA_TMP or /tmp/<name>; 0 when it is there. */
static inline int td_scratch_dir(const char *name, char *dir, size_t size) {
    const char *base = getenv("ANDREA_TMP");
    char cmd[1200];
    if (base) snprintf(dir, size, "%s", base);
    else snprintf(dir, size, "/tmp/%s", name);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    return system(cmd) != 0;
}

#endif
