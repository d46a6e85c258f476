/* sampler_flags.h - what generate and chat share: the sampling flags (llama.cpp's
 * names), their checks, and opening a checkpoint for decoding. */
#ifndef ANDREA_CLI_SAMPLER_FLAGS_H
#define ANDREA_CLI_SAMPLER_FLAGS_H

#include <stdio.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "args.h"

#define SAMPLER_FLAG_SPECS(s)                                                                   \
    {"temp", 0, ARG_FLOAT, &(s).temperature, "temperature, 0 = greedy (0.8)", 0},              \
        {"top-k", 0, ARG_INT, &(s).top_k, "keep the k most likely tokens, 0 = off (0)", 0},     \
        {"top-p", 0, ARG_FLOAT, &(s).top_p, "nucleus: smallest set with this mass, 1 = off", 0}, \
        {"min-p", 0, ARG_FLOAT, &(s).min_p, "drop tokens below min-p x the top one, 0 = off", 0}, \
        {"repeat-penalty", 0, ARG_FLOAT, &(s).repeat_penalty,                                    \
         "divide recent tokens' logits by this, 1 = off (1.0)", 0},                              \
        {"repeat-last-n", 0, ARG_INT, &(s).repeat_last_n, "window of the repeat penalty (64)", 0}

/* Checks -m, -n (>= n_min), the sampler, --stop and --quant (into *qkind), and picks a
 * clock seed when none was given. Prints one line and returns -1 on a bad flag. */
int gen_flags_check(const char *cmd, const char *model_path, int n_predict, int n_min,
                    const andrea_sampler *s, const char *stop, const char *quant, int *qkind,
                    int seed_given, uint64_t *seed);

/* A checkpoint opened for decoding: model (in weight format qkind; ANDREA_QUANT_AUTO: the
 * file's own, andrea_model_native_quant), its tokenizer, a KV cache. On failure prints one
 * line, releases everything and returns -1. */
typedef struct {
    andrea_model *m;
    andrea_tokenizer *tok;
    andrea_kv *kv;
    int quant;        /* the weight format decoding runs in (qkind resolved) */
    const char *path; /* what the banner says about it: andrea_quant_name, "(the file's)" */
} gen_session;
/* --exact-prefill of generate, chat and serve (andrea_model_set_exact_prefill) */
#define EXACT_PREFILL_SPEC(var)                                                               \
    {"exact-prefill", 0, ARG_FLAG, &(var), "with q8_0/q4_0 weights, run a prompt's products " \
     "in f32 on the dequantised weights, not in the blocks with int8 inputs (llama.cpp's way: " \
     "1.1-3x faster at AVX2 and AVX-512 VNNI, q8_0's rounding on each product)", 0}
/* backend: the name (NULL: cpu), already checked with backend_check. */
int gen_open(const char *cmd, const char *path, int qkind, const char *backend,
             int exact_prefill, gen_session *g);
/* "q8_0 weights (the file's own blocks)", "f32 weights", ... for the banners */
const char *gen_weights_desc(const gen_session *g, char *buf, size_t n);
void gen_close(gen_session *g);

/* Each sampler flag against its range; the first bad one is named with its value and the
 * range it must be in, as llama.cpp does. Prints one line and returns -1 on a bad value. */
int sampler_flags_check(const char *cmd, const andrea_sampler *s);

/* s with the escapes \n \t \r \\ \" \' made bytes (llama.cpp's process_escapes); other
 * backslashes are kept. *out is malloc'ed. Prints one line naming flag and returns -1 when
 * the result would be empty. */
int gen_unescape(const char *cmd, const char *flag, const char *s, char **out);

/* --logprobs ARG: a count N (0..100: the alternatives per token, written to stderr unless
 * *path is set) or a FILE (N = 0, written there; "-" = stderr). Returns -1 (printed) on a
 * bad count. */
int gen_logprobs_parse(const char *cmd, const char *arg, int *n_probs, const char **path);

/* Fits a prompt of ids into a context of ctx tokens, as llama.cpp does, with a notice on
 * stderr: a prompt longer than ctx loses its oldest tokens, keeping the last
 * ctx - min(n_predict, ctx / 2) (room to generate before the window slides); when prompt
 * plus n_predict exceed ctx, says that the window will slide (shift) or generation stop. */
void gen_fit_context(const char *cmd, int ctx, int n_predict, int shift, andrea_ids *ids);

#endif
