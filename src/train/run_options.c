/*
 * run_options.c - the table of training options (run_options.h) and what is generated
 * from it: defaults, the options restored from a checkpoint, the "train:" config line.
 * The CLI builds `andrea train`'s flags and --help from the same rows, and the
 * checkpoint writes the saved rows as named OPTS entries.
 */
#include "train/run_options.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_gate.h"
#include "train/checkpoint/checkpoint.h"
#include "util/error.h"

#define OPT(field) offsetof(andrea_train_options, field)
#define CK(field) ((long)offsetof(andrea_ckpt_state, field))
#define NOCK (-1L)

/* --help order; the rows with a label print the "train:" line in this order. */
static const andrea_train_option TABLE[] = {
    {"data", 'd', ANDREA_OPT_STR, OPT(data_path), 0, NULL,
     "training text file (any bytes) or token file; resuming: the checkpoint's", CK(data_path), NULL},
    {"manifest", 0, ANDREA_OPT_STR, OPT(manifest_path), 0, NULL,
     "run manifest (JSON) of several sources and a curriculum, instead of --data "
     "(docs/curriculum.md)", NOCK, NULL},
    {"tokenizer", 0, ANDREA_OPT_STR, OPT(tokenizer), 0, NULL,
     "byte (default), char, gpt2[:DIR], a .tok file or harris_segments.json; a token file "
     "needs the one that made it", NOCK, NULL},
    {"batch", 'b', ANDREA_OPT_INT, OPT(batch), 12, NULL, "sequences per micro-batch B", CK(batch), "B="},
    {"seq", 0, ANDREA_OPT_INT, OPT(seq), 0, NULL, "tokens per sequence T, <= ctx; 0 = min(64, ctx)",
     CK(seq), "T="},
    {"grad-accum", 0, ANDREA_OPT_INT, OPT(grad_accum), 1, NULL, "micro-batches per optimizer step",
     CK(grad_accum), "accum="},
    {"max-steps", 0, ANDREA_OPT_INT, OPT(max_steps), 2000, NULL, "optimizer steps", CK(max_steps),
     "steps="},
    {"lr", 0, ANDREA_OPT_FLOAT, OPT(lr), 1e-3, NULL, "peak learning rate", CK(lr), "lr="},
    {"lr-min", 0, ANDREA_OPT_FLOAT, OPT(lr_min), 1e-4, NULL, "final learning rate of the cosine",
     CK(lr_min), "->"},
    {"warmup", 0, ANDREA_OPT_INT, OPT(warmup), 100, NULL, "linear warmup steps", CK(warmup),
     "warmup="},
    {"beta1", 0, ANDREA_OPT_FLOAT, OPT(beta1), 0.9, NULL, "AdamW beta1", CK(beta1), "betas="},
    {"beta2", 0, ANDREA_OPT_FLOAT, OPT(beta2), 0.99, NULL, "AdamW beta2", CK(beta2), "/"},
    {"eps", 0, ANDREA_OPT_FLOAT, OPT(eps), 1e-8, NULL, "AdamW epsilon", CK(eps), "eps="},
    {"weight-decay", 0, ANDREA_OPT_FLOAT, OPT(weight_decay), 0.1, NULL,
     "decoupled weight decay on matrices", CK(weight_decay), "wd="},
    {"grad-clip", 0, ANDREA_OPT_FLOAT, OPT(grad_clip), 1.0, NULL,
     "global gradient-norm clip, 0 = off", CK(grad_clip), "clip="},
    {"seed", 0, ANDREA_OPT_U64, OPT(seed), 1337, NULL, "seed of init and batch sampling", CK(seed),
     "seed="},
    {"val-fraction", 0, ANDREA_OPT_FLOAT, OPT(val_fraction), 0.1, NULL, "held-out tail of the data",
     CK(val_fraction), NULL},
    {"eval-every", 0, ANDREA_OPT_INT, OPT(eval_every), 250, NULL,
     "validation every N steps, 0 = at the end", CK(eval_every), NULL},
    {"eval-batches", 0, ANDREA_OPT_INT, OPT(eval_batches), 0, NULL, "validation batches (global: ranks x --batch windows), 0 = all",
     CK(eval_batches), NULL},
    {"ckpt-every", 0, ANDREA_OPT_INT, OPT(ckpt_every), 500, NULL,
     "checkpoint every N steps, 0 = at the end", CK(ckpt_every), NULL},
    {"keep-last", 0, ANDREA_OPT_INT, OPT(keep_last), 0, NULL,
     "also keep each checkpoint as step_NNNNNN.bin, the newest N of them; 0 = off", NOCK, NULL},
    {"log-every", 0, ANDREA_OPT_INT, OPT(log_every), 1, NULL, "progress line every N steps",
     CK(log_every), NULL},
    {"max-bad-steps", 0, ANDREA_OPT_INT, OPT(max_bad_steps), 5, NULL,
     "consecutive non-finite steps before stopping", CK(max_bad_steps), NULL},
    {"spike-loss", 0, ANDREA_OPT_FLOAT, OPT(spike_loss), 3, NULL,
     "skip a step whose loss is over this many times the median of the last 50 (and 1 nat "
     "above it) or ln V (a uniform guess), 0 = off; not saved", NOCK, NULL},
    {"spike-grad", 0, ANDREA_OPT_FLOAT, OPT(spike_grad), 100, NULL,
     "skip a step whose gradient norm is over this many times the median of the last 50, "
     "0 = off; not saved", NOCK, NULL},
    {"max-weight", 0, ANDREA_OPT_FLOAT, OPT(max_weight), 1e4, NULL,
     "skip an update that could carry a weight past this |value|, 0 = off; not saved", NOCK,
     NULL},
    {"sample-every", 0, ANDREA_OPT_INT, OPT(sample_every), 100, NULL,
     "score a generated sample every N steps, 0 = off", CK(sample_every), NULL},
    {"sample-tokens", 0, ANDREA_OPT_INT, OPT(sample_tokens), 420, NULL, "tokens per sample",
     CK(sample_tokens), NULL},
    {"gate-threshold", 0, ANDREA_OPT_FLOAT, OPT(gate_threshold), 30, NULL,
     "coherence score a sample must reach", CK(gate_threshold), NULL},
    {"gate-patience", 0, ANDREA_OPT_INT, OPT(gate_patience), 5, NULL,
     "failing samples in a row that halt training", CK(gate_patience), NULL},
    {"gate", 0, ANDREA_OPT_STR, OPT(gate), 0, "honest",
     "coherence gate: honest | course (the course's four-part sum); not saved", NOCK, NULL},
    {"gate-arm", 0, ANDREA_OPT_INT, OPT(gate_arm), -1, NULL,
     "collapsed samples count from this step, -1 = auto (after the warmup); not saved",
     NOCK, NULL},
    {"gate-reference", 0, ANDREA_OPT_STR, OPT(gate_reference), 0, NULL,
     "real text for the honest gate's word model, a file or folder (default: "
     "$ANDREA_REFERENCE, else /usr/share/games/fortunes); not saved", NOCK, NULL},
    {"words", 0, ANDREA_OPT_STR, OPT(words_path), 0, NULL,
     "English word list for the gate (default: wamerican's)", NOCK, NULL},
    {"out-dir", 'o', ANDREA_OPT_STR, OPT(out_dir), 0, "out",
     "directory for ckpt.bin, best.bin, log.jsonl, created with its parents", NOCK, NULL},
    {"resume", 0, ANDREA_OPT_STR, OPT(resume_path), 0, NULL, "continue exactly from a checkpoint",
     NOCK, NULL},
    {"force", 0, ANDREA_OPT_FLAG, OPT(force), 0, NULL,
     "write into an output directory that holds another run (its files are replaced)", NOCK,
     NULL},
    {"backend", 0, ANDREA_OPT_STR, OPT(backend), 0, NULL,
     "where the model runs (cpu): cpu, cpu-avx512, cpu-avx2, cpu-baseline, cpu-blas, cpu-bf16 "
     "(this machine's: andrea bench --list-backends); not saved: a resume chooses again",
     NOCK, NULL},
    {"quiet", 'q', ANDREA_OPT_FLAG, OPT(quiet), 0, NULL, "no progress lines", NOCK, NULL},
    {"stop-at", 0, ANDREA_OPT_INT, OPT(stop_at), 0, NULL,
     "stop after step N as if interrupted (resumable), 0 = off", NOCK, NULL},
    {"zero", 0, ANDREA_OPT_INT, OPT(zero), 0, NULL,
     "under mpirun: 1 = shard the AdamW moments over the ranks (ZeRO-1), 0 = off", NOCK, NULL},
    {"dist-timeout", 0, ANDREA_OPT_FLOAT, OPT(dist_timeout), 300, NULL,
     "under mpirun: seconds to wait for the other ranks before stopping with an error", NOCK,
     NULL},
    {"dist-deterministic", 0, ANDREA_OPT_FLAG, OPT(dist_deterministic), 0, NULL,
     "under mpirun: sum gradients in rank order (same bits every run; slower)", NOCK, NULL},
    {"dist-no-overlap", 0, ANDREA_OPT_FLAG, OPT(dist_no_overlap), 0, NULL,
     "under mpirun: sum gradients after backward instead of during it", NOCK,
     NULL},
    {"dist-overlap", 0, ANDREA_OPT_FLAG, OPT(dist_overlap), 0, NULL,
     "under mpirun: sum gradients during backward without measuring (default: steps 2-7 "
     "time both ways, the faster is kept)", NOCK, NULL},
    {"dist-allreduce", 0, ANDREA_OPT_STR, OPT(dist_allreduce), 0, NULL,
     "under mpirun: the gradient sum: auto (nccl for a model on GPUs, else measure ring and "
     "mpi at start), ring (reduce-scatter + all-gather), mpi (MPI_Iallreduce) or nccl "
     "(on the GPUs' buffers)", NOCK, NULL},
    {"dist-bf16", 0, ANDREA_OPT_FLAG, OPT(dist_bf16), 0, NULL,
     "under mpirun: gradients over the wire as bf16 (andrea's ring; half the bytes, summed "
     "in fp32)", NOCK, NULL},
    {"dist-check-every", 0, ANDREA_OPT_INT, OPT(dist_check_every), 100, NULL,
     "under mpirun: compare a hash of the weights over the ranks every N steps (also at the "
     "start and before each checkpoint), 0 = never", NOCK, NULL},
    {"inject-drift-step", 0, ANDREA_OPT_INT, OPT(inject_drift_step), -1, NULL,
     "testing: under mpirun the last rank nudges one weight after this step, -1 = off", NOCK,
     NULL},
    {"inject-own-isa", 0, ANDREA_OPT_FLAG, OPT(inject_own_isa), 0, NULL,
     "testing: under mpirun each rank updates the weights at its own best ISA (no agreement)",
     NOCK, NULL},
    {"inject-nan-step", 0, ANDREA_OPT_INT, OPT(inject_nan_step), -1, NULL,
     "testing: poison gradients from this step, -1 = off", NOCK, NULL},
    {"inject-nan-count", 0, ANDREA_OPT_INT, OPT(inject_nan_count), 0, NULL,
     "testing: for this many steps", NOCK, NULL},
};
#define N_TABLE ((int)(sizeof TABLE / sizeof TABLE[0]))

