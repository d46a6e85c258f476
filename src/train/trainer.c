/*
 * trainer.c - the training loop: batches, forward/backward with gradient
 * accumulation, global-norm clipping, AdamW on ANDREA's schedule, validation,
 * progress and JSONL logs, checkpoints (periodic, best, on SIGINT/SIGTERM)
 * and exact resume.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kernels/kernels.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/corpus.h"
#include "andrea_gate.h"
#include "util/json.h"
#include "train/data.h"
#include "util/bigalloc.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/perf.h"

void andrea_train_options_default(andrea_train_options *o) {
    memset(o, 0, sizeof *o);
    o->val_fraction = 0.1f;
    o->batch = 12;
    o->seq = 64;
    o->grad_accum = 1;
    o->max_steps = 2000;
    o->lr = 1e-3f;
    o->lr_min = 1e-4f;
    o->warmup = 100;
    o->beta1 = 0.9f;
    o->beta2 = 0.99f;
    o->eps = 1e-8f;
    o->weight_decay = 0.1f;
    o->grad_clip = 1.0f;
    o->seed = 1337;
    o->eval_every = 250;
    o->eval_batches = 0;
    o->ckpt_every = 500;
    o->log_every = 1;
    o->max_bad_steps = 5;
    o->sample_every = 100;
    o->sample_tokens = 420;
    o->gate_threshold = 30.0f;
    o->gate_patience = 5;
    o->out_dir = "out";
    o->inject_nan_step = -1;
}

int andrea_train_options_from_checkpoint(const char *path, andrea_config *cfg,
                                         andrea_train_options *o) {
    andrea_ckpt_state s;
    if (andrea_checkpoint_peek(path, cfg, &s)) return -1;
    o->batch = s.batch;
    o->seq = s.seq;
    o->grad_accum = s.grad_accum;
    o->max_steps = s.max_steps;
    o->warmup = s.warmup;
    o->eval_every = s.eval_every;
    o->eval_batches = s.eval_batches;
    o->ckpt_every = s.ckpt_every;
    o->log_every = s.log_every;
    o->max_bad_steps = s.max_bad_steps;
    o->lr = s.lr;
    o->lr_min = s.lr_min;
    o->beta1 = s.beta1;
    o->beta2 = s.beta2;
    o->eps = s.eps;
    o->weight_decay = s.weight_decay;
    o->grad_clip = s.grad_clip;
    o->val_fraction = s.val_fraction;
    o->seed = s.seed;
    o->sample_every = s.sample_every;
    o->sample_tokens = s.sample_tokens;
    o->gate_threshold = s.gate_threshold;
    o->gate_patience = s.gate_patience;
    o->resume_path = path;
    return 0;
}

int andrea_eval_tokens(andrea_model *m, const int32_t *tokens, int64_t n, int B, int T,
                       int max_batches, double *mean_loss, int64_t *n_tokens) {
    andrea_dataset d = {(int32_t *)tokens, n, 0, 0}; /* borrowed: all of it is "validation" */
    int64_t nw = andrea_dataset_val_windows(&d, T);
    if (nw == 0)
        return andrea_set_error("evaluation needs at least %d tokens, got %lld", T + 1,
                                (long long)n);
    int32_t *x = malloc(sizeof(int32_t) * (size_t)B * T * 2);
    if (!x) return andrea_set_error("out of memory");
    int32_t *y = x + (size_t)B * T;
    double total = 0.0;
    int64_t count = 0;
    int batches = 0;
    for (int64_t w = 0; w < nw && (max_batches <= 0 || batches < max_batches); w += B, batches++) {
        andrea_dataset_val_batch(&d, w, B, T, x, y);
        float loss = andrea_model_forward(m, x, y, B, T);
        if (isnan(loss) && andrea_error()[0]) {
            free(x);
            return -1;
        }
        total += (double)loss * m->ctx->n_valid;
        count += m->ctx->n_valid;
    }
    free(x);
    *mean_loss = total / (double)count;
    if (n_tokens) *n_tokens = count;
    return 0;
}

