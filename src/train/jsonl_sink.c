/* jsonl_sink.c - log.jsonl: one JSON object per line, flushed as it goes (a killed run
 * keeps its log): start or resume (time, model, data, every option), each step,
 * validation, sample and skipped step, then stop, end or error. Every line starts
 * {"type":T,"step":N, and every number is valid JSON: losses carry 9 significant digits
 * (two logs compare exactly); a value that is not finite is written as the string "nan",
 * "inf" or "-inf". A failed write is remembered (log->err) and stops the run.
 * On resume the file is cut back to the checkpoint's step, so no step appears twice. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "train/run_options.h"
#include "train/train_run.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/json.h"

/* ---- writing ---------------------------------------------------------------------------- */

static void value(FILE *f, double v, const char *fmt) {
    if (isfinite(v)) fprintf(f, fmt, v);
    else fputs(isnan(v) ? "\"nan\"" : v > 0 ? "\"inf\"" : "\"-inf\"", f);
}

static void num(FILE *f, const char *key, double v, const char *fmt) {
    fprintf(f, ",\"%s\":", key);
    value(f, v, fmt);
}

static void str(FILE *f, const char *key, const char *s) {
    fprintf(f, ",\"%s\":", key);
    if (s) andrea_json_write_string(f, s, strlen(s));
    else fputs("null", f);
}

/* {"type":T,"step":N,"time":"2026-12-01T02:40:00Z" (UTC) */
static void begin(FILE *f, const char *type, long long step) {
    char when[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "{\"type\":\"%s\",\"step\":%lld,\"time\":\"%s\"", type, step, when);
}

static void end(andrea_jsonl_log *log) {
    fputs("}\n", log->f);
    if ((fflush(log->f) != 0 || ferror(log->f)) && !log->err) log->err = errno ? errno : EIO;
}

/* every option of the table by its flag name: the configuration as run */
static void options(FILE *f, const andrea_train_options *o) {
    int n;
    const andrea_train_option *t = andrea_train_option_table(&n);
    fputs(",\"options\":{", f);
    for (int i = 0; i < n; i++) {
        const void *p = (const char *)o + t[i].offset;
        fprintf(f, "%s\"%s\":", i ? "," : "", t[i].flag);
        switch (t[i].type) {
        case ANDREA_OPT_FLOAT: value(f, *(const float *)p, "%.9g"); break;
        case ANDREA_OPT_U64: fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p); break;
        case ANDREA_OPT_STR: {
            const char *s = *(const char *const *)p;
            if (s) andrea_json_write_string(f, s, strlen(s));
            else fputs("null", f);
            break;
        }
        default: fprintf(f, "%d", *(const int *)p); break;
        }
    }
    fputc('}', f);
}

static void on_start(void *user, const andrea_train_start *s) {
    andrea_jsonl_log *log = user;
    FILE *f = log->f;
    const andrea_config *c = s->cfg;
    begin(f, s->start_step > 0 || s->opts->resume_path ? "resume" : "start",
          (long long)s->start_step);
    fprintf(f, ",\"pid\":%ld,\"model\":{\"n_layer\":%d,\"n_head\":%d,\"d_model\":%d,\"ctx\":%d,"
            "\"vocab\":%d,\"norm\":\"%s\",\"act\":\"%s\",\"bias\":%d,\"tied\":%d,\"params\":%lld}",
            (long)getpid(), c->n_layer, c->n_head, c->d_model, c->ctx, c->vocab,
            andrea_norm_name(c->norm), andrea_act_name(c->act), c->bias, c->tied,
            (long long)s->n_params);
    str(f, "tokenizer", s->tokenizer);
    str(f, "data", s->data);
    if (s->ranks) str(f, "ranks", s->ranks);
    fprintf(f, ",\"n_train\":%lld,\"n_val\":%lld", (long long)s->n_train, (long long)s->n_val);
    options(f, s->opts);
    log->mfu_measured = s->peak_gflops > 0;
    end(log);
}

static void on_step(void *user, const andrea_train_step *s) {
    andrea_jsonl_log *log = user;
    FILE *f = log->f;
    /* no time here: "step","loss" stay the line's first fields (tests/lib.sh step_losses) */
    fprintf(f, "{\"type\":\"step\",\"step\":%d", s->step);
    num(f, "loss", s->loss, "%.9g");
    num(f, "loss_smooth", s->loss_smooth, "%.9g");
    num(f, "lr", s->lr, "%.9g");
    num(f, "grad_norm", s->grad_norm, "%.9g");
    num(f, "ms", s->ms, "%.3f");
    num(f, "tok_per_s", s->tok_per_s, "%.1f");
    num(f, "eta_s", s->eta_s, "%.1f");
    if (log->mfu_measured) num(f, "mfu", s->mfu, "%.4f");
    else fputs(",\"mfu\":null", f); /* -q: no sgemm peak was measured */
    num(f, "comm_ms", s->comm_ms, "%.3f");
    end(log);
}

