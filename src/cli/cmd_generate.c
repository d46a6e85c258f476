/* cmd_generate.c - `andrea generate`: KV-cached sampling from a checkpoint, streamed to stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "args.h"
#include "backend_flags.h"
#include "commands.h"
#include "sampler_flags.h"
#include "threads.h"

static void emit_stdout(const void *bytes, size_t n, void *user) {
    (void)user;
    fwrite(bytes, 1, n, stdout);
    fflush(stdout);
}

int cmd_generate(int argc, char **argv) {
    const char *model_path = NULL, *prompt = "", *stop = NULL, *logprobs_path = NULL;
    int n_predict = 256, threads = 0, context_shift = 0;
    uint64_t seed = 0;
    const char *quant = "f32", *backend = NULL;
    int qkind = ANDREA_QUANT_NONE;
    andrea_sampler s;
    andrea_sampler_default(&s);
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &model_path, "checkpoint to sample from", 0},
        {"prompt", 'p', ARG_STR, &prompt, "text to continue (empty: start from BOS)", 0},
        {"n-predict", 'n', ARG_INT, &n_predict, "tokens to generate (256)", 0},
        SAMPLER_FLAG_SPECS(s),
        {"context-shift", 0, ARG_FLAG, &context_shift,
         "when the context is full, keep its last half and go on (default: stop)", 0},
        {"stop", 0, ARG_STR, &stop, "stop when the output contains this text (not printed)", 0},
        {"logprobs", 0, ARG_STR, &logprobs_path, "write each token's log-probability (JSONL) here, - = stderr", 0},
        {"quant", 0, ARG_STR, &quant, "weights for decoding: f32 | bf16 | int8 (f32)", 0},
        {"backend", 0, ARG_STR, &backend, "where the model runs: cpu, cpu-blas, ... (cpu)", 0},
        {"seed", 0, ARG_U64, &seed, "sampling seed (default: from the clock, printed)", 0},
        {"threads", 't', ARG_INT, &threads, "OpenMP threads, 0 = all cores (0)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("generate", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("generate", "-m CKPT [-p TEXT] [-n N] [--temp X] [--top-k K] [--top-p P] ...",
                   specs, n_specs);
        return 0;
    }
    if (r) return 2;
    if (backend_check("generate", backend)) return 2;
    if (gen_flags_check("generate", model_path, n_predict, 0, &s, stop, quant, &qkind,
                        args_seen(specs, n_specs, "seed"), &seed))
        return 2;
    cli_set_threads(threads);

    FILE *lp = NULL;
    if (logprobs_path) {
        lp = strcmp(logprobs_path, "-") == 0 ? stderr : fopen(logprobs_path, "w");
        if (!lp) {
            fprintf(stderr, "andrea generate: cannot write --logprobs file '%s'\n", logprobs_path);
            return 1;
        }
    }
    gen_session gs;
    if (gen_open("generate", model_path, qkind, backend, &gs)) {
        if (lp && lp != stderr) fclose(lp);
        return 1;
    }
    andrea_model *m = gs.m;
    andrea_tokenizer *tok = gs.tok;
    andrea_kv *kv = gs.kv;
    andrea_ids ids = {0};
    int rc = 0;
    if (andrea_tokenizer_encode(tok, prompt, strlen(prompt), 0, &ids)) {
        fprintf(stderr, "andrea generate: %s\n", andrea_error());
        rc = 1;
    } else if ((long)ids.len > andrea_model_config(m)->ctx) {
        fprintf(stderr, "andrea generate: the prompt is %zu tokens, longer than the model's "
                        "context of %d; shorten it\n", ids.len, andrea_model_config(m)->ctx);
        rc = 1;
    }
    if (rc == 0) {
        const andrea_config *c = andrea_model_config(m);
        char desc[256];
        andrea_sampler_describe(&s, desc, sizeof desc);
        fprintf(stderr, "generate: model '%s' (L=%d C=%d T=%d V=%d, %s tokenizer, %s weights) | seed "
                        "%llu | n-predict %d\nsampler: %s%s%s\n", model_path, c->n_layer, c->d_model, c->ctx,
                c->vocab, andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)), quant,
                (unsigned long long)seed, n_predict, desc, stop ? " | stop at " : "",
                stop ? stop : "");
        andrea_rng rng;
        andrea_rng_seed(&rng, seed);
        /* an empty prompt starts from BOS, the document separator */
        int32_t bos = andrea_tokenizer_bos(tok);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        const float *logits = ids.len ? andrea_kv_prefill(m, kv, ids.data, (int)ids.len)
                                      : andrea_kv_step(m, kv, bos);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double t_prompt = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
        fwrite(prompt, 1, strlen(prompt), stdout);
        const char *stops[1] = {stop};
        andrea_gen_options g = {s, n_predict, stops, stop ? 1 : 0, emit_stdout, NULL, lp, ids.data,
                                (int)ids.len, context_shift};
        andrea_gen_result res;
        if (!logits || andrea_generate(m, kv, tok, logits, &g, &rng, &res)) {
            fprintf(stderr, "andrea generate: %s\n", andrea_error());
            rc = 1;
        } else {
            printf("\n");
            fflush(stdout);
            fprintf(stderr, "generate: stopped: %s | %d tokens | prompt %zu tokens in %.3f s | "
                            "%.1f tok/s\n", res.stop_reason, res.n_generated, ids.len, t_prompt,
                    res.n_generated / (res.seconds > 0 ? res.seconds : 1e-9));
        }
    }
    if (lp && lp != stderr) fclose(lp);
    andrea_ids_free(&ids);
    gen_close(&gs);
    return rc;
}
