/*
 * config.c - model configurations: presets, validation, the parameter layout
 * (one table drives allocation, counts, checkpoints and `andrea info`), and
 * memory estimates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "util/error.h"

typedef struct {
    const char *name;
    andrea_config cfg;
} preset;

/* ANDREA presets: learned positions, pre-norm RMSNorm with a gain, no biases,
 * untied head, ReLU^2 MLP (see docs/model.md for why each). */
#define ANDREA_ARCH ANDREA_NORM_RMS, ANDREA_ACT_RELU2, 0, 0, 1e-5f, 0.02f
static const preset PRESETS[] = {
    /* tiny: for tests and gradient checks */
    {"tiny", {2, 2, 32, 32, ANDREA_BYTE_VOCAB, ANDREA_ARCH}},
    /* the shapes of nanoGPT's CPU "baby" shakespeare_char recipe, ANDREA's architecture
     * (nanoGPT's own: --norm layernorm --act gelu --tied 1) */
    {"baby", {4, 4, 128, 64, ANDREA_BYTE_VOCAB, ANDREA_ARCH}},
    {"andrea-12m", {6, 12, 384, 1024, 2305, ANDREA_ARCH}},
    {"andrea-120m", {12, 12, 768, 1024, 8449, ANDREA_ARCH}},
    {"andrea-480m", {16, 24, 1536, 1024, 8449, ANDREA_ARCH}},
    /* GPT-2 small exactly: LayerNorm with bias, GELU-tanh, biases, tied head */
    {"gpt2-124m", {12, 12, 768, 1024, 50257, ANDREA_NORM_LAYER, ANDREA_ACT_GELU, 1, 1, 1e-5f, 0.02f}},
};
#define N_PRESETS (int)(sizeof PRESETS / sizeof PRESETS[0])

static const char *const PRESET_NAMES[] = {"tiny", "baby", "andrea-12m", "andrea-120m",
                                           "andrea-480m", "gpt2-124m", NULL};

const char *const *andrea_config_preset_names(void) { return PRESET_NAMES; }

int andrea_config_preset(const char *name, andrea_config *out) {
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(PRESETS[i].name, name) == 0) {
            *out = PRESETS[i].cfg;
            return 0;
        }
    return andrea_set_error("unknown preset '%s' (known: tiny, baby, andrea-12m, andrea-120m, "
                            "andrea-480m, gpt2-124m)", name);
}

static const char *NORM_NAMES[] = {"layernorm", "rmsnorm"};
static const char *ACT_NAMES[] = {"gelu", "relu", "relu2"};

const char *andrea_norm_name(int norm) {
    return norm >= 0 && norm < 2 ? NORM_NAMES[norm] : "?";
}
const char *andrea_act_name(int act) { return act >= 0 && act < 3 ? ACT_NAMES[act] : "?"; }

int andrea_norm_parse(const char *s, int *out) {
    for (int i = 0; i < 2; i++)
        if (strcmp(s, NORM_NAMES[i]) == 0) return *out = i, 0;
    return andrea_set_error("unknown norm '%s' (expected layernorm or rmsnorm)", s);
}

int andrea_act_parse(const char *s, int *out) {
    if (strcmp(s, "gelu-tanh") == 0) return *out = ANDREA_ACT_GELU, 0;
    for (int i = 0; i < 3; i++)
        if (strcmp(s, ACT_NAMES[i]) == 0) return *out = i, 0;
    return andrea_set_error("unknown activation '%s' (expected gelu, relu or relu2)", s);
}