/* ---- signals ------------------------------------------------------------------------- */

static volatile sig_atomic_t g_stop_signal = 0;
static void on_signal(int sig) { g_stop_signal = sig; }

/* ---- helpers ----------------------------------------------------------------------------- */

static void format_eta(double s, char *buf, size_t n) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

/* mkdir -p: the parents too (`-o runs/shakespeare/small` on a fresh checkout). */
static int make_dir(const char *path) {
    char partial[4096];
    size_t len = strlen(path);
    if (len >= sizeof partial)
        return andrea_set_error("output directory '%s': path too long", path);
    memcpy(partial, path, len + 1);
    for (size_t i = 1; i < len; i++) {
        if (partial[i] != '/') continue;
        partial[i] = '\0';
        if (mkdir(partial, 0777) != 0 && errno != EEXIST)
            return andrea_set_error("cannot create output directory '%s': %s (at '%s')", path,
                                    strerror(errno), partial);
        partial[i] = '/';
    }
    if (mkdir(path, 0777) == 0 || errno == EEXIST) {
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return 0;
        return andrea_set_error("output directory '%s' exists and is not a directory", path);
    }
    return andrea_set_error("cannot create output directory '%s': %s", path, strerror(errno));
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static int validate_options(const andrea_config *cfg, const andrea_train_options *o) {
    if (!o->data_path) return andrea_set_error("no training data: give a text file with --data");
    if (o->batch <= 0 || o->seq <= 0 || o->grad_accum <= 0 || o->max_steps < 0)
        return andrea_set_error("--batch, --seq and --grad-accum must be positive and "
                                "--max-steps >= 0 (got %d, %d, %d, %d)", o->batch, o->seq,
                                o->grad_accum, o->max_steps);
    if (o->seq > cfg->ctx)
        return andrea_set_error("--seq %d is longer than the model context %d", o->seq, cfg->ctx);
    if (!(o->lr > 0) || o->lr_min < 0 || o->lr_min > o->lr)
        return andrea_set_error("need 0 <= --lr-min <= --lr and --lr > 0 (got %g, %g)", o->lr_min,
                                o->lr);
    if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1) || !(o->eps > 0))
        return andrea_set_error("need 0 <= beta1, beta2 < 1 and eps > 0");
    if (o->weight_decay < 0 || o->grad_clip < 0 || o->warmup < 0)
        return andrea_set_error("--weight-decay, --grad-clip and --warmup must be >= 0");
    if (o->max_bad_steps <= 0) return andrea_set_error("--max-bad-steps must be positive");
    if (o->sample_every < 0 || o->sample_tokens <= 0 || o->gate_patience <= 0 ||
        !(o->gate_threshold >= 0 && o->gate_threshold <= 100))
        return andrea_set_error("need --sample-every >= 0, --sample-tokens > 0, --gate-patience > 0 "
                                "and 0 <= --gate-threshold <= 100");
    return 0;
}

typedef struct {
    andrea_model *m;
    float *adam_m, *adam_v;
    andrea_ckpt_state st;
    const void *blob; /* the serialized tokenizer, embedded in every checkpoint */
    size_t blob_len;
} train_state;

static int save(const char *path, train_state *ts, int with_moments) {
    return andrea_checkpoint_save(path, ts->m, with_moments ? ts->adam_m : NULL,
                                  with_moments ? ts->adam_v : NULL, &ts->st, ts->blob,
                                  ts->blob_len);
}

/* Generates o->sample_tokens tokens from BOS (temperature 0.8, a seed derived from the run's
 * seed and the step, so no extra state is needed to resume exactly), scores the text with
 * the coherence gate and logs both. */