const andrea_train_option *andrea_train_option_table(int *n) {
    *n = N_TABLE;
    return TABLE;
}

const andrea_train_option *andrea_train_option_find(const char *flag) {
    for (int i = 0; i < N_TABLE; i++)
        if (strcmp(TABLE[i].flag, flag) == 0) return &TABLE[i];
    return NULL;
}

void *andrea_train_option_field(andrea_train_options *o, const andrea_train_option *e) {
    return (char *)o + e->offset;
}

void andrea_train_option_default_text(const andrea_train_option *e, char *buf, size_t n) {
    if (e->type == ANDREA_OPT_STR) snprintf(buf, n, "%s", e->def_str ? e->def_str : "");
    else if (e->type == ANDREA_OPT_FLAG) snprintf(buf, n, "off");
    else snprintf(buf, n, "%g", e->def);
}

/* Floats are stored as the float nearest the decimal default, like a literal 1e-3f. */
void andrea_train_options_default(andrea_train_options *o) {
    memset(o, 0, sizeof *o);
    for (int i = 0; i < N_TABLE; i++) {
        const andrea_train_option *e = &TABLE[i];
        void *f = andrea_train_option_field(o, e);
        switch (e->type) {
        case ANDREA_OPT_INT:
        case ANDREA_OPT_FLAG: *(int *)f = (int)e->def; break;
        case ANDREA_OPT_FLOAT: *(float *)f = (float)e->def; break;
        case ANDREA_OPT_U64: *(uint64_t *)f = (uint64_t)e->def; break;
        case ANDREA_OPT_STR: *(const char **)f = e->def_str; break;
        }
    }
}