int andrea_config_validate(const andrea_config *c) {
    if (c->n_layer <= 0 || c->n_head <= 0 || c->d_model <= 0 || c->ctx <= 0 || c->vocab <= 0)
        return andrea_set_error("invalid config: n_layer=%d n_head=%d d_model=%d ctx=%d vocab=%d "
                                "must all be positive", c->n_layer, c->n_head, c->d_model,
                                c->ctx, c->vocab);
    if (c->d_model % c->n_head != 0)
        return andrea_set_error("invalid config: d_model %d is not divisible by n_head %d",
                                c->d_model, c->n_head);
    if (c->norm != ANDREA_NORM_LAYER && c->norm != ANDREA_NORM_RMS)
        return andrea_set_error("invalid config: unknown norm %d", c->norm);
    if (c->act < ANDREA_ACT_GELU || c->act > ANDREA_ACT_RELU2)
        return andrea_set_error("invalid config: unknown activation %d", c->act);
    if ((c->bias != 0 && c->bias != 1) || (c->tied != 0 && c->tied != 1))
        return andrea_set_error("invalid config: bias and tied must be 0 or 1");
    if (!(c->norm_eps > 0.0f) || !(c->init_std > 0.0f))
        return andrea_set_error("invalid config: norm_eps and init_std must be positive");
    /* Keep every tensor and activation index inside int64 and every dimension inside int. */
    if (c->n_layer > 4096 || c->d_model > 65536 || c->ctx > 1 << 20 || c->vocab > 1 << 24 ||
        c->n_head > c->d_model)
        return andrea_set_error("invalid config: sizes too large (n_layer %d, d_model %d, ctx %d, "
                                "vocab %d)", c->n_layer, c->d_model, c->ctx, c->vocab);
    return 0;
}

/* ---- the parameter layout -------------------------------------------------------- */

static void add(andrea_layout *lay, const char *name, int rows, int cols, int decay, int group) {
    andrea_tensor_info *t = &lay->t[lay->n];
    andrea_tensor_group *g = &lay->group[lay->n];
    snprintf(lay->names[lay->n], sizeof lay->names[0], "%s", name);
    t->name = lay->names[lay->n];
    t->rows = rows;
    t->cols = cols;
    t->size = (int64_t)rows * (cols ? cols : 1);
    t->offset = lay->total;
    t->decay = decay;
    *g = (andrea_tensor_group)group;
    lay->total += t->size;
    lay->n++;
}

int andrea_layout_build(const andrea_config *c, andrea_layout *lay) {
    if (andrea_config_validate(c)) return -1;
    int L = c->n_layer, C = c->d_model, V = c->vocab, T = c->ctx;
    int n_max = 3 + L * 14 + 3;
    memset(lay, 0, sizeof *lay);
    lay->t = calloc((size_t)n_max, sizeof *lay->t);
    lay->group = calloc((size_t)n_max, sizeof *lay->group);
    lay->names = calloc((size_t)n_max, sizeof *lay->names);
    if (!lay->t || !lay->group || !lay->names) {
        andrea_layout_free(lay);
        return andrea_set_error("out of memory building the parameter layout");
    }
    int ln_bias = c->norm == ANDREA_NORM_LAYER && c->bias;
    char nm[48];
    add(lay, "wte", V, C, 1, GROUP_EMBED);
    add(lay, "wpe", T, C, 1, GROUP_EMBED);
    for (int l = 0; l < L; l++) {
#define ADD(suffix, r, cl, decay, group) \
    snprintf(nm, sizeof nm, "h.%d.%s", l, suffix), add(lay, nm, r, cl, decay, group)
        ADD("ln1.w", C, 0, 0, GROUP_NORM);
        if (ln_bias) ADD("ln1.b", C, 0, 0, GROUP_NORM);
        ADD("attn.wqkv", 3 * C, C, 1, GROUP_ATTN);
        if (c->bias) ADD("attn.bqkv", 3 * C, 0, 0, GROUP_ATTN);
        ADD("attn.wo", C, C, 1, GROUP_ATTN);
        if (c->bias) ADD("attn.bo", C, 0, 0, GROUP_ATTN);
        ADD("ln2.w", C, 0, 0, GROUP_NORM);
        if (ln_bias) ADD("ln2.b", C, 0, 0, GROUP_NORM);
        ADD("mlp.wfc", 4 * C, C, 1, GROUP_MLP);
        if (c->bias) ADD("mlp.bfc", 4 * C, 0, 0, GROUP_MLP);
        ADD("mlp.wproj", C, 4 * C, 1, GROUP_MLP);
        if (c->bias) ADD("mlp.bproj", C, 0, 0, GROUP_MLP);
#undef ADD
    }
    add(lay, "lnf.w", C, 0, 0, GROUP_NORM);
    if (ln_bias) add(lay, "lnf.b", C, 0, 0, GROUP_NORM);
    if (!c->tied) add(lay, "lm_head", V, C, 1, GROUP_HEAD);
    return 0;
}