static int sample_and_score(train_state *ts, andrea_kv *kv, const andrea_tokenizer *tok,
                            const andrea_gate *gate, const andrea_train_options *o, int step,
                            FILE *log, andrea_gate_result *gr) {
    andrea_model *m = ts->m;
    andrea_rng rng;
    andrea_rng_seed(&rng, o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)step);
    andrea_sampler sampler;
    andrea_sampler_default(&sampler); /* temperature 0.8, no filtering */
    int32_t bos = andrea_tokenizer_bos(tok);
    int n = o->sample_tokens < m->cfg.ctx ? o->sample_tokens : m->cfg.ctx - 1;
    andrea_bytes text = {0};
    andrea_kv_reset(kv);
    const float *logits = andrea_kv_step(m, kv, bos);
    int produced = 0;
    for (int i = 0; i < n && logits; i++) {
        int t = andrea_sample(logits, m->cfg.vocab, &sampler, &rng);
        if (t < 0) return andrea_set_error("out of memory while sampling");
        if (t == bos) break;
        size_t len = 0;
        const uint8_t *b = andrea_tokenizer_token_bytes(tok, t, &len);
        if (b && len && andrea_bytes_append(&text, b, len)) {
            andrea_bytes_free(&text);
            return andrea_set_error("out of memory while sampling");
        }
        produced++;
        if (i + 1 < n) logits = andrea_kv_step(m, kv, t);
    }
    int rc = andrea_gate_score((const char *)text.data, text.len, gate, gr);
    if (rc == 0) {
        fprintf(log, "{\"type\":\"sample\",\"step\":%d,\"tokens\":%d,\"score\":%.2f,"
                "\"bigram\":%.2f,\"trigram\":%.2f,\"english\":%.2f,\"chardiv\":%.2f,"
                "\"pass\":%s,\"text\":", step, produced, gr->total, gr->bigram, gr->trigram,
                gr->english, gr->chardiv, gr->total >= o->gate_threshold ? "true" : "false");
        andrea_json_write_string(log, text.data, text.len);
        fputs("}\n", log);
        if (!o->quiet) {
            printf("step %5d/%d | sample score %.1f (bigram %.1f trigram %.1f english %.1f "
                   "chars %.1f)%s\n", step, o->max_steps, gr->total, gr->bigram, gr->trigram,
                   gr->english, gr->chardiv, gr->total < o->gate_threshold ? " FAIL" : "");
            fflush(stdout);
        }
    }
    andrea_bytes_free(&text);
    return rc;
}

/* ---- the loop ----------------------------------------------------------------------------- */

