/* curriculum_log.c - the curriculum's lines in log.jsonl (fields: docs/curriculum.md). */
#include <math.h>
#include <string.h>

#include "train/curriculum/curriculum.h"
#include "util/json.h"

static void name(FILE *f, const char *key, const char *s) {
    fprintf(f, "\"%s\":", key);
    andrea_json_write_string(f, s, strlen(s));
}

static void num(FILE *f, const char *key, double v) {
    if (isfinite(v)) fprintf(f, ",\"%s\":%.9g", key, v);
    else fprintf(f, ",\"%s\":null", key); /* an unplayed arm's UCB score is +inf */
}

void andrea_cur_log_start(const andrea_curriculum *c, FILE *f) {
    static const char *fmt[] = {"text", "chat", "tokens"};
    fprintf(f, "{\"type\":\"sources\",\"step\":%lld,\"policy\":\"%s\",\"manifest\":",
            (long long)c->step, andrea_policy_name(c->man.cur.policy));
    andrea_json_write_string(f, c->man.path, strlen(c->man.path));
    fprintf(f, ",\"warmup_steps\":%d,\"dice\":[%d,%d],\"sources\":[", c->man.cur.warmup_steps,
            c->man.cur.dice_min, c->man.cur.dice_max);
    for (int k = 0; k < c->man.n; k++) {
        const andrea_manifest_source *m = &c->man.src[k];
        const andrea_docset *d = &c->s[k].d;
        fputs(k ? ",{" : "{", f);
        name(f, "name", m->name);
        fprintf(f, ",\"format\":\"%s\",\"docs\":%lld,\"train_docs\":%lld,\"val_docs\":%lld,"
                "\"tokens\":%lld,\"val_tokens\":%lld", fmt[m->format], (long long)d->n_docs,
                (long long)d->n_train, (long long)(d->n_docs - d->n_train),
                (long long)d->start[d->n_train], (long long)d->n_val);
        num(f, "floor", m->floor);
        num(f, "cap", m->cap);
        num(f, "weight", m->weight);
        fprintf(f, ",\"warmup\":%s}", m->warmup ? "true" : "false");
    }
    fputs("]}\n", f);
}

void andrea_cur_log_step(const andrea_curriculum *c, FILE *f, int step, float loss) {
    fputs("{\"type\":\"batch\",", f);
    fprintf(f, "\"step\":%d,", step);
    name(f, "source", c->man.src[c->active].name);
    fprintf(f, ",\"k\":%d,\"doc\":%lld,\"loss\":%.9g}\n", c->active, (long long)c->step_doc, loss);
}

void andrea_cur_log_draw(const andrea_curriculum *c, FILE *f) {
    fprintf(f, "{\"type\":\"curriculum\",\"step\":%lld,", (long long)c->step);
    name(f, "active", c->man.src[c->active].name);
    fprintf(f, ",\"interval\":%d,\"policy\":\"%s\",\"sources\":[", c->steps_left,
            andrea_policy_name(c->man.cur.policy));
    for (int k = 0; k < c->man.n; k++) {
        const andrea_cur_source *s = &c->s[k];
        fputs(k ? ",{" : "{", f);
        name(f, "name", c->man.src[k].name);
        num(f, "ema", s->pulls ? s->ema : NAN);
        num(f, "reward", s->last_reward);
        num(f, "mean_reward", s->pulls ? s->reward_sum / (double)s->pulls : 0.0);
        fprintf(f, ",\"pulls\":%llu", (unsigned long long)s->pulls);
        num(f, "ucb", s->score);
        num(f, "weight", s->weight);
        num(f, "share", c->step ? (double)s->pulls / (double)c->step : 0.0);
        num(f, "coverage", andrea_cur_coverage(s));
        fprintf(f, ",\"epochs\":%u}", s->epochs);
    }
    fputs("]}\n", f);
}

void andrea_cur_log_pivot(const andrea_curriculum *c, FILE *f) {
    fprintf(f, "{\"type\":\"curriculum_pivot\",\"step\":%lld,\"policy\":\"%s\",\"manifest\":",
            (long long)c->step, andrea_policy_name(c->man.cur.policy));
    andrea_json_write_string(f, c->man.path, strlen(c->man.path));
    fputs(",\"note\":\"resumed under a new policy: the manifest's curriculum settings, floors, "
          "caps or weights differ from the checkpoint's\"}\n", f);
}