int andrea_vocab_padded(int V, int multiple) {
    if (multiple <= 1 || V % multiple == 0) return V;
    return (V / multiple + 1) * multiple;
}

void andrea_head_pad_plan(const andrea_config *c, int multiple, andrea_head_pad *hp) {
    int V = c->vocab, Vp = andrea_vocab_padded(V, multiple);
    int64_t extra = (int64_t)(Vp - V) * c->d_model;
    hp->V = V;
    hp->Vp = Vp;
    /* tied: the parameters after wte serve as its extra rows, as far as they reach */
    int64_t follow = c->tied ? andrea_config_param_counts(c).total - (int64_t)V * c->d_model : 0;
    hp->after = extra > follow ? extra - follow : 0;
}

void andrea_layout_free(andrea_layout *lay) {
    free(lay->t);
    free(lay->group);
    free(lay->names);
    memset(lay, 0, sizeof *lay);
}

andrea_param_counts andrea_config_param_counts(const andrea_config *cfg) {
    andrea_param_counts pc = {0, 0, 0, 0, 0, 0};
    andrea_layout lay;
    if (andrea_layout_build(cfg, &lay)) return pc;
    for (int i = 0; i < lay.n; i++) {
        int64_t s = lay.t[i].size;
        switch (lay.group[i]) {
        case GROUP_EMBED: pc.embeddings += s; break;
        case GROUP_ATTN: pc.attention += s; break;
        case GROUP_MLP: pc.mlp += s; break;
        case GROUP_HEAD: pc.head += s; break;
        case GROUP_NORM: pc.norms += s; break;
        }
    }
    pc.total = lay.total;
    andrea_layout_free(&lay);
    return pc;
}

int64_t andrea_activation_floats(const andrea_config *c, int B, int T, int flash,
                                 andrea_act_sizes *s) {
    int64_t BT = (int64_t)B * T, C = c->d_model, L = c->n_layer, NH = c->n_head;
    andrea_act_sizes z;
    z.encoded = BT * C;
    z.ln1 = L * BT * C;
    z.ln1_mean = L * BT;
    z.ln1_rstd = L * BT;
    z.qkv = L * BT * 3 * C;
    z.att = flash ? L * B * NH * (int64_t)T : L * B * NH * (int64_t)T * T;
    z.atty = L * BT * C;
    z.res2 = L * BT * C;
    z.ln2 = L * BT * C;
    z.ln2_mean = L * BT;
    z.ln2_rstd = L * BT;
    z.fch = L * BT * 4 * C;
    z.fch_act = L * BT * 4 * C;
    z.res3 = L * BT * C;
    z.lnf = BT * C;
    z.lnf_mean = BT;
    z.lnf_rstd = BT;
    z.logits = BT * c->vocab;
    z.losses = BT;
    z.dres = BT * C;
    z.dln = BT * C;
    z.dqkv = BT * 3 * C;
    z.datty = BT * C;
    z.dfch = BT * 4 * C;
    if (s) *s = z;
    int64_t total = 0;
    const int64_t *p = (const int64_t *)&z;
    for (size_t i = 0; i < sizeof z / sizeof(int64_t); i++) total += p[i];
    return total;
}

andrea_memory andrea_config_memory(const andrea_config *cfg, int B, int T) {
    andrea_memory mem = {0, 0, 0, 0};
    andrea_param_counts pc = andrea_config_param_counts(cfg);
    mem.weights = pc.total * 4;
    mem.grads = pc.total * 4;
    mem.optimizer = pc.total * 8;
    mem.activations = andrea_activation_floats(cfg, B, T, 1, NULL) * 4; /* training: flash */
    return mem;
}
