/*
 * cmd_train.c - `andrea train`: flags (generated from the library's option table, plus
 * the model and engine flags) -> andrea_train(). It owns what a terminal needs: the
 * progress lines (a sink), warnings on stderr, and SIGINT/SIGTERM, which ask the run to
 * stop at the end of the step with a checkpoint.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "andrea.h"
#include "parallel/dist.h"
#include "args.h"
#include "backend_flags.h"
#include "commands.h"
#include "model_flags.h"
#include "threads.h"
#include "train/run_options.h"

#define SYNOPSIS "--data FILE [--preset NAME] [flags]   |   andrea train --resume CKPT [flags]"

typedef struct {
    model_flags mf;
    int threads;
    const char *matmul, *attention, *precision;
} engine_flags;

/* --help text of the table's rows: the help and the default */
/* room for every flag: the option table, the model and engine flags (build_specs drops
 * what does not fit, so the table outgrowing it lost the last flags, -t among them) */
#define MAX_SPECS 128
static char g_help[MAX_SPECS][200];

/* Builds the flag specs: the option table (with the model flags after --tokenizer), then
 * the flags of the engine. Returns their number. */
static int build_specs(andrea_train_options *o, engine_flags *e, arg_spec *specs, int cap) {
    static const arg_type TYPE[] = {[ANDREA_OPT_INT] = ARG_INT,  [ANDREA_OPT_FLOAT] = ARG_FLOAT,
                                    [ANDREA_OPT_U64] = ARG_U64,  [ANDREA_OPT_STR] = ARG_STR,
                                    [ANDREA_OPT_FLAG] = ARG_FLAG};
    arg_spec model[] = {MODEL_FLAG_SPECS(e->mf)};
    arg_spec engine[] = {
        {"threads", 't', ARG_INT, &e->threads, "OpenMP threads, 0 = all cores (0)", 0},
        {"matmul", 0, ARG_STR, &e->matmul, "builtin | blas: blas is --backend cpu-blas", 0},
        {"precision", 0, ARG_STR, &e->precision,
         "fp32 | bf16: bf16 (AVX512-BF16, fp32 master weights) is --backend cpu-bf16", 0},
        {"attention", 0, ARG_STR, &e->attention,
         "flash (fused, O(T) memory) | explicit (T x T) (flash)", 0},
    };
    int n_table, n = 0;
    const andrea_train_option *t = andrea_train_option_table(&n_table);
    for (int i = 0; i < n_table && n < cap; i++) {
        char def[64];
        andrea_train_option_default_text(&t[i], def, sizeof def);
        if (def[0] && t[i].type != ANDREA_OPT_FLAG)
            snprintf(g_help[i], sizeof g_help[i], "%s (%s)", t[i].help, def);
        else
            snprintf(g_help[i], sizeof g_help[i], "%s", t[i].help);
        specs[n++] = (arg_spec){t[i].flag, t[i].short_flag, TYPE[t[i].type],
                                andrea_train_option_field(o, &t[i]), g_help[i], 0};
        if (strcmp(t[i].flag, "tokenizer") == 0)
            for (size_t k = 0; k < sizeof model / sizeof model[0] && n < cap; k++) specs[n++] = model[k];
    }
    for (size_t k = 0; k < sizeof engine / sizeof engine[0] && n < cap; k++) specs[n++] = engine[k];
    return n;
}

/* ---- the progress sink ------------------------------------------------------------------ */

static volatile sig_atomic_t g_signal = 0;
static void on_signal(int sig) { g_signal = sig; }
static int should_stop(void *user) { return g_signal != 0; }
/* SIGUSR1: a checkpoint now, training goes on (ANDREA's "forces a clean checkpoint") */
static volatile sig_atomic_t g_save = 0;
static void on_usr1(int sig) { (void)sig; g_save = 1; }
static int should_save(void *user) {
    (void)user;
    int s = g_save;
    g_save = 0;
    return s;
}

static void format_eta(double s, char *buf, size_t n) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

static void on_start(void *user, const andrea_train_start *s) {
    const andrea_config *c = s->cfg;
    const andrea_train_options *o = s->opts;
    if (s->preset_vocab != c->vocab)
        printf("note: vocab set to %d by the %s tokenizer (the preset said %d)\n", c->vocab,
               s->tokenizer, s->preset_vocab);
    printf("model: L=%d NH=%d C=%d T=%d V=%d norm=%s act=%s bias=%d tied=%d | %.3fM params\n",
           c->n_layer, c->n_head, c->d_model, c->ctx, c->vocab, andrea_norm_name(c->norm),
           andrea_act_name(c->act), c->bias, c->tied, s->n_params / 1e6);
    printf("data: %s (%s tokenizer, V=%d): %lld train, %lld validation\n", s->data, s->tokenizer,
           c->vocab, (long long)s->n_train, (long long)s->n_val);
    char line[512];
    andrea_train_options_describe(o, line, sizeof line);
    printf("train: %s\n", line);
    if (s->ranks) printf("ranks: %s\n", s->ranks);
    if (o->resume_path) printf("resuming '%s' at step %lld\n", o->resume_path, (long long)s->start_step);
    printf("mfu: %.2f MFLOP per token; sgemm peak here %.1f GFLOP/s\n", s->flops_per_token / 1e6,
           s->peak_gflops);
    fflush(stdout);
}

