/* gen_common.c - flag checks and checkpoint opening shared by generate and chat. */
#include <stdio.h>
#include <time.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "model_open.h"
#include "sampler_flags.h"

int gen_flags_check(const char *cmd, const char *model_path, int n_predict, int n_min,
                    const andrea_sampler *s, const char *stop, const char *quant, int *qkind,
                    int seed_given, uint64_t *seed) {
    if (!model_path) {
        fprintf(stderr, "andrea %s: no model given (use -m CKPT)\n", cmd);
        return -1;
    }
    if (n_predict < n_min) {
        fprintf(stderr, "andrea %s: --n-predict must be >= %d\n", cmd, n_min);
        return -1;
    }
    if (sampler_flags_check(cmd, s)) return -1;
    if (stop && !*stop) {
        fprintf(stderr, "andrea %s: --stop must not be empty\n", cmd);
        return -1;
    }
    if (andrea_quant_parse(quant, qkind)) {
        fprintf(stderr, "andrea %s: --quant: %s\n", cmd, andrea_error());
        return -1;
    }
    if (!seed_given) *seed = (uint64_t)time(NULL);
    return 0;
}

int gen_open(const char *cmd, const char *path, int qkind, const char *backend, gen_session *g) {
    g->tok = NULL;
    g->kv = NULL;
    g->m = cli_model_open(path, NULL, &g->tok); /* any format: checkpoint, safetensors, GGUF, llm.c */
    if (g->m) g->kv = andrea_kv_create(g->m);
    if (!g->m || !g->kv || andrea_model_set_backend(g->m, backend) ||
        andrea_model_quantize(g->m, qkind)) {
        fprintf(stderr, "andrea %s: %s\n", cmd, andrea_error());
        gen_close(g);
        return -1;
    }
    return 0;
}

void gen_close(gen_session *g) {
    andrea_kv_free(g->kv);
    andrea_tokenizer_free(g->tok);
    andrea_model_free(g->m);
    g->kv = NULL;
    g->tok = NULL;
    g->m = NULL;
}
