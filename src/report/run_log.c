/*
 * run_log.c - log.jsonl into series (run_log.h), with jansson. What is read:
 *   start  batch, seq, grad-accum: tokens per step
 *   step   step, loss, loss_smooth, lr, grad_norm; source (curriculum runs): per-source
 *          loss EMA and steps, and the source each step drew
 *   sources the curriculum's description: policy, manifest, warmup, each source's format,
 *          documents, tokens, floor, cap, weight
 *   batch  (the curriculum's) step, source, loss: as a step's source
 *   eval, eval_source   step, val_loss; with "source": that source's validation loss; an object
 *          of numbers (e.g. "sources": {"books": 2.1, ...}): one validation loss each
 *   sample step, score, pass, gate, threshold, armed, strike, tokens, text
 *   any record with an object of per-source objects holding "weight": the weights
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/run_log.h"
#include "util/error.h"
#include "util/file.h"

#define GAP_FRACTION 50 /* a source's loss line breaks after 1/50 of the run without it */
#define GAP_MIN 10

static void xy_free(andrea_xy *s) {
    free(s->x);
    free(s->y);
    memset(s, 0, sizeof *s);
}

void andrea_run_log_free(andrea_run_log *log) {
    xy_free(&log->loss), xy_free(&log->smooth), xy_free(&log->lr), xy_free(&log->gnorm);
    xy_free(&log->val), xy_free(&log->gate), xy_free(&log->choice);
    for (int i = 0; i < log->n_samples; i++) free(log->samples[i].text);
    free(log->samples);
    for (int i = 0; i < log->n_src; i++) {
        andrea_log_source *s = &log->src[i];
        xy_free(&s->train), xy_free(&s->val), xy_free(&s->weight);
    }
    free(log->src);
    memset(log, 0, sizeof *log);
}

#ifdef ANDREA_HAVE_JANSSON
#include <jansson.h>

static int xy_add(andrea_xy *s, double x, double y) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        double *nx = realloc(s->x, sizeof *nx * (size_t)cap);
        if (nx) s->x = nx;
        double *ny = realloc(s->y, sizeof *ny * (size_t)cap);
        if (ny) s->y = ny;
        if (!nx || !ny) return -1;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n++] = y;
    return 0;
}

static double num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static andrea_log_source *source(andrea_run_log *log, const char *name) {
    for (int i = 0; i < log->n_src; i++)
        if (strcmp(log->src[i].name, name) == 0) return &log->src[i];
    if (log->n_src == log->cap_src) {
        int cap = log->cap_src ? 2 * log->cap_src : 16;
        andrea_log_source *p = realloc(log->src, sizeof *p * (size_t)cap);
        if (!p) return NULL;
        log->src = p;
        log->cap_src = cap;
    }
    andrea_log_source *s = &log->src[log->n_src++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->ema = NAN;
    return s;
}

/* A step's source and loss: "source" on a step record, or the curriculum's own "batch"
 * record (step, source, doc, loss). */
static int on_step_source(andrea_run_log *log, json_t *o) {
    double step = num(o, "step");
    const char *name = json_string_value(json_object_get(o, "source"));
    if (!name) return 0;
    andrea_log_source *s = source(log, name);
    if (!s) return -1;
    double loss = num(o, "loss");
    /* not drawn for a while: the line breaks rather than suggest a plateau */
    if (s->steps && (int64_t)step - s->last_step > log->gap && xy_add(&s->train, step, NAN))
        return -1;
    if (isfinite(loss)) {
        s->ema = isnan(s->ema) ? loss : 0.9 * s->ema + 0.1 * loss;
        if (xy_add(&s->train, step, s->ema)) return -1;
    }
    s->steps++;
    s->last_step = (int64_t)step;
    return xy_add(&log->choice, step, (double)(s - log->src));
}

/* The curriculum's "sources" record: the settings and each source's description. */
static int on_sources(andrea_run_log *log, json_t *o) {
    const char *p = json_string_value(json_object_get(o, "policy"));
    const char *m = json_string_value(json_object_get(o, "manifest"));
    snprintf(log->policy, sizeof log->policy, "%s", p ? p : "");
    snprintf(log->manifest, sizeof log->manifest, "%s", m ? m : "");
    log->warmup_steps = num(o, "warmup_steps");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(o, "sources"), i, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        andrea_log_source *s = name ? source(log, name) : NULL;
        if (!name) continue;
        if (!s) return -1;
        const char *f = json_string_value(json_object_get(v, "format"));
        snprintf(s->format, sizeof s->format, "%s", f ? f : "");
        s->has_meta = 1;
        s->docs = num(v, "docs"), s->tokens = num(v, "tokens"), s->floor = num(v, "floor");
        s->cap = num(v, "cap"), s->weight0 = num(v, "weight");
        s->warmup = json_is_true(json_object_get(v, "warmup"));
    }
    return 0;
}

