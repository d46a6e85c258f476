/* cmd_train.c - `andrea train`: flags -> andrea_train(). */
#include <stdio.h>
#include <string.h>

#include "andrea.h"
#include "args.h"
#include "commands.h"
#include "model_flags.h"
#include "threads.h"

#define SYNOPSIS "--data FILE [--preset NAME] [flags]   |   andrea train --resume CKPT --data FILE"

static int parse(int argc, char **argv, andrea_train_options *o, model_flags *mf, int *threads,
                 const char **matmul, const char **attention, const char **precision,
                 arg_spec *specs_out, int *n_out, int quiet_usage) {
    arg_spec specs[] = {
        {"data", 'd', ARG_STR, &o->data_path, "training text file (any bytes) or token file", 0},
        {"tokenizer", 0, ARG_STR, &o->tokenizer,
         "byte (default), char, gpt2[:DIR], a .tok file or harris_segments.json", 0},
        MODEL_FLAG_SPECS(*mf),
        {"batch", 'b', ARG_INT, &o->batch, "sequences per micro-batch B (12)", 0},
        {"seq", 0, ARG_INT, &o->seq, "tokens per sequence T, <= ctx (64)", 0},
        {"grad-accum", 0, ARG_INT, &o->grad_accum, "micro-batches per optimizer step (1)", 0},
        {"max-steps", 0, ARG_INT, &o->max_steps, "optimizer steps (2000)", 0},
        {"lr", 0, ARG_FLOAT, &o->lr, "peak learning rate (1e-3)", 0},
        {"lr-min", 0, ARG_FLOAT, &o->lr_min, "final learning rate of the cosine (1e-4)", 0},
        {"warmup", 0, ARG_INT, &o->warmup, "linear warmup steps (100)", 0},
        {"beta1", 0, ARG_FLOAT, &o->beta1, "AdamW beta1 (0.9)", 0},
        {"beta2", 0, ARG_FLOAT, &o->beta2, "AdamW beta2 (0.99)", 0},
        {"eps", 0, ARG_FLOAT, &o->eps, "AdamW epsilon (1e-8)", 0},
        {"weight-decay", 0, ARG_FLOAT, &o->weight_decay, "decoupled weight decay on matrices (0.1)", 0},
        {"grad-clip", 0, ARG_FLOAT, &o->grad_clip, "global gradient-norm clip, 0 = off (1.0)", 0},
        {"seed", 0, ARG_U64, &o->seed, "seed of init and batch sampling (1337)", 0},
        {"val-fraction", 0, ARG_FLOAT, &o->val_fraction, "held-out tail of the data (0.1)", 0},
        {"eval-every", 0, ARG_INT, &o->eval_every, "validation every N steps, 0 = at the end (250)", 0},
        {"eval-batches", 0, ARG_INT, &o->eval_batches, "validation batches, 0 = all (0)", 0},
        {"ckpt-every", 0, ARG_INT, &o->ckpt_every, "checkpoint every N steps, 0 = at the end (500)", 0},
        {"log-every", 0, ARG_INT, &o->log_every, "progress line every N steps (1)", 0},
        {"max-bad-steps", 0, ARG_INT, &o->max_bad_steps, "consecutive non-finite steps before stopping (5)", 0},
        {"sample-every", 0, ARG_INT, &o->sample_every, "score a generated sample every N steps, 0 = off (100)", 0},
        {"sample-tokens", 0, ARG_INT, &o->sample_tokens, "tokens per sample (420)", 0},
        {"gate-threshold", 0, ARG_FLOAT, &o->gate_threshold, "coherence score a sample must reach (30)", 0},
        {"gate-patience", 0, ARG_INT, &o->gate_patience, "failing samples in a row that halt training (5)", 0},
        {"words", 0, ARG_STR, &o->words_path, "English word list for the gate (wamerican's)", 0},
        {"out-dir", 'o', ARG_STR, &o->out_dir, "directory for ckpt.bin, best.bin, log.jsonl, created with its parents (out)", 0},
        {"resume", 0, ARG_STR, &o->resume_path, "continue exactly from a checkpoint", 0},
        {"threads", 't', ARG_INT, threads, "OpenMP threads, 0 = all cores (0)", 0},
        {"matmul", 0, ARG_STR, matmul, "matmul engine: builtin | blas (builtin)", 0},
        {"precision", 0, ARG_STR, precision, "matmul operands: fp32 | bf16 (AVX512-BF16, fp32 master weights) (fp32)", 0},
        {"attention", 0, ARG_STR, attention, "flash (fused, O(T) memory) | explicit (T x T) (flash)", 0},
        {"quiet", 'q', ARG_FLAG, &o->quiet, "no progress lines", 0},
        {"stop-at", 0, ARG_INT, &o->stop_at, "stop after step N as if interrupted (resumable)", 0},
        {"inject-nan-step", 0, ARG_INT, &o->inject_nan_step, "testing: poison gradients from this step", 0},
        {"inject-nan-count", 0, ARG_INT, &o->inject_nan_count, "testing: for this many steps", 0},
    };
    int n = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("train", argc, argv, specs, n, NULL, 0, NULL);
    if (r == 1 && !quiet_usage) args_usage("train", SYNOPSIS, specs, n);
    if (specs_out) {
        memcpy(specs_out, specs, sizeof specs);
        *n_out = n;
    }
    return r;
}