/* Copies the saved numbers between options and checkpoint state (strings are not owned
 * by the options, so they stay with the state). */
void andrea_train_options_to_state(const andrea_train_options *o, andrea_ckpt_state *st) {
    for (int i = 0; i < N_TABLE; i++) {
        const andrea_train_option *e = &TABLE[i];
        if (e->ckpt < 0) continue;
        const char *src = (const char *)o + e->offset;
        char *dst = (char *)st + e->ckpt;
        if (e->type == ANDREA_OPT_STR) {
            const char *s = *(const char *const *)src;
            if (s != dst) snprintf(dst, ANDREA_CKPT_STR, "%s", s ? s : "");
        } else {
            memcpy(dst, src, e->type == ANDREA_OPT_U64 ? 8 : 4);
        }
    }
}

int andrea_train_options_from_checkpoint(const char *path, andrea_config *cfg,
                                         andrea_train_options *o) {
    andrea_ckpt_state *st = malloc(sizeof *st);
    if (!st) return andrea_set_error("out of memory");
    if (andrea_checkpoint_peek(path, cfg, st)) {
        free(st);
        return -1;
    }
    for (int i = 0; i < N_TABLE; i++) {
        const andrea_train_option *e = &TABLE[i];
        if (e->ckpt < 0 || e->type == ANDREA_OPT_STR) continue;
        memcpy((char *)o + e->offset, (const char *)st + e->ckpt, e->type == ANDREA_OPT_U64 ? 8 : 4);
    }
    free(st);
    o->resume_path = path;
    return 0;
}

