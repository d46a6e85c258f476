/* cmd_generate.c - `andrea generate`: KV-cached sampling from a checkpoint, streamed to stdout.
 * As llama.cpp's CLI: -f FILE prompts, --stop with escapes (\n), --logprobs N alternatives,
 * a prompt longer than the context cut from the left and the window sliding when prompt
 * plus -n exceed it (each with a notice on stderr; --no-context-shift stops instead). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "andrea.h"
#include "util/atomic_file.h"
#include "util/file.h"
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
    const char *model_path = NULL, *prompt = "", *stop = NULL, *logprobs_arg = NULL,
               *prompt_file = NULL, *logprobs_path = NULL;
    int n_predict = 256, threads = 0, context_shift = 0, no_context_shift = 0, n_probs = 0;
    uint64_t seed = 0;
    int exact_prefill = 0;
    const char *quant = "auto", *backend = NULL;
    int qkind = ANDREA_QUANT_NONE;
    andrea_sampler s;
    andrea_sampler_default(&s);
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &model_path, "checkpoint to sample from", 0},
        {"prompt", 'p', ARG_STR, &prompt, "text to continue (empty: start from BOS)", 0},
        {"file", 'f', ARG_STR, &prompt_file, "read the prompt from this file", 0},
        {"n-predict", 'n', ARG_INT, &n_predict, "tokens to generate (256)", 0},
        SAMPLER_FLAG_SPECS(s),
        {"context-shift", 0, ARG_FLAG, &context_shift,
         "when the context is full, keep its last half and go on (the default)", 0},
        {"no-context-shift", 0, ARG_FLAG, &no_context_shift,
         "when the context is full, stop instead of sliding the window", 0},
        {"stop", 0, ARG_STR, &stop, "stop when the output contains this text (not printed); "
                                    "escapes \\n \\t \\r \\\\ \\\" \\'", 0},
        {"logprobs", 0, ARG_STR, &logprobs_arg, "N: each token's log-probability and the N most "
         "likely alternatives (JSONL, to stderr or --logprobs-file); FILE: the same with N = 0 "
         "into FILE (- = stderr)", 0},
        {"logprobs-file", 0, ARG_STR, &logprobs_path, "where --logprobs N writes (stderr)", 0},
        EXACT_PREFILL_SPEC(exact_prefill),
        {"quant", 0, ARG_STR, &quant, "weights for decoding: auto (the file's own: f16, q8_0 or q4_0 for such a GGUF, else f32) | f32 | f16 | bf16 | int8 | q8_0 | q4_0 (auto)", 0},
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
    if (prompt_file && args_seen(specs, n_specs, "prompt")) {
        fprintf(stderr, "andrea generate: give the prompt with -p or -f, not both\n");
        return 2;
    }
    if (context_shift && no_context_shift) {
        fprintf(stderr, "andrea generate: --context-shift and --no-context-shift contradict\n");
        return 2;
    }
    if (logprobs_arg && gen_logprobs_parse("generate", logprobs_arg, &n_probs, &logprobs_path))
        return 2;
    char *stop_text = NULL; /* --stop with its escapes turned into bytes */
    const char *stop_arg = stop; /* as typed, for the banner */
    if (stop && gen_unescape("generate", "--stop", stop, &stop_text)) return 2;
    stop = stop_text;
    if (gen_flags_check("generate", model_path, n_predict, 0, &s, stop, quant, &qkind,
                        args_seen(specs, n_specs, "seed"), &seed))
        goto flags_failed;
    cli_set_threads(threads);
    andrea_bytes prompt_bytes = {0};
    if (prompt_file) {
        if (andrea_file_read(prompt_file, &prompt_bytes)) {
            fprintf(stderr, "andrea generate: -f: %s\n", andrea_error());
            goto flags_failed;
        }
        prompt = (const char *)prompt_bytes.data; /* NUL-ended by andrea_file_read */
    }

    FILE *lp = NULL;
    if (logprobs_path) {
        lp = strcmp(logprobs_path, "-") == 0 ? stderr : andrea_output_fopen(logprobs_path, "w");
        if (!lp) {
            fprintf(stderr, "andrea generate: --logprobs: %s\n", andrea_error());
            andrea_bytes_free(&prompt_bytes);
            free(stop_text);
            return 1;
        }
    } else if (logprobs_arg) {
        lp = stderr;
    }
    gen_session gs;
    if (gen_open("generate", model_path, qkind, backend, exact_prefill, &gs)) {
        if (lp && lp != stderr) fclose(lp);
        andrea_bytes_free(&prompt_bytes);
        free(stop_text);
        return 1;
    }
    andrea_model *m = gs.m;
    andrea_tokenizer *tok = gs.tok;
    andrea_kv *kv = gs.kv;
    andrea_ids ids = {0};
    int rc = 0;
    int shift = !no_context_shift;
    if (andrea_tokenizer_encode(tok, prompt, strlen(prompt), 0, &ids)) {
        fprintf(stderr, "andrea generate: %s\n", andrea_error());
        rc = 1;
    } else {
        gen_fit_context("generate", andrea_model_config(m)->ctx, n_predict, shift, &ids);
    }
    if (rc == 0) {
        const andrea_config *c = andrea_model_config(m);
        char desc[256], wdesc[96];
        andrea_sampler_describe(&s, desc, sizeof desc);
        fprintf(stderr, "generate: model '%s' (L=%d C=%d T=%d V=%d, %s tokenizer, %s) | seed "
                        "%llu | n-predict %d\nsampler: %s%s%s\n", model_path, c->n_layer, c->d_model, c->ctx,
                c->vocab, andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)),
                gen_weights_desc(&gs, wdesc, sizeof wdesc),
                (unsigned long long)seed, n_predict, desc, stop ? " | stop at " : "",
                stop ? stop_arg : "");
        andrea_rng rng;
        andrea_rng_seed(&rng, seed);
        /* an empty prompt starts from BOS, the document separator */
        int32_t bos = andrea_tokenizer_bos(tok);
        struct timespec t0, t1;
        /* the prompt's buffers before the clock, as llama.cpp's context creation has them:
         * the time printed is the prompt's computation (a failure shows in the prefill) */
        if (ids.len > 1) (void)andrea_prefill_reserve(m, (int)ids.len);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        const float *logits = ids.len ? andrea_kv_prefill(m, kv, ids.data, (int)ids.len)
                                      : andrea_kv_step(m, kv, bos);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double t_prompt = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
        fwrite(prompt, 1, strlen(prompt), stdout);
        const char *stops[1] = {stop};
        andrea_gen_options g = {s, n_predict, stops, stop ? 1 : 0, emit_stdout, NULL, lp, ids.data,
                                (int)ids.len, shift, n_probs};
        andrea_gen_result res;
        if (!logits || andrea_generate(m, kv, tok, logits, &g, &rng, &res)) {
            fprintf(stderr, "andrea generate: %s\n", andrea_error());
            rc = 1;
        } else {
            printf("\n");
            fflush(stdout);
            fprintf(stderr, "generate: stopped: %s | %d tokens | prompt %zu tokens in %.4f s | "
                            "%.1f tok/s\n", res.stop_reason, res.n_generated, ids.len, t_prompt,
                    res.n_generated / (res.seconds > 0 ? res.seconds : 1e-9));
        }
    }
    if (lp && lp != stderr) fclose(lp);
    andrea_ids_free(&ids);
    gen_close(&gs);
    andrea_bytes_free(&prompt_bytes);
    free(stop_text);
    return rc;
flags_failed:
    free(stop_text);
    return 2;
}
