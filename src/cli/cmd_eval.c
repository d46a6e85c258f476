/* cmd_eval.c - `andrea eval`: mean loss and perplexity of a checkpoint on a text file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "args.h"
#include "commands.h"
#include "model_open.h"
#include "backend_flags.h"
#include "threads.h"
#include "train/data/corpus.h"

int cmd_eval(int argc, char **argv) {
    const char *model_path = NULL, *data_path = NULL, *quant = "f32", *backend = NULL;
    int qkind = ANDREA_QUANT_NONE;
    int batch = 8, seq = 0, max_batches = 0, threads = 0;
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &model_path, "model to evaluate: an andrea checkpoint, .safetensors, .gguf, llm.c or flat file", 0},
        {"data", 'd', ARG_STR, &data_path, "text file", 0},
        {"batch", 'b', ARG_INT, &batch, "windows per forward pass (8)", 0},
        {"seq", 0, ARG_INT, &seq, "window length T (default: the model's context)", 0},
        {"max-batches", 0, ARG_INT, &max_batches, "stop after N batches, 0 = whole file (0)", 0},
        {"quant", 0, ARG_STR, &quant, "round the weights to f32 | f16 | bf16 | int8 | q8_0 | q4_0 first (f32)", 0},
        {"backend", 0, ARG_STR, &backend, "where the model runs: cpu, cpu-blas, ... (cpu)", 0},
        {"threads", 't', ARG_INT, &threads, "OpenMP threads, 0 = all cores (0)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("eval", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("eval", "-m MODEL -d FILE [--seq T] [--batch B]", specs, n_specs);
        return 0;
    }
    if (r) return 2;
    if (!model_path || !data_path) {
        fprintf(stderr, "andrea eval: need a model (-m CKPT) and a text file (-d FILE)\n");
        return 2;
    }
    if (andrea_quant_parse(quant, &qkind)) {
        fprintf(stderr, "andrea eval: --quant: %s\n", andrea_error());
        return 2;
    }
    if (seq < 0 || batch <= 0 || max_batches < 0) {
        fprintf(stderr, "andrea eval: %s\n", seq < 0 ? "--seq must be >= 0 (0 = the model's context)"
                : batch <= 0 ? "--batch must be >= 1" : "--max-batches must be >= 0 (0 = whole file)");
        return 2;
    }
    if (backend_check("eval", backend)) return 2;
    cli_set_threads(threads);
    andrea_tokenizer *tok = NULL;
    andrea_model *m = cli_model_open(model_path, NULL, &tok); /* any format andrea reads */
    if (!m) {
        fprintf(stderr, "andrea eval: %s\n", andrea_error());
        return 1;
    }
    if (andrea_model_set_backend(m, backend) || andrea_model_fake_quantize(m, qkind)) {
        fprintf(stderr, "andrea eval: %s\n", andrea_error());
        andrea_tokenizer_free(tok);
        andrea_model_free(m);
        return 1;
    }
    const andrea_config *c = andrea_model_config(m);
    if (seq <= 0) seq = c->ctx;
    int32_t *tokens = NULL;
    int64_t len = 0;
    uint64_t sum;
    if (seq > c->ctx || batch <= 0) {
        fprintf(stderr, "andrea eval: need --batch >= 1 and --seq <= the model context %d\n", c->ctx);
        andrea_tokenizer_free(tok);
        andrea_model_free(m);
        return 2;
    }
    /* the text is encoded with the model's own tokenizer (a token file must match it) */
    if (andrea_corpus_load(data_path, NULL, &tok, &tokens, &len, &sum)) {
        fprintf(stderr, "andrea eval: %s\n", andrea_error());
        andrea_tokenizer_free(tok);
        andrea_model_free(m);
        return 1;
    }
    double loss;
    int64_t n_tok;
    int rc = 0;
    if (andrea_eval_tokens(m, tokens, len, batch, seq, max_batches, &loss, &n_tok)) {
        fprintf(stderr, "andrea eval: '%s': %s\n", data_path, andrea_error());
        rc = 1;
    } else {
        printf("eval: '%s' (%s weights) on '%s': %lld tokens, T=%d | loss %.6f | perplexity %.3f | %.4f bits/token\n",
               model_path, quant, data_path, (long long)n_tok, seq, loss, exp(loss), loss / log(2.0));
    }
    free(tokens);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    return rc;
}