int andrea_train(const andrea_config *cfg_in, const andrea_train_options *o) {
    andrea_config cfg = *cfg_in;
    if (andrea_config_validate(&cfg) || validate_options(&cfg, o)) return -1;

    /* resuming: the whole state, including the tokenizer the run started with */
    train_state ts;
    memset(&ts, 0, sizeof ts);
    andrea_ckpt_state resumed;
    andrea_tokenizer *tok = NULL;
    if (o->resume_path) {
        void *blob = NULL;
        uint64_t blen = 0;
        ts.m = andrea_checkpoint_load(o->resume_path, &ts.adam_m, &ts.adam_v, &resumed, &blob,
                                      &blen);
        if (!ts.m) return -1;
        char what[600];
        snprintf(what, sizeof what, "checkpoint '%s'", o->resume_path);
        tok = blen ? andrea_tokenizer_deserialize(blob, (size_t)blen, what) : andrea_tokenizer_byte();
        free(blob);
        if (!tok) {
            free(ts.adam_m);
            free(ts.adam_v);
            andrea_model_free(ts.m);
            return -1;
        }
    }
    int32_t *tokens;
    int64_t n_tokens;
    uint64_t data_hash;
    if (andrea_corpus_load(o->data_path, o->tokenizer, &tok, &tokens, &n_tokens, &data_hash)) {
        free(ts.adam_m);
        free(ts.adam_v);
        andrea_model_free(ts.m);
        andrea_tokenizer_free(tok);
        return -1;
    }
    int32_t tok_vocab = andrea_tokenizer_vocab_size(tok);
    if (!o->resume_path && cfg.vocab != tok_vocab) {
        if (!o->quiet)
            printf("note: vocab set to %d by the %s tokenizer (the preset said %d)\n", tok_vocab,
                   andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)), cfg.vocab);
        cfg.vocab = tok_vocab;
    }
    andrea_bytes tok_blob = {0};
    andrea_dataset data;
    memset(&data, 0, sizeof data);
    andrea_rng data_rng;
    int rc = -1;
    char *ckpt_path = NULL, *best_path = NULL, *log_path = NULL;
    FILE *log = NULL;
    int32_t *x = NULL, *y = NULL;
    andrea_gate *gate = NULL;
    andrea_kv *kv = NULL;

    if (andrea_tokenizer_serialize(tok, &tok_blob)) {
        free(tokens);
        goto done;
    }
    if (andrea_dataset_init(&data, tokens, n_tokens, o->val_fraction, o->seq, data_hash,
                            o->data_path))
        goto done;
    if (o->resume_path) {
        andrea_ckpt_state st = resumed;
        if (!ts.adam_m) {
            andrea_set_error("checkpoint '%s' holds weights only (no AdamW state); resume from a "
                             "full checkpoint such as ckpt.bin", o->resume_path);
            goto done;
        }
        if (memcmp(&ts.m->cfg, &cfg, sizeof cfg) != 0) {
            andrea_set_error("the model flags given conflict with checkpoint '%s'; drop them "
                             "when resuming", o->resume_path);
            goto done;
        }
        if (st.data_checksum != data_hash) {
            andrea_set_error("'%s' is not the data checkpoint '%s' was trained on (checksum "
                             "differs)", o->data_path, o->resume_path);
            goto done;
        }
        ts.st = st;
        data_rng.s[0] = st.data_rng[0];
        data_rng.s[1] = st.data_rng[1];
    } else {
        ts.m = andrea_model_create(&cfg, o->seed);
        if (!ts.m) goto done;
        size_t n = (size_t)ts.m->layout.total;
        ts.adam_m = andrea_big_calloc(n * sizeof(float));
        ts.adam_v = andrea_big_calloc(n * sizeof(float));
        if (!ts.adam_m || !ts.adam_v) {
            andrea_set_error("out of memory allocating AdamW state");
            goto done;
        }
        andrea_rng_seed(&data_rng, o->seed ^ 0xD1B54A32D192ED03ull);
        ts.st.best_val_loss = INFINITY;
        ts.st.smooth_loss = NAN;
        ts.st.step = 0;
    }
    ts.st.data_rng[0] = data_rng.s[0];
    ts.st.data_rng[1] = data_rng.s[1];
    andrea_model *m = ts.m;
    andrea_model_set_flash_attention(m, o->attention != ANDREA_ATTN_EXPLICIT);
    andrea_model_zero_grad(m);
    if (!m->grads) goto done;
    /* the state that a checkpoint records besides the tensors */
    ts.st.tokenizer_kind = (uint32_t)andrea_tokenizer_kind(tok);
    ts.st.tokenizer_checksum = andrea_tokenizer_checksum(tok);
    ts.blob = tok_blob.data;
    ts.blob_len = tok_blob.len;
    ts.st.seed = o->seed;
    ts.st.data_checksum = data_hash;
    ts.st.batch = o->batch;
    ts.st.seq = o->seq;
    ts.st.grad_accum = o->grad_accum;
    ts.st.max_steps = o->max_steps;
    ts.st.warmup = o->warmup;
    ts.st.eval_every = o->eval_every;
    ts.st.eval_batches = o->eval_batches;
    ts.st.ckpt_every = o->ckpt_every;
    ts.st.log_every = o->log_every;
    ts.st.max_bad_steps = o->max_bad_steps;
    ts.st.lr = o->lr;
    ts.st.lr_min = o->lr_min;
    ts.st.beta1 = o->beta1;
    ts.st.beta2 = o->beta2;
    ts.st.eps = o->eps;
    ts.st.weight_decay = o->weight_decay;
    ts.st.grad_clip = o->grad_clip;
    ts.st.val_fraction = o->val_fraction;
    ts.st.sample_every = o->sample_every;
    ts.st.sample_tokens = o->sample_tokens;
    ts.st.gate_patience = o->gate_patience;
    ts.st.gate_threshold = o->gate_threshold;

    if (make_dir(o->out_dir)) goto done;
    ckpt_path = join(o->out_dir, "ckpt.bin");
    best_path = join(o->out_dir, "best.bin");
    log_path = join(o->out_dir, "log.jsonl");
    if (!ckpt_path || !best_path || !log_path) {
        andrea_set_error("out of memory");
        goto done;
    }
    log = fopen(log_path, o->resume_path ? "a" : "w");
    if (!log) {
        andrea_set_error("cannot write log '%s': %s", log_path, strerror(errno));
        goto done;
    }

    if (o->sample_every > 0) {
        gate = andrea_gate_load(o->words_path);
        kv = gate ? andrea_kv_create(m) : NULL;
        if (!gate || !kv) {
            if (!gate) {
                char why[600];
                snprintf(why, sizeof why, "%s", andrea_error());
                andrea_set_error("coherence gate: %s (install wamerican, give --words FILE, or "
                                 "turn sampling off with --sample-every 0)", why);
            }
            goto done;
        }
    }

    int B = o->batch, T = o->seq;
    x = malloc(sizeof(int32_t) * (size_t)B * T * 2);
    if (!x) {
        andrea_set_error("out of memory");
        goto done;
    }
    y = x + (size_t)B * T;
    int64_t n_params = m->layout.total;
    int64_t val_windows = andrea_dataset_val_windows(&data, T);

    if (!o->quiet) {
        printf("model: L=%d NH=%d C=%d T=%d V=%d norm=%s act=%s bias=%d tied=%d | %.3fM params\n",
               cfg.n_layer, cfg.n_head, cfg.d_model, cfg.ctx, cfg.vocab, andrea_norm_name(cfg.norm),
               andrea_act_name(cfg.act), cfg.bias, cfg.tied, n_params / 1e6);
        printf("data: '%s' %lld tokens (%s tokenizer, V=%d): %lld train, %lld validation\n",
               o->data_path, (long long)data.n,
               andrea_tokenizer_kind_name(andrea_tokenizer_kind(tok)), tok_vocab,
               (long long)data.n_train,
               (long long)(data.n - data.n_train));
        printf("train: B=%d T=%d accum=%d steps=%d lr=%g->%g warmup=%d betas=%g/%g eps=%g "
               "wd=%g clip=%g seed=%llu\n", B, T, o->grad_accum, o->max_steps, o->lr, o->lr_min,
               o->warmup, o->beta1, o->beta2, o->eps, o->weight_decay, o->grad_clip,
               (unsigned long long)o->seed);
        if (o->resume_path)
            printf("resuming '%s' at step %lld\n", o->resume_path, (long long)ts.st.step);
        fflush(stdout);
    }

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    g_stop_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    /* MFU is measured against this machine's sgemm, measured now (0.3 s) */
    double peak_gflops = o->quiet ? 0.0
                                  : andrea_perf_sgemm_gflops(512, 0.3,
                                                             andrea_matmul_backend() == ANDREA_MATMUL_BLAS);
    double flops_per_tok = andrea_train_flops_per_token(&cfg, T);
    if (!o->quiet) {
        printf("mfu: %.2f MFLOP per token; sgemm peak here %.1f GFLOP/s\n", flops_per_tok / 1e6,
               peak_gflops);
        fflush(stdout);
    }
    int bad_steps = 0;
    double t_start = andrea_now(), ms_sum = 0.0;
    int timed_steps = 0;
    rc = 0;
    while (ts.st.step < o->max_steps) {
        int step = (int)ts.st.step;
        double t0 = andrea_now();
        float lr = andrea_lr_at(o, step);
        andrea_model_zero_grad(m);
        double loss_sum = 0.0;
        for (int micro = 0; micro < o->grad_accum; micro++) {
            andrea_dataset_train_batch(&data, &data_rng, B, T, x, y);
            float l = andrea_model_forward(m, x, y, B, T);
            loss_sum += l;
            if (andrea_model_backward_scaled(m, 1.0f / o->grad_accum)) {
                rc = -1;
                break;
            }
        }
        if (rc) break;
        float loss = (float)(loss_sum / o->grad_accum);
        if (o->inject_nan_step >= 0 && step >= o->inject_nan_step &&
            step < o->inject_nan_step + o->inject_nan_count)
            m->grads[0] = NAN;
        float gnorm = (float)sqrt(andrea_grad_sum_squares(m->grads, (size_t)n_params));
        if (!isfinite(loss) || !isfinite(gnorm)) {
            bad_steps++;
            fprintf(stderr, "warning: step %d: non-finite %s (%g); update skipped (%d of %d "
                    "allowed in a row)\n", step + 1, isfinite(loss) ? "gradient norm" : "loss",
                    isfinite(loss) ? gnorm : loss, bad_steps, o->max_bad_steps);
            fprintf(log, "{\"type\":\"skip\",\"step\":%d,\"loss\":\"%g\",\"grad_norm\":\"%g\"}\n",
                    step + 1, loss, gnorm);
            fflush(log);
            if (bad_steps >= o->max_bad_steps) {
                andrea_set_error("training stopped at step %d: %d consecutive non-finite steps "
                                 "(lower --lr or --grad-clip?); the last good checkpoint is '%s'",
                                 step + 1, bad_steps, ckpt_path);
                rc = -1;
                break;
            }
            ts.st.step++; /* the step is consumed (its batch drawn), the weights untouched */
            continue;
        }
        bad_steps = 0;
        /* clipping scales the gradient inside the AdamW pass */
        float gscale = o->grad_clip > 0 && gnorm > o->grad_clip ? o->grad_clip / gnorm : 1.0f;
        for (int i = 0; i < m->layout.n; i++) {
            const andrea_tensor_info *t = &m->layout.t[i];
            andrea_adamw_update(m->params + t->offset, m->grads + t->offset, ts.adam_m + t->offset,
                         ts.adam_v + t->offset, (size_t)t->size, lr, o->beta1, o->beta2, o->eps,
                         t->decay ? o->weight_decay : 0.0f, step + 1, gscale);
        }
        ts.st.step++;
        int done_steps = (int)ts.st.step;
        ts.st.data_rng[0] = data_rng.s[0];
        ts.st.data_rng[1] = data_rng.s[1];
        ts.st.smooth_loss = isnan(ts.st.smooth_loss) ? loss : 0.9f * ts.st.smooth_loss + 0.1f * loss;

        double ms = (andrea_now() - t0) * 1e3;
        if (step > 0 || o->resume_path) { /* the first step pays for allocation */
            ms_sum += ms;
            timed_steps++;
        }
        double avg_ms = timed_steps ? ms_sum / timed_steps : ms;
        double tok_s = (double)B * T * o->grad_accum / (ms / 1e3);
        double eta = avg_ms * (o->max_steps - done_steps) / 1e3;
        double mfu = peak_gflops > 0 ? flops_per_tok * tok_s / 1e9 / peak_gflops : 0.0;
        fprintf(log, "{\"type\":\"step\",\"step\":%d,\"loss\":%.9g,\"loss_smooth\":%.9g,"
                "\"lr\":%.9g,\"grad_norm\":%.9g,\"ms\":%.3f,\"tok_per_s\":%.1f,\"eta_s\":%.1f,"
                "\"mfu\":%.4f}\n", done_steps, loss, ts.st.smooth_loss, lr, gnorm, ms, tok_s, eta, mfu);
        if (!o->quiet && o->log_every > 0 &&
            (done_steps % o->log_every == 0 || done_steps == o->max_steps)) {
            char etabuf[32];
            format_eta(eta, etabuf, sizeof etabuf);
            printf("step %5d/%d | loss %.4f | smooth %.4f | lr %.2e | gnorm %.3f | %.1f ms | "
                   "%.0f tok/s | MFU %.0f%% | ETA %s\n", done_steps, o->max_steps, loss,
                   ts.st.smooth_loss, lr, gnorm, ms, tok_s, 100.0 * mfu, etabuf);
            fflush(stdout);
        }

        int last = done_steps == o->max_steps;
        if (val_windows > 0 && ((o->eval_every > 0 && done_steps % o->eval_every == 0) || last)) {
            double vl;
            if (andrea_eval_tokens(m, data.tokens + data.n_train, data.n - data.n_train, B, T,
                                   o->eval_batches, &vl, NULL)) {
                rc = -1;
                break;
            }
            fprintf(log, "{\"type\":\"eval\",\"step\":%d,\"val_loss\":%.9g}\n", done_steps, vl);
            int improved = vl < ts.st.best_val_loss;
            if (!o->quiet) {
                printf("step %5d/%d | val loss %.4f%s\n", done_steps, o->max_steps, vl,
                       improved ? " (best)" : "");
                fflush(stdout);
            }
            if (improved) {
                ts.st.best_val_loss = (float)vl;
                if (save(best_path, &ts, 0)) {
                    rc = -1;
                    break;
                }
            }
        }
        if (o->sample_every > 0 && done_steps % o->sample_every == 0) {
            andrea_gate_result gr;
            if (sample_and_score(&ts, kv, tok, gate, o, done_steps, log, &gr)) {
                rc = -1;
                break;
            }
            ts.st.gate_fails = gr.total < o->gate_threshold ? ts.st.gate_fails + 1 : 0;
            if (ts.st.gate_fails >= o->gate_patience) {
                save(ckpt_path, &ts, 1); /* a coherent state, kept for inspection */
                andrea_set_error("coherence gate: %d consecutive samples scored below %g (last "
                                 "%.1f) at step %d; training halted, state in '%s'",
                                 ts.st.gate_fails, o->gate_threshold, gr.total, done_steps,
                                 ckpt_path);
                rc = -1;
                break;
            }
        }
        fflush(log);
        int stop_here = g_stop_signal || (o->stop_at > 0 && done_steps >= o->stop_at && !last);
        if ((o->ckpt_every > 0 && done_steps % o->ckpt_every == 0) || last || stop_here) {
            if (save(ckpt_path, &ts, 1)) {
                rc = -1;
                break;
            }
        }
        if (stop_here) {
            if (!o->quiet) {
                if (g_stop_signal) printf("stopped by signal %d", (int)g_stop_signal);
                else printf("stopped by --stop-at");
                printf(" at step %d; checkpoint saved to '%s' (resume with --resume %s)\n",
                       done_steps, ckpt_path, ckpt_path);
            }
            rc = ANDREA_TRAIN_INTERRUPTED;
            break;
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc == 0 && !o->quiet) {
        printf("done: %lld steps in %.1f s; best val loss %.4f; checkpoints in '%s'\n",
               (long long)ts.st.step, andrea_now() - t_start, ts.st.best_val_loss, o->out_dir);
        fflush(stdout);
    }
    if (rc == 0 && ts.st.step == 0 && o->max_steps == 0) {
        /* nothing to train: still leave a checkpoint of the initial weights */
        if (save(ckpt_path, &ts, 1)) rc = -1;
    }

done:
    andrea_kv_free(kv);
    andrea_gate_free(gate);
    if (log) fclose(log);
    free(x);
    free(ckpt_path);
    free(best_path);
    free(log_path);
    free(ts.adam_m);
    free(ts.adam_v);
    andrea_model_free(ts.m);
    andrea_dataset_free(&data);
    andrea_bytes_free(&tok_blob);
    andrea_tokenizer_free(tok);
    return rc;
}