/* The start record's batch shape: tokens per step. */
static void on_start(andrea_run_log *log, json_t *o) {
    json_t *opts = json_object_get(o, "options");
    if (!json_is_object(opts)) opts = o;
    double b = num(opts, "batch"), t = num(opts, "seq"), g = num(opts, "grad-accum");
    if (isfinite(b) && isfinite(t)) log->tokens_per_step = b * t * (isfinite(g) ? g : 1);
}

static int on_step(andrea_run_log *log, json_t *o) {
    double step = num(o, "step");
    int rc = xy_add(&log->loss, step, num(o, "loss")) | xy_add(&log->smooth, step, num(o, "loss_smooth")) |
             xy_add(&log->lr, step, num(o, "lr")) | xy_add(&log->gnorm, step, num(o, "grad_norm"));
    return rc ? rc : on_step_source(log, o);
}

static int on_eval(andrea_run_log *log, json_t *o) {
    double step = num(o, "step");
    const char *name = json_string_value(json_object_get(o, "source"));
    if (name) {
        andrea_log_source *s = source(log, name);
        return s ? xy_add(&s->val, step, num(o, "val_loss")) : -1;
    }
    if (isfinite(num(o, "val_loss")) && xy_add(&log->val, step, num(o, "val_loss"))) return -1;
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) { /* {"sources": {"books": 2.1, ...}} */
        if (!json_is_object(v)) continue;
        const char *sk;
        json_t *sv;
        json_object_foreach(v, sk, sv) {
            double x = json_is_number(sv) ? json_number_value(sv)
                       : json_is_object(sv) ? num(sv, "val_loss") : NAN;
            if (!isfinite(x)) continue;
            andrea_log_source *s = source(log, sk);
            if (!s || xy_add(&s->val, step, x)) return -1;
        }
    }
    return 0;
}

static int on_sample(andrea_run_log *log, json_t *o) {
    if (log->n_samples == log->cap_samples) {
        int cap = log->cap_samples ? 2 * log->cap_samples : 32;
        andrea_log_sample *p = realloc(log->samples, sizeof *p * (size_t)cap);
        if (!p) return -1;
        log->samples = p;
        log->cap_samples = cap;
    }
    andrea_log_sample *s = &log->samples[log->n_samples];
    memset(s, 0, sizeof *s);
    s->step = (int)num(o, "step");
    s->tokens = (int)num(o, "tokens");
    s->score = num(o, "score");
    s->threshold = json_is_number(json_object_get(o, "threshold")) ? num(o, "threshold") : 30.0;
    s->pass = json_is_true(json_object_get(o, "pass"));
    json_t *armed = json_object_get(o, "armed");
    s->armed = armed ? json_is_true(armed) : 1; /* older logs: armed from the start */
    const char *gate = json_string_value(json_object_get(o, "gate"));
    snprintf(s->gate, sizeof s->gate, "%s", gate ? gate : "course");
    const char *strike = json_string_value(json_object_get(o, "strike"));
    snprintf(s->strike, sizeof s->strike, "%s", strike ? strike : "");
    if (s->armed && log->arm_step < 0) log->arm_step = s->step;
    json_t *t = json_object_get(o, "text");
    size_t n = json_is_string(t) ? json_string_length(t) : 0;
    s->text = malloc(n + 1);
    if (!s->text) return -1;
    if (n) memcpy(s->text, json_string_value(t), n);
    s->text[n] = '\0';
    for (size_t i = 0; i < n; i++) /* a sample may hold NUL bytes (\u0000): keep the rest */
        if (!s->text[i]) s->text[i] = '?';
    log->n_samples++;
    log->threshold = s->threshold;
    return xy_add(&log->gate, s->step, s->score);
}

