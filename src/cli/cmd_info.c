/* cmd_info.c - `andrea info`: config, parameter counts per group, memory. */
#include <stdio.h>
#include <string.h>

#include "andrea.h"
#include "andrea_formats.h"
#include "args.h"
#include "commands.h"
#include "model_flags.h"
#include "model_open.h"
#include "andrea_tokenizer.h"
#include "train/checkpoint/checkpoint.h"
#include "train/run_options.h"

static void print_mb(const char *what, int64_t bytes) {
    printf("  %-12s %12.1f MiB\n", what, bytes / (1024.0 * 1024.0));
}

int cmd_info(int argc, char **argv) {
    model_flags mf;
    memset(&mf, 0, sizeof mf);
    const char *model_path = NULL;
    int batch = 1, seq = 0, tensors = 0, ranks = 0;
    arg_spec specs[] = {
        {"model", 'm', ARG_STR, &model_path, "describe this model (any format andrea reads) instead of a preset", 0},
        MODEL_FLAG_SPECS(mf),
        {"batch", 'b', ARG_INT, &batch, "batch for the activation estimate (1)", 0},
        {"seq", 0, ARG_INT, &seq, "sequence length for the estimate (default: ctx)", 0},
        {"tensors", 0, ARG_FLAG, &tensors, "list every parameter tensor", 0},
        {"ranks", 0, ARG_INT, &ranks, "memory per rank of mpirun -np N, --batch per rank", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    int r = args_parse("info", argc, argv, specs, n_specs, NULL, 0, NULL);
    if (r == 1) {
        args_usage("info", "[--preset NAME | -m CKPT] [overrides] [--tensors]", specs, n_specs);
        return 0;
    }
    if (r) return 2;
    andrea_config cfg;
    static andrea_ckpt_state st; /* 9 KiB */
    uint64_t file_size = 0;
    int ckpt = model_path && andrea_format_sniff(model_path) == ANDREA_FORMAT_ANDREA;
    if (model_path) {
        /* an andrea checkpoint's header for what to print; then the whole file of any
         * format: checksum, finite tensors, tokenizer, a finite probe forward (a truncated
         * or flipped file must not pass as fine) */
        andrea_tokenizer *tok = NULL;
        andrea_model *m = NULL;
        if ((ckpt && andrea_checkpoint_peek_size(model_path, &cfg, &st, &file_size)) ||
            !(m = cli_model_open(model_path, NULL, &tok))) {
            fprintf(stderr, "andrea info: %s\n", andrea_error());
            return 1;
        }
        if (!ckpt) cfg = *andrea_model_config(m);
        andrea_tokenizer_free(tok);
        andrea_model_free(m);
    } else if (model_flags_apply("info", &mf, specs, n_specs, "andrea-120m", &cfg)) {
        return 2;
    }
    if (seq <= 0) seq = cfg.ctx;
    if (batch <= 0 || seq > cfg.ctx) {
        fprintf(stderr, "andrea info: need --batch >= 1 and --seq <= ctx %d\n", cfg.ctx);
        return 2;
    }
    if (model_path && !ckpt)
        printf("model: %s (%s)\n", model_path, andrea_format_name(andrea_format_sniff(model_path)));
    else
        printf("%s: %s\n", model_path ? "checkpoint" : "preset",
               model_path ? model_path : (mf.preset ? mf.preset : "andrea-120m"));
    printf("config:\n");
    printf("  n_layer %d  n_head %d  d_model %d  d_k %d  mlp %d  ctx %d  vocab %d\n", cfg.n_layer,
           cfg.n_head, cfg.d_model, cfg.d_model / cfg.n_head, 4 * cfg.d_model, cfg.ctx, cfg.vocab);
    printf("  norm %s (eps %g)  act %s  bias %s  lm_head %s  positions learned  init std %g\n",
           andrea_norm_name(cfg.norm), cfg.norm_eps, andrea_act_name(cfg.act),
           cfg.bias ? "yes" : "no", cfg.tied ? "tied to wte" : "untied", cfg.init_std);
    if (ckpt)
        printf("  trained steps %lld  best val loss %.4f  tokenizer kind %u\n", (long long)st.step,
               st.best_val_loss, st.tokenizer_kind);
    andrea_param_counts pc = andrea_config_param_counts(&cfg);
    printf("parameters:\n");
    printf("  %-26s %14lld\n", "embeddings (wte + wpe)", (long long)pc.embeddings);
    printf("  %-26s %14lld\n", "attention (q,k,v,o)", (long long)pc.attention);
    printf("  %-26s %14lld\n", "mlp (fc, proj)", (long long)pc.mlp);
    printf("  %-26s %14lld\n", "lm_head", (long long)pc.head);
    printf("  %-26s %14lld\n", "embeddings + matrices", (long long)(pc.total - pc.norms));
    printf("  %-26s %14lld\n", "norms (listed separately)", (long long)pc.norms);
    printf("  %-26s %14lld\n", "total", (long long)pc.total);
    if (tensors) {
        andrea_model *m = andrea_model_create(&cfg, 0);
        if (!m) {
            fprintf(stderr, "andrea info: %s\n", andrea_error());
            return 1;
        }
        printf("tensors (file order):\n");
        for (int i = 0; i < andrea_model_num_tensors(m); i++) {
            const andrea_tensor_info *t = andrea_model_tensor(m, i);
            char shape[48];
            if (t->cols) snprintf(shape, sizeof shape, "(%d, %d)", t->rows, t->cols);
            else snprintf(shape, sizeof shape, "(%d)", t->rows);
            printf("  %-18s %-14s offset %12lld  %s\n", t->name, shape, (long long)t->offset,
                   t->decay ? "decay" : "");
        }
        andrea_model_free(m);
    }
    andrea_memory mem = andrea_config_memory(&cfg, batch, seq);
    printf("memory for training at B=%d T=%d (fp32):\n", batch, seq);
    print_mb("weights", mem.weights);
    print_mb("grads", mem.grads);
    print_mb("adamw m+v", mem.optimizer);
    print_mb("activations", mem.activations);
    print_mb("total", mem.weights + mem.grads + mem.optimizer + mem.activations);
    if (ranks > 0) { /* data parallel: all but the moments are whole on every rank */
        int64_t rest = mem.weights + mem.grads + mem.activations;
        printf("memory per rank for %d ranks (global batch %d x %d):\n", ranks, ranks, batch);
        print_mb("plain", rest + mem.optimizer);
        print_mb("--zero 1", rest + (mem.optimizer + ranks - 1) / ranks);
    }
    if (model_path && !ckpt) {
        printf("verified: the whole file (its tensors, tokenizer and a finite forward)\n");
        return 0;
    }
    if (model_path) {
        printf("checkpoint size: %llu bytes (format version %u, %s AdamW state, %llu-byte "
               "tokenizer)\n", (unsigned long long)file_size, st.version,
               st.has_moments ? "with" : "without", (unsigned long long)st.tokenizer_blob);
        printf("verified: the whole file (checksum, finite parameters, tokenizer, a finite "
               "forward)\n");
        return 0;
    }
    /* what training would write: the byte tokenizer's blob, default options, no data path */
    andrea_tokenizer *bt = andrea_tokenizer_byte();
    andrea_bytes blob = {0};
    if (!bt || andrea_tokenizer_serialize(bt, &blob)) {
        fprintf(stderr, "andrea info: %s\n", andrea_error());
        andrea_tokenizer_free(bt);
        return 1;
    }
    andrea_tokenizer_free(bt);
    memset(&st, 0, sizeof st);
    andrea_train_options o;
    andrea_train_options_default(&o);
    o.seq = seq;
    andrea_train_options_to_state(&o, &st);
    printf("checkpoint size: %llu bytes (with AdamW state and the %zu-byte byte tokenizer, "
           "without a data path: a path adds its length, give or take 7 bytes of alignment)\n",
           (unsigned long long)andrea_checkpoint_size(&cfg, 1, blob.len, &st), blob.len);
    andrea_bytes_free(&blob);
    return 0;
}
