/* fmt_names.c - andrea's tensor names in Hugging Face's GPT-2 scheme and in GGUF's.
 *
 *   andrea            HF GPT-2 (Conv1D: (in, out))     GGUF gpt2 (ggml dims reversed)
 *   wte               wte.weight                       token_embd.weight
 *   wpe               wpe.weight                       position_embd.weight
 *   h.N.ln1.w/.b      h.N.ln_1.weight/bias             blk.N.attn_norm.weight/bias
 *   h.N.attn.wqkv     h.N.attn.c_attn.weight  (T)      blk.N.attn_qkv.weight
 *   h.N.attn.bqkv     h.N.attn.c_attn.bias             blk.N.attn_qkv.bias
 *   h.N.attn.wo/.bo   h.N.attn.c_proj.weight (T)/bias  blk.N.attn_output.weight/bias
 *   h.N.ln2.w/.b      h.N.ln_2.weight/bias             blk.N.ffn_norm.weight/bias
 *   h.N.mlp.wfc/.bfc  h.N.mlp.c_fc.weight (T)/bias     blk.N.ffn_up.weight/bias
 *   h.N.mlp.wproj/... h.N.mlp.c_proj.weight (T)/bias   blk.N.ffn_down.weight/bias
 *   lnf.w/.b          ln_f.weight/bias                 output_norm.weight/bias
 *   lm_head           lm_head.weight (nn.Linear)       output.weight
 * GGUF lists dims fastest first, so our row-major (rows, cols) is ggml's {cols, rows}:
 * no transpose there. */
#include <stdio.h>
#include <string.h>

#include "formats/fmt.h"

typedef struct {
    const char *ours, *hf, *gguf;
    int transposed; /* in HF's scheme */
} name_row;

static const name_row LAYER_NAMES[] = {
    {"ln1.w", "ln_1.weight", "attn_norm.weight", 0},
    {"ln1.b", "ln_1.bias", "attn_norm.bias", 0},
    {"attn.wqkv", "attn.c_attn.weight", "attn_qkv.weight", 1},
    {"attn.bqkv", "attn.c_attn.bias", "attn_qkv.bias", 0},
    {"attn.wo", "attn.c_proj.weight", "attn_output.weight", 1},
    {"attn.bo", "attn.c_proj.bias", "attn_output.bias", 0},
    {"ln2.w", "ln_2.weight", "ffn_norm.weight", 0},
    {"ln2.b", "ln_2.bias", "ffn_norm.bias", 0},
    {"mlp.wfc", "mlp.c_fc.weight", "ffn_up.weight", 1},
    {"mlp.bfc", "mlp.c_fc.bias", "ffn_up.bias", 0},
    {"mlp.wproj", "mlp.c_proj.weight", "ffn_down.weight", 1},
    {"mlp.bproj", "mlp.c_proj.bias", "ffn_down.bias", 0},
};

static const name_row TOP_NAMES[] = {
    {"wte", "wte.weight", "token_embd.weight", 0},
    {"wpe", "wpe.weight", "position_embd.weight", 0},
    {"lnf.w", "ln_f.weight", "output_norm.weight", 0},
    {"lnf.b", "ln_f.bias", "output_norm.bias", 0},
    {"lm_head", "lm_head.weight", "output.weight", 0},
};

int andrea_fmt_foreign_name(const char *name, int scheme, char *out, size_t n, int *transposed) {
    *transposed = 0;
    int layer, used = 0;
    if (sscanf(name, "h.%d.%n", &layer, &used) == 1 && used > 0) {
        for (size_t i = 0; i < sizeof LAYER_NAMES / sizeof LAYER_NAMES[0]; i++)
            if (strcmp(name + used, LAYER_NAMES[i].ours) == 0) {
                if (scheme == ANDREA_SCHEME_HF) {
                    *transposed = LAYER_NAMES[i].transposed;
                    snprintf(out, n, "h.%d.%s", layer, LAYER_NAMES[i].hf);
                } else {
                    snprintf(out, n, "blk.%d.%s", layer, LAYER_NAMES[i].gguf);
                }
                return 0;
            }
        return -1;
    }
    for (size_t i = 0; i < sizeof TOP_NAMES / sizeof TOP_NAMES[0]; i++)
        if (strcmp(name, TOP_NAMES[i].ours) == 0) {
            snprintf(out, n, "%s", scheme == ANDREA_SCHEME_HF ? TOP_NAMES[i].hf : TOP_NAMES[i].gguf);
            return 0;
        }
    return -1;
}

int andrea_fmt_is_gpt2(const andrea_config *c) {
    return c->norm == ANDREA_NORM_LAYER && c->act == ANDREA_ACT_GELU && c->bias == 1 &&
           c->tied == 1;
}
