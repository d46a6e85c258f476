/* model_flags.c - turn --preset and its overrides into a validated config. */
#include "model_flags.h"

#include <stdio.h>
#include <string.h>

static const char *ARCH_FLAGS[] = {"preset", "n-layer", "n-head", "d-model", "ctx", "vocab",
                                   "norm", "act", "bias", "tied", "norm-eps", "init-std"};

int model_flags_any(const arg_spec *specs, int n_specs) {
    for (size_t i = 0; i < sizeof ARCH_FLAGS / sizeof ARCH_FLAGS[0]; i++)
        if (args_seen(specs, n_specs, ARCH_FLAGS[i])) return 1;
    return 0;
}

int model_flags_apply(const char *cmd, const model_flags *mf, const arg_spec *specs, int n_specs,
                      const char *default_preset, andrea_config *cfg) {
    const char *preset = mf->preset ? mf->preset : default_preset;
    if (andrea_config_preset(preset, cfg)) {
        fprintf(stderr, "andrea %s: --preset: %s\n", cmd, andrea_error());
        return -1;
    }
#define OVERRIDE(flag, field)                                   \
    if (args_seen(specs, n_specs, flag)) cfg->field = mf->field
    OVERRIDE("n-layer", n_layer);
    OVERRIDE("n-head", n_head);
    OVERRIDE("d-model", d_model);
    OVERRIDE("ctx", ctx);
    OVERRIDE("vocab", vocab);
    OVERRIDE("bias", bias);
    OVERRIDE("tied", tied);
    OVERRIDE("norm-eps", norm_eps);
    OVERRIDE("init-std", init_std);
#undef OVERRIDE
    if (mf->norm && andrea_norm_parse(mf->norm, &cfg->norm)) {
        fprintf(stderr, "andrea %s: --norm: %s\n", cmd, andrea_error());
        return -1;
    }
    if (mf->act && andrea_act_parse(mf->act, &cfg->act)) {
        fprintf(stderr, "andrea %s: --act: %s\n", cmd, andrea_error());
        return -1;
    }
    if (andrea_config_validate(cfg)) {
        fprintf(stderr, "andrea %s: %s\n", cmd, andrea_error());
        return -1;
    }
    return 0;
}

void model_flags_reproduce(const char *preset, const andrea_config *cfg, char *buf, size_t n) {
    andrea_config base;
    size_t len = (size_t)snprintf(buf, n, "--preset %s", preset);
    if (andrea_config_preset(preset, &base)) return;
#define APPEND(...)                                                                 \
    if (len < n) len += (size_t)snprintf(buf + len, n - len, __VA_ARGS__)
#define INT_FLAG(flag, field)                                                       \
    if (cfg->field != base.field) APPEND(" --" flag " %d", (int)cfg->field)
    INT_FLAG("n-layer", n_layer);
    INT_FLAG("n-head", n_head);
    INT_FLAG("d-model", d_model);
    INT_FLAG("ctx", ctx);
    INT_FLAG("vocab", vocab);
    if (cfg->norm != base.norm) APPEND(" --norm %s", andrea_norm_name(cfg->norm));
    if (cfg->act != base.act) APPEND(" --act %s", andrea_act_name(cfg->act));
    INT_FLAG("bias", bias);
    INT_FLAG("tied", tied);
    /* %.9g: every float32 prints back to itself */
    if (cfg->norm_eps != base.norm_eps) APPEND(" --norm-eps %.9g", (double)cfg->norm_eps);
    if (cfg->init_std != base.init_std) APPEND(" --init-std %.9g", (double)cfg->init_std);
#undef INT_FLAG
#undef APPEND
}