int cmd_train(int argc, char **argv) {
    andrea_train_options o;
    model_flags mf;
    int threads = 0;
    const char *matmul = "builtin", *attention = "flash", *precision = "fp32";
    memset(&mf, 0, sizeof mf);
    andrea_train_options_default(&o);
    /* pass 1: find --resume (and report flag errors once) */
    int r = parse(argc, argv, &o, &mf, &threads, &matmul, &attention, &precision, NULL, NULL, 0);
    if (r) return r == 1 ? 0 : 2;
    andrea_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (o.resume_path) {
        const char *resume = o.resume_path;
        andrea_train_options_default(&o);
        if (andrea_train_options_from_checkpoint(resume, &cfg, &o)) {
            fprintf(stderr, "andrea train: %s\n", andrea_error());
            return 1;
        }
    }
    /* pass 2: flags given now override the defaults or the checkpoint's options */
    arg_spec specs[64];
    int n_specs = 0;
    memset(&mf, 0, sizeof mf);
    andrea_config saved = cfg;
    parse(argc, argv, &o, &mf, &threads, &matmul, &attention, &precision, specs, &n_specs, 1);
    if (o.resume_path && !model_flags_any(specs, n_specs)) {
        cfg = saved;
    } else if (model_flags_apply("train", &mf, specs, n_specs, "baby", &cfg)) {
        return 2;
    }
    int backend = strcmp(matmul, "blas") == 0      ? ANDREA_MATMUL_BLAS
                  : strcmp(matmul, "builtin") == 0 ? ANDREA_MATMUL_BUILTIN
                                                   : -1;
    if (backend < 0 || andrea_set_matmul_backend(backend)) {
        fprintf(stderr, "andrea train: --matmul '%s': %s\n", matmul,
                backend < 0 ? "expected builtin or blas" : andrea_error());
        return 2;
    }
    int prec = strcmp(precision, "bf16") == 0   ? ANDREA_PRECISION_BF16
               : strcmp(precision, "fp32") == 0 ? ANDREA_PRECISION_FP32
                                                : -1;
    if (prec < 0 || andrea_set_matmul_precision(prec)) {
        fprintf(stderr, "andrea train: --precision '%s': %s\n", precision,
                prec < 0 ? "expected fp32 or bf16" : andrea_error());
        return 2;
    }
    if (strcmp(attention, "flash") == 0) o.attention = ANDREA_ATTN_FLASH;
    else if (strcmp(attention, "explicit") == 0) o.attention = ANDREA_ATTN_EXPLICIT;
    else {
        fprintf(stderr, "andrea train: --attention '%s': expected flash or explicit\n", attention);
        return 2;
    }
    int nt = cli_set_threads(threads);
    if (!o.quiet) printf("threads: %d\n", nt);
    int rc = andrea_train(&cfg, &o);
    if (rc == ANDREA_TRAIN_INTERRUPTED) return 130;
    if (rc) {
        fprintf(stderr, "andrea train: %s\n", andrea_error());
        return 1;
    }
    return 0;
}