/* {"...": {"books": {"weight": 0.2, ...}, ...}} or {"...": [{"name": "books", "weight":
 * 0.2, ...}, ...]} (the curriculum's record) anywhere in a record: bandit weights. */
static int on_weights(andrea_run_log *log, json_t *o) {
    double step = num(o, "step");
    const char *key, *sk;
    json_t *v, *sv;
    json_object_foreach(o, key, v) {
        size_t i;
        json_array_foreach(v, i, sv) {
            sk = json_string_value(json_object_get(sv, "name"));
            if (!sk || !isfinite(num(sv, "weight"))) continue;
            andrea_log_source *s = source(log, sk);
            if (!s || xy_add(&s->weight, step, num(sv, "weight"))) return -1;
        }
        if (!json_is_object(v)) continue;
        json_object_foreach(v, sk, sv) {
            if (!json_is_object(sv) || !isfinite(num(sv, "weight"))) continue;
            andrea_log_source *s = source(log, sk);
            if (!s || xy_add(&s->weight, step, num(sv, "weight"))) return -1;
        }
    }
    return 0;
}

/* Step records in the log (a first pass), for the loss lines' gap; any JSON spacing. */
static int64_t count_steps(FILE *f) {
    char *line = NULL;
    size_t cap = 0;
    int64_t n = 0;
    while (getline(&line, &cap, f) > 0)
        n += strstr(line, "\"type\":\"step\"") || strstr(line, "\"type\": \"step\"");
    free(line);
    rewind(f);
    return n;
}

int andrea_run_log_read(const char *path, andrea_run_log *log) {
    memset(log, 0, sizeof *log);
    log->threshold = 30.0;
    FILE *f = andrea_file_fopen_regular(path, "the run's log", 0, NULL);
    if (!f) return -1;
    log->arm_step = -1;
    log->gap = count_steps(f) / GAP_FRACTION;
    if (log->gap < GAP_MIN) log->gap = GAP_MIN;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) > 0) {
        log->n_lines++;
        json_error_t err;
        json_t *o = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &err);
        if (!json_is_object(o)) { /* a line cut by a kill: skipped, counted */
            log->bad_lines++;
            json_decref(o);
            continue;
        }
        const char *type = json_string_value(json_object_get(o, "type"));
        if (!type) type = "";
        if (strcmp(type, "step") == 0) rc = on_step(log, o);
        else if (strcmp(type, "batch") == 0) rc = on_step_source(log, o);
        else if (strcmp(type, "sources") == 0) rc = on_sources(log, o);
        else if (strcmp(type, "start") == 0) on_start(log, o);
        else if (strcmp(type, "eval") == 0 || strcmp(type, "eval_source") == 0) rc = on_eval(log, o);
        else if (strcmp(type, "sample") == 0) rc = on_sample(log, o);
        if (rc == 0 && strcmp(type, "sample") != 0) rc = on_weights(log, o);
        json_decref(o);
    }
    free(line);
    fclose(f);
    if (rc) {
        andrea_run_log_free(log);
        return andrea_set_error("out of memory reading '%s'", path);
    }
    if (log->loss.n == 0 && log->n_samples == 0) {
        andrea_run_log_free(log);
        return andrea_set_error("'%s' has no step or sample records", path);
    }
    return 0;
}

#else
int andrea_run_log_read(const char *path, andrea_run_log *log) {
    memset(log, 0, sizeof *log);
    return andrea_set_error("reading '%s': andrea was built without jansson (apt install "
                            "libjansson-dev and rebuild)", path);
}
#endif