static void on_eval(void *user, int step, int max_steps, double val_loss, int best) {
    andrea_jsonl_log *log = user;
    fprintf(log->f, "{\"type\":\"eval\",\"step\":%d", step);
    num(log->f, "val_loss", val_loss, "%.9g");
    end(log);
}

static void on_sample(void *user, const andrea_train_sample *s) {
    andrea_jsonl_log *log = user;
    FILE *f = log->f;
    fprintf(f, "{\"type\":\"sample\",\"step\":%d,\"tokens\":%d", s->step, s->tokens);
    num(f, "score", s->score, "%.2f");
    num(f, "bigram", s->bigram, "%.2f");
    num(f, "trigram", s->trigram, "%.2f");
    num(f, "english", s->english, "%.2f");
    num(f, "chardiv", s->chardiv, "%.2f");
    fprintf(f, ",\"pass\":%s", s->pass ? "true" : "false");
    str(f, "gate", s->gate);
    num(f, "threshold", s->threshold, "%g");
    num(f, "dict", s->dict, "%.4f");
    num(f, "repeat", s->repeat, "%.4f");
    num(f, "charset", s->charset, "%.4f");
    num(f, "common", s->common, "%.4f");
    num(f, "order", s->order, "%.4f");
    str(f, "strike", s->strike);
    fprintf(f, ",\"armed\":%s,\"fails\":%d,\"text\":", s->armed ? "true" : "false", s->fails);
    andrea_json_write_string(f, (const unsigned char *)s->text, s->len);
    end(log);
}

static void on_skip(void *user, const andrea_train_skip *s) {
    andrea_jsonl_log *log = user;
    fprintf(log->f, "{\"type\":\"skip\",\"step\":%d", s->step);
    num(log->f, "loss", s->loss, "%.9g");
    num(log->f, "grad_norm", s->grad_norm, "%.9g");
    fprintf(log->f, ",\"bad_steps\":%d", s->bad_steps);
    if (s->reason) str(log->f, "reason", s->reason);
    end(log);
}

static void on_done(void *user, const andrea_train_done *d) {
    static const char *const WHY[] = {"done", "stop requested", "stop-at"};
    andrea_jsonl_log *log = user;
    begin(log->f, d->reason == ANDREA_STOP_DONE ? "end" : "stop", (long long)d->steps);
    str(log->f, "reason", WHY[d->reason >= 0 && d->reason <= 2 ? d->reason : 0]);
    num(log->f, "seconds", d->seconds, "%.3f");
    num(log->f, "best_val_loss", d->best_val_loss, "%.9g");
    str(log->f, "checkpoint", d->ckpt_path);
    end(log);
}

void andrea_jsonl_sink(andrea_jsonl_log *log, andrea_train_sink *out) {
    *out = (andrea_train_sink){on_start, on_step, on_eval, on_sample, on_skip, on_done, log};
}

void andrea_jsonl_error(andrea_jsonl_log *log, int64_t step, const char *message) {
    if (!log->f || log->err) return; /* the log itself failed: nowhere to say it */
    begin(log->f, "error", (long long)step);
    str(log->f, "message", message);
    end(log);
}

int andrea_jsonl_check(const andrea_jsonl_log *log) {
    if (!log->err) return 0;
    return andrea_set_error("log '%s': write failed: %s; training stopped", log->path,
                            strerror(log->err));
}

/* ---- opening ----------------------------------------------------------------------------- */

/* The offset where the lines to keep end: before the first torn line (no '\n') or
 * the first line of a step after keep_step. */
static long keep_until(FILE *f, int64_t keep_step) {
    long at = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] != '\n') break;
        const char *p = strstr(line, "\"step\":");
        if (p && strtoll(p + 7, NULL, 10) > keep_step) break;
        at += (long)n;
    }
    free(line);
    return at;
}

int andrea_jsonl_open(andrea_jsonl_log *log, const char *path, int resume, int64_t keep_step) {
    memset(log, 0, sizeof *log);
    log->path = strdup(path);
    if (!log->path) return andrea_set_error("out of memory");
    struct stat sb;
    int cut = resume && stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    log->f = andrea_output_fopen(path, cut ? "r+" : "w"); /* never a FIFO or a device */
    if (!log->f) return -1;
    if (cut) {
        long at = keep_until(log->f, keep_step);
        if (fflush(log->f) != 0 || ftruncate(fileno(log->f), at) != 0 ||
            fseek(log->f, at, SEEK_SET) != 0)
            return andrea_set_error("cannot cut log '%s' back to step %lld: %s", path,
                                    (long long)keep_step, strerror(errno));
    }
    return 0;
}

void andrea_jsonl_close(andrea_jsonl_log *log) {
    if (log->f) fclose(log->f);
    free(log->path);
    memset(log, 0, sizeof *log);
}