void andrea_train_options_describe(const andrea_train_options *o, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_TABLE && at < n; i++) {
        const andrea_train_option *e = &TABLE[i];
        if (!e->label) continue;
        /* "lr=0.001->0.0001", "betas=0.9/0.99": a label that is not a name joins the value
         * before it */
        const char *sep = at == 0 || !isalpha((unsigned char)e->label[0]) ? "" : " ";
        const void *f = (const char *)o + e->offset;
        int w;
        switch (e->type) {
        case ANDREA_OPT_FLOAT: w = snprintf(buf + at, n - at, "%s%s%g", sep, e->label, *(const float *)f); break;
        case ANDREA_OPT_U64:
            w = snprintf(buf + at, n - at, "%s%s%llu", sep, e->label,
                         (unsigned long long)*(const uint64_t *)f);
            break;
        default: w = snprintf(buf + at, n - at, "%s%s%d", sep, e->label, *(const int *)f); break;
        }
        if (w < 0) break;
        at += (size_t)w;
    }
}

static int bad(const char *fmt, ...) ANDREA_PRINTF(1, 2);
static int bad(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    andrea_set_error("%s", msg);
    return ANDREA_TRAIN_BAD_OPTIONS;
}

int andrea_train_options_validate(const andrea_config *cfg, const andrea_train_options *o) {
    if (!o->data_path) return bad("no training data: give a text file with --data");
    if (o->batch <= 0 || o->seq <= 0 || o->grad_accum <= 0 || o->max_steps < 0)
        return bad("--batch, --seq and --grad-accum must be positive and --max-steps >= 0 "
                   "(got %d, %d, %d, %d)", o->batch, o->seq, o->grad_accum, o->max_steps);
    if (o->seq > cfg->ctx)
        return bad("--seq %d is longer than the model context %d", o->seq, cfg->ctx);
    /* written as !(x >= 0) so that NaN fails too */
    if (!(o->lr > 0) || !isfinite(o->lr) || !(o->lr_min >= 0) || o->lr_min > o->lr)
        return bad("need 0 <= --lr-min <= --lr and --lr > 0 (got %g, %g)", o->lr_min, o->lr);
    if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1) || !(o->eps > 0))
        return bad("need 0 <= --beta1, --beta2 < 1 and --eps > 0");
    if (!andrea_backend_find(o->backend)) {
        return bad("--backend '%s': %s", o->backend ? o->backend : "", andrea_error());
    }
    if (!(o->weight_decay >= 0) || !isfinite(o->weight_decay) || !(o->grad_clip >= 0) ||
        !isfinite(o->grad_clip) || o->warmup < 0)
        return bad("--weight-decay, --grad-clip and --warmup must be finite and >= 0");
    if (o->max_bad_steps <= 0) return bad("--max-bad-steps must be positive");
    if (!(o->spike_loss >= 0) || !isfinite(o->spike_loss) || !(o->spike_grad >= 0) ||
        !isfinite(o->spike_grad) || !(o->max_weight >= 0) || !isfinite(o->max_weight))
        return bad("--spike-loss, --spike-grad and --max-weight must be finite and >= 0 (0 = off)");
    if (o->sample_every < 0 || o->sample_tokens <= 0 || o->gate_patience <= 0 ||
        !(o->gate_threshold >= 0 && o->gate_threshold <= 100))
        return bad("need --sample-every >= 0, --sample-tokens > 0, --gate-patience > 0 and "
                   "0 <= --gate-threshold <= 100");
    int kind;
    if (andrea_gate_kind_parse(o->gate ? o->gate : "honest", &kind))
        return bad("--gate '%s': expected honest or course", o->gate);
    if (o->gate_arm < -1) return bad("--gate-arm must be -1 (auto) or a step >= 0");
    if (!(o->val_fraction >= 0.0f && o->val_fraction < 1.0f))
        return bad("--val-fraction %g must be in [0, 1)", o->val_fraction);
    return 0;
}