/* On a terminal the step lines overwrite one another on one line (\r, then erase to the
 * end of the line); everything else first ends that line. Piped, every step line stays. */
static int g_tty_line = 0;  /* stdout is a terminal */
static int g_line_open = 0; /* a step line is on screen without its newline */
static void end_progress_line(void) {
    if (g_line_open) fputc('\n', stdout);
    g_line_open = 0;
}

static void on_step(void *user, const andrea_train_step *s) {
    const andrea_train_options *o = user;
    if (o->log_every <= 0 || (s->step % o->log_every != 0 && s->step != s->max_steps)) return;
    char eta[32];
    format_eta(s->eta_s, eta, sizeof eta);
    printf("%sstep %5d/%d | loss %.4f | smooth %.4f | lr %.2e | gnorm %.3f | %.1f ms | "
           "%.0f tok/s | MFU %.0f%% | ETA %s%s", g_tty_line ? "\r" : "", s->step, s->max_steps,
           s->loss, s->loss_smooth, s->lr, s->grad_norm, s->ms, s->tok_per_s, 100.0 * s->mfu, eta,
           g_tty_line ? "\033[K" : "\n");
    g_line_open = g_tty_line;
    fflush(stdout);
}

static void on_eval(void *user, int step, int max_steps, double val_loss, int best) {
    end_progress_line();
    printf("step %5d/%d | val loss %.4f%s\n", step, max_steps, val_loss, best ? " (best)" : "");
    fflush(stdout);
}

/* Text as is, but control bytes other than newline and tab as '?': a failing sample may
 * hold escape sequences that would drive the terminal. */
static void print_text(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        putchar(c < 0x20 && c != '\n' && c != '\t' ? '?' : c == 0x7f ? '?' : c);
    }
}

/* A sample counted toward a halt is printed whole: the text is the evidence for the
 * verdict, and for the halt it may lead to. A failing sample that shows no collapse (a
 * young model's letter soup, validation still falling) is only marked. */
static void on_sample(void *user, const andrea_train_sample *s) {
    end_progress_line();
    if (strcmp(s->gate, "course") == 0)
        printf("step %5d/%d | sample score %.1f (course: bigram %.1f trigram %.1f english %.1f "
               "chars %.1f)", s->step, s->max_steps, s->score, s->bigram, s->trigram,
               s->english, s->chardiv);
    else
        printf("step %5d/%d | sample score %.1f (honest: dict %.2f repeat %.2f charset %.2f "
               "common %.2f order %.2f)", s->step, s->max_steps, s->score, s->dict, s->repeat,
               s->charset, s->common, s->order);
    if (s->pass) printf("\n");
    else if (!s->armed) printf(" FAIL (gate not armed yet)\n");
    else if (!s->strike) printf(" FAIL (not a collapse: not counted)\n");
    else printf(" FAIL, collapse: %s (%d of %d in a row halt the run)\n", s->strike, s->fails,
                s->patience);
    if (s->strike) {
        printf("---- sample at step %d (%d tokens, score %.1f < %g) ----\n", s->step, s->tokens,
               s->score, s->threshold);
        print_text(s->text, s->len);
        printf("\n----\n");
    }
    fflush(stdout);
}

/* a warning: printed even with --quiet */
static void on_skip(void *user, const andrea_train_skip *s) {
    end_progress_line();
    fprintf(stderr, "warning: step %d: %s; update skipped (%d of %d allowed in a row)\n",
            s->step, s->reason, s->bad_steps, s->max_bad_steps);
}

static void on_done(void *user, const andrea_train_done *d) {
    end_progress_line();
    if (d->reason == ANDREA_STOP_DONE) {
        printf("done: %lld steps in %.1f s; best val loss %.4f; checkpoints in '%s'\n",
               (long long)d->steps, d->seconds, d->best_val_loss, d->out_dir);
    } else {
        if (g_signal) printf("stopped by signal %d", (int)g_signal);
        else printf("stopped by --stop-at");
        printf(" at step %lld; checkpoint saved to '%s' (resume with --resume %s)\n",
               (long long)d->steps, d->ckpt_path, d->ckpt_path);
    }
    fflush(stdout);
}

