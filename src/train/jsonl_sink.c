/* jsonl_sink.c - the sink that writes log.jsonl: one JSON object per line per step,
 * validation, sample and skipped step, flushed as it goes (a killed run keeps its log).
 * Losses carry 9 significant digits, so two logs compare exactly. */
#include <stdio.h>

#include "train/train_run.h"
#include "util/json.h"

static void on_step(void *user, const andrea_train_step *s) {
    FILE *f = user;
    fprintf(f, "{\"type\":\"step\",\"step\":%d,\"loss\":%.9g,\"loss_smooth\":%.9g,"
            "\"lr\":%.9g,\"grad_norm\":%.9g,\"ms\":%.3f,\"tok_per_s\":%.1f,\"eta_s\":%.1f,"
            "\"mfu\":%.4f}\n", s->step, s->loss, s->loss_smooth, s->lr, s->grad_norm, s->ms,
            s->tok_per_s, s->eta_s, s->mfu);
    fflush(f);
}

static void on_eval(void *user, int step, int max_steps, double val_loss, int best) {
    FILE *f = user;
    fprintf(f, "{\"type\":\"eval\",\"step\":%d,\"val_loss\":%.9g}\n", step, val_loss);
    fflush(f);
}

static void on_sample(void *user, const andrea_train_sample *s) {
    FILE *f = user;
    fprintf(f, "{\"type\":\"sample\",\"step\":%d,\"tokens\":%d,\"score\":%.2f,"
            "\"bigram\":%.2f,\"trigram\":%.2f,\"english\":%.2f,\"chardiv\":%.2f,"
            "\"pass\":%s,\"gate\":\"%s\",\"threshold\":%g,\"dict\":%.4f,\"repeat\":%.4f,"
            "\"charset\":%.4f,\"armed\":%s,\"fails\":%d,\"text\":", s->step, s->tokens,
            s->score, s->bigram, s->trigram, s->english, s->chardiv, s->pass ? "true" : "false",
            s->gate, s->threshold, s->dict, s->repeat, s->charset, s->armed ? "true" : "false",
            s->fails);
    andrea_json_write_string(f, (const unsigned char *)s->text, s->len);
    fputs("}\n", f);
    fflush(f);
}

static void on_skip(void *user, const andrea_train_skip *s) {
    FILE *f = user;
    fprintf(f, "{\"type\":\"skip\",\"step\":%d,\"loss\":\"%g\",\"grad_norm\":\"%g\"}\n", s->step,
            s->loss, s->grad_norm);
    fflush(f);
}

void andrea_jsonl_sink(FILE *log, andrea_train_sink *out) {
    *out = (andrea_train_sink){NULL, on_step, on_eval, on_sample, on_skip, NULL, log};
}
