/* gen_common.c - flag checks, --stop escapes, --logprobs, fitting a prompt into the context
 * and checkpoint opening, shared by generate and chat. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    if (andrea_quant_parse_auto(quant, qkind)) {
        fprintf(stderr, "andrea %s: --quant: %s\n", cmd, andrea_error());
        return -1;
    }
    if (!seed_given) *seed = (uint64_t)time(NULL);
    return 0;
}

int gen_open(const char *cmd, const char *path, int qkind, const char *backend,
             int exact_prefill, gen_session *g) {
    g->tok = NULL;
    g->kv = NULL;
    g->m = cli_model_open(path, NULL, &g->tok); /* any format: checkpoint, safetensors, GGUF, llm.c */
    /* the cache after the move: it lives in the memory of the model's backend */
    if (!g->m || andrea_model_set_backend(g->m, backend) || !(g->kv = andrea_kv_create(g->m)) ||
        andrea_model_quantize(g->m, qkind)) {
        fprintf(stderr, "andrea %s: %s\n", cmd, andrea_error());
        gen_close(g);
        return -1;
    }
    andrea_model_set_exact_prefill(g->m, exact_prefill);
    g->quant = qkind == ANDREA_QUANT_AUTO ? andrea_model_native_quant(g->m) : qkind;
    g->path = qkind == ANDREA_QUANT_AUTO && g->quant != ANDREA_QUANT_NONE ? " (the file's own)" : "";
    return 0;
}

const char *gen_weights_desc(const gen_session *g, char *buf, size_t n) {
    snprintf(buf, n, "%s weights%s%s", andrea_quant_name(g->quant), g->path,
             andrea_model_prefill_blocks(g->m) ? ", prompts in its blocks (int8 inputs)" : "");
    return buf;
}

void gen_close(gen_session *g) {
    andrea_kv_free(g->kv);
    andrea_tokenizer_free(g->tok);
    andrea_model_free(g->m);
    g->kv = NULL;
    g->tok = NULL;
    g->m = NULL;
}

int sampler_flags_check(const char *cmd, const andrea_sampler *s) {
    const char *flag = NULL, *range = NULL;
    double v = 0;
    if (!(s->temperature >= 0)) flag = "--temp", range = ">= 0 (0 = greedy)", v = s->temperature;
    else if (s->top_k < 0) flag = "--top-k", range = ">= 0 (0 = off)", v = s->top_k;
    else if (!(s->top_p > 0 && s->top_p <= 1))
        flag = "--top-p", range = "in (0, 1] (1 = off)", v = s->top_p;
    else if (!(s->min_p >= 0 && s->min_p < 1))
        flag = "--min-p", range = "in [0, 1) (0 = off)", v = s->min_p;
    else if (!(s->repeat_penalty > 0))
        flag = "--repeat-penalty", range = "> 0 (1 = off)", v = s->repeat_penalty;
    else if (s->repeat_last_n < 0) flag = "--repeat-last-n", range = ">= 0", v = s->repeat_last_n;
    if (!flag) return 0;
    fprintf(stderr, "andrea %s: %s must be %s, got %g\n", cmd, flag, range, v);
    return -1;
}

int gen_unescape(const char *cmd, const char *flag, const char *s, char **out) {
    size_t n = strlen(s), k = 0;
    char *r = malloc(n + 1);
    if (!r) {
        fprintf(stderr, "andrea %s: out of memory\n", cmd);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const char *e = s[i] == '\\' && i + 1 < n ? strchr("nrt\\\"'", s[i + 1]) : NULL;
        if (!e || !*e) {
            r[k++] = s[i];
            continue;
        }
        static const char BYTE[] = {'\n', '\r', '\t', '\\', '"', '\''};
        r[k++] = BYTE[e - "nrt\\\"'"];
        i++;
    }
    r[k] = '\0';
    if (k == 0) {
        fprintf(stderr, "andrea %s: %s must not be empty\n", cmd, flag);
        free(r);
        return -1;
    }
    *out = r;
    return 0;
}

int gen_logprobs_parse(const char *cmd, const char *arg, int *n_probs, const char **path) {
    char *end;
    long n = strtol(arg, &end, 10);
    if (*arg && *end == '\0' && arg[0] != '-') { /* a count; "-" and paths go below */
        if (n > 100) {
            fprintf(stderr, "andrea %s: --logprobs must be 0..100 alternatives, got %ld\n", cmd, n);
            return -1;
        }
        *n_probs = (int)n;
        return 0;
    }
    if (*path) {
        fprintf(stderr, "andrea %s: --logprobs FILE and --logprobs-file both name a file\n", cmd);
        return -1;
    }
    *n_probs = 0;
    *path = arg;
    return 0;
}

void gen_fit_context(const char *cmd, int ctx, int n_predict, int shift, andrea_ids *ids) {
    size_t len = ids->len;
    if ((long)len > ctx) {
        int room = n_predict < ctx / 2 ? n_predict : ctx / 2;
        size_t keep = (size_t)(ctx - room);
        memmove(ids->data, ids->data + (len - keep), sizeof(int32_t) * keep);
        ids->len = keep;
        fprintf(stderr, "%s: note: the prompt is %zu tokens, more than the context of %d: cut "
                        "from the left to its last %zu tokens\n", cmd, len, ctx, keep);
    }
    if ((long)ids->len + n_predict > ctx)
        fprintf(stderr, "%s: note: prompt (%zu tokens) + -n %d exceed the context of %d: %s\n", cmd,
                ids->len, n_predict, ctx,
                shift ? "when it is full the window slides (its last half is kept and re-read); "
                        "--no-context-shift stops there instead"
                      : "generation stops when it is full (--no-context-shift)");
}