/* ---- the command --------------------------------------------------------------------------- */

static int engine_apply(const engine_flags *e, andrea_train_options *o) {
    if (e->matmul || e->precision) {
        o->backend = backend_from_flags("train", o->backend, e->matmul, e->precision);
        if (!o->backend) return -1;
    }
    if (strcmp(e->attention, "flash") == 0) o->attention = ANDREA_ATTN_FLASH;
    else if (strcmp(e->attention, "explicit") == 0) o->attention = ANDREA_ATTN_EXPLICIT;
    else {
        fprintf(stderr, "andrea train: --attention '%s': expected flash or explicit\n", e->attention);
        return -1;
    }
    return 0;
}

static int parse(int argc, char **argv, andrea_train_options *o, engine_flags *e, arg_spec *specs,
                 int *n) {
    memset(e, 0, sizeof *e);
    e->attention = "flash";
    *n = build_specs(o, e, specs, MAX_SPECS);
    return args_parse("train", argc, argv, specs, *n, NULL, 0, NULL);
}

static int run(andrea_config *cfg, andrea_train_options *o) {
    andrea_train_sink sink = {on_start, on_step, on_eval, on_sample, on_skip, on_done, o};
    if (o->quiet) sink = (andrea_train_sink){NULL, NULL, NULL, NULL, on_skip, NULL, o};
    o->sink = &sink;
    o->should_stop = should_stop;
    o->should_save = should_save;
    struct sigaction sa, old_int, old_term, usr, old_usr;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    g_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    usr = sa;
    usr.sa_handler = on_usr1;
    sigaction(SIGUSR1, &usr, &old_usr);
    g_tty_line = isatty(STDOUT_FILENO);
    int rc = andrea_train(cfg, o);
    end_progress_line(); /* a failed run ends without on_done */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGUSR1, &old_usr, NULL);
    return rc;
}

/* A resume takes the checkpoint's tokenizer (a flag saying otherwise is an error, not
 * ignored) and, without -o, writes beside the checkpoint: into its own run folder,
 * never over whatever run sits in ./out. */
static int resume_flags(andrea_train_options *o, const arg_spec *specs, int n_specs, char *dir,
                        size_t n) {
    if (args_seen(specs, n_specs, "tokenizer")) {
        fprintf(stderr, "andrea train: --tokenizer cannot be given with --resume: a resume "
                "continues with the tokenizer stored in '%s'\n", o->resume_path);
        return -1;
    }
    if (args_seen(specs, n_specs, "out-dir")) return 0;
    const char *slash = strrchr(o->resume_path, '/');
    if (!slash) snprintf(dir, n, ".");
    else if (slash == o->resume_path) snprintf(dir, n, "/");
    else if ((size_t)(slash - o->resume_path) < n)
        snprintf(dir, n, "%.*s", (int)(slash - o->resume_path), o->resume_path);
    else {
        fprintf(stderr, "andrea train: --resume: path too long\n");
        return -1;
    }
    o->out_dir = dir;
    return 0;
}

int cmd_train(int argc, char **argv) {
    char out_dir[4096];
    andrea_train_options o;
    engine_flags e;
    arg_spec specs[MAX_SPECS];
    int n_specs;
    andrea_train_options_default(&o);
    /* pass 1: find --resume (and report flag errors once) */
    int r = parse(argc, argv, &o, &e, specs, &n_specs);
    if (r == 1) args_usage("train", SYNOPSIS, specs, n_specs);
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
    andrea_config saved = cfg;
    parse(argc, argv, &o, &e, specs, &n_specs);
    if (o.resume_path && resume_flags(&o, specs, n_specs, out_dir, sizeof out_dir)) return 2;
    if (o.resume_path && !model_flags_any(specs, n_specs)) cfg = saved;
    else if (model_flags_apply("train", &e.mf, specs, n_specs, "baby", &cfg)) return 2;
    if (engine_apply(&e, &o)) return 2;
    int nt = cli_set_threads(e.threads);
    if (!o.quiet && andrea_dist_env_rank() == 0) printf("threads: %d\n", nt); /* rank 0 prints */
    int rc = run(&cfg, &o);
    if (rc == ANDREA_TRAIN_INTERRUPTED) return 130;
    if (rc) {
        fprintf(stderr, "andrea train: %s\n", andrea_error());
        /* a rank cut off or dead: end the whole job, not just this rank */
        if (andrea_dist_failed()) andrea_dist_abort(1);
        return rc == ANDREA_TRAIN_BAD_OPTIONS ? 2 : 1;
    }
    return 0;
}
