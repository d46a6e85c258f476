/* cmd_generate.c - `andrea generate`: KV-cached sampling from a checkpoint, streamed to stdout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "args.h"
#include "commands.h"
#include "threads.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cmd_generate(int argc, char **argv) {
    const char *model_path = NULL, *prompt = "";
    int n_predict = 256, top_k = 0, threads = 0;
    float temp = 0.8f, top_p = 1.0f;
    uint64_t seed = 0;
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &model_path, "checkpoint to sample from", 0},
        {"prompt", 'p', ARG_STR, &prompt, "text to continue (empty: start from BOS)", 0},
        {"n-predict", 'n', ARG_INT, &n_predict, "tokens to generate (256)", 0},
        {"temp", 0, ARG_FLOAT, &temp, "temperature, 0 = greedy (0.8)", 0},
        {"top-k", 0, ARG_INT, &top_k, "keep the k most likely tokens, 0 = off (0)", 0},
        {"top-p", 0, ARG_FLOAT, &top_p, "nucleus: smallest set with this mass, 1 = off (1.0)", 0},
        {"seed", 0, ARG_U64, &seed, "sampling seed (default: from the clock, printed)", 0},
        {"threads", 't', ARG_INT, &threads, "OpenMP threads, 0 = all cores (0)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("generate", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("generate", "-m CKPT [-p TEXT] [-n N] [--temp X] [--top-k K] [--top-p P]", specs,
                   n_specs);
        return 0;
    }
    if (r) return 2;
    if (!model_path) {
        fprintf(stderr, "andrea generate: no model given (use -m CKPT)\n");
        return 2;
    }
    if (n_predict < 0 || temp < 0 || top_k < 0 || !(top_p > 0 && top_p <= 1)) {
        fprintf(stderr, "andrea generate: need --n-predict >= 0, --temp >= 0, --top-k >= 0 and "
                        "0 < --top-p <= 1\n");
        return 2;
    }
    if (!args_seen(specs, n_specs, "seed")) seed = (uint64_t)time(NULL);
    cli_set_threads(threads);

    andrea_tokenizer *tok = NULL;
    andrea_model *m = andrea_checkpoint_load_with_tokenizer(model_path, &tok);
    if (!m) {
        fprintf(stderr, "andrea generate: %s\n", andrea_error());
        return 1;
    }
    const andrea_config *c = andrea_model_config(m);
    andrea_kv *kv = andrea_kv_create(m);
    andrea_ids ids = {0};
    int rc = 0;
    if (!kv || andrea_tokenizer_encode(tok, prompt, strlen(prompt), 0, &ids)) {
        fprintf(stderr, "andrea generate: %s\n", andrea_error());
        rc = 1;
    } else if ((long)ids.len > c->ctx) {
        fprintf(stderr, "andrea generate: the prompt is %zu tokens, longer than the model's "
                        "context of %d; shorten it\n", ids.len, c->ctx);
        rc = 1;
    }
    if (rc) {
        andrea_ids_free(&ids);
        andrea_kv_free(kv);
        andrea_tokenizer_free(tok);
        andrea_model_free(m);
        return rc;
    }
    /* an empty prompt starts from BOS, the document separator */
    int32_t bos = andrea_tokenizer_bos(tok);
    size_t plen = ids.len;
    fprintf(stderr, "generate: model '%s' (L=%d C=%d T=%d V=%d, %s tokenizer) | temp %g top-k %d "
                    "top-p %g | seed %llu | n-predict %d\n", model_path, c->n_layer, c->d_model,
            c->ctx, c->vocab, andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)), temp, top_k,
            top_p, (unsigned long long)seed, n_predict);
    andrea_rng rng;
    andrea_rng_seed(&rng, seed);
    andrea_sampler s = {temp, top_k, top_p};
    const float *logits = NULL;
    double t0 = now_s();
    if (plen == 0) {
        logits = andrea_kv_step(m, kv, bos);
    } else {
        fwrite(prompt, 1, strlen(prompt), stdout);
        logits = andrea_kv_prefill(m, kv, ids.data, (int)plen);
    }
    double t_prompt = now_s() - t0;
    int generated = 0;
    const char *why = "n-predict reached";
    t0 = now_s();
    while (generated < n_predict) {
        if (!logits) {
            fprintf(stderr, "andrea generate: %s\n", andrea_error());
            rc = 1;
            break;
        }
        int next = andrea_sample(logits, c->vocab, &s, &rng);
        if (next < 0) {
            fprintf(stderr, "andrea generate: out of memory while sampling\n");
            rc = 1;
            break;
        }
        if (next == bos) {
            why = "end of text (BOS)";
            break;
        }
        size_t nb = 0;
        const uint8_t *bytes = andrea_tokenizer_token_bytes(tok, next, &nb);
        if (bytes && nb) {
            fwrite(bytes, 1, nb, stdout);
            fflush(stdout);
        }
        generated++;
        if (andrea_kv_pos(kv) >= c->ctx) {
            why = "context limit reached (the model's context is full)";
            break;
        }
        if (generated < n_predict) logits = andrea_kv_step(m, kv, next);
    }
    double t_gen = now_s() - t0;
    printf("\n");
    fflush(stdout);
    fprintf(stderr, "generate: stopped: %s | %d tokens | prompt %zu tokens in %.3f s | %.1f tok/s\n",
            why, generated, plen, t_prompt, generated / (t_gen > 0 ? t_gen : 1e-9));
    andrea_ids_free(&ids);
    andrea_kv_free(kv);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    return rc;
}
