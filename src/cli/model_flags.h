/* model_flags.h - the --preset flag and the architecture overrides shared by commands. */
#ifndef ANDREA_CLI_MODEL_FLAGS_H
#define ANDREA_CLI_MODEL_FLAGS_H

#include <stddef.h>

#include "andrea.h"
#include "args.h"

typedef struct {
    const char *preset;
    int n_layer, n_head, d_model, ctx, vocab, bias, tied;
    const char *norm, *act;
    float norm_eps, init_std;
} model_flags;

#define MODEL_FLAG_SPECS(mf)                                                                    \
    {"preset", 0, ARG_STR, &(mf).preset,                                                        \
     "model preset: tiny, baby, andrea-12m, andrea-120m, andrea-480m, gpt2-124m", 0},          \
        {"n-layer", 0, ARG_INT, &(mf).n_layer, "override: number of blocks L", 0},              \
        {"n-head", 0, ARG_INT, &(mf).n_head, "override: attention heads NH", 0},                \
        {"d-model", 0, ARG_INT, &(mf).d_model, "override: channels C (divisible by NH)", 0},    \
        {"ctx", 0, ARG_INT, &(mf).ctx, "override: context length T", 0},                       \
        {"vocab", 0, ARG_INT, &(mf).vocab, "override: vocabulary size V", 0},                   \
        {"norm", 0, ARG_STR, &(mf).norm, "override: layernorm | rmsnorm", 0},                   \
        {"act", 0, ARG_STR, &(mf).act, "override: MLP activation gelu | relu | relu2", 0},      \
        {"bias", 0, ARG_INT, &(mf).bias, "override: 1 = biases on linear layers, 0 = none", 0}, \
        {"tied", 0, ARG_INT, &(mf).tied, "override: 1 = LM head tied to wte, 0 = untied", 0},   \
        {"norm-eps", 0, ARG_FLOAT, &(mf).norm_eps, "override: norm epsilon", 0},                \
        {"init-std", 0, ARG_FLOAT, &(mf).init_std, "override: init std of weight matrices", 0}

/* Builds cfg from the preset (default_preset if none given) and the overrides
 * that were seen. Prints a one-line error and returns -1 on failure. */
int model_flags_apply(const char *cmd, const model_flags *mf, const arg_spec *specs, int n_specs,
                      const char *default_preset, andrea_config *cfg);
/* "--preset NAME" and every architecture flag whose value in cfg differs from the
 * preset's, so that the line rebuilds cfg exactly (reproduce: lines). */
void model_flags_reproduce(const char *preset, const andrea_config *cfg, char *buf, size_t n);
/* Any architecture flag given? */
int model_flags_any(const arg_spec *specs, int n_specs);

#endif
