/*
 * sample_gate.c - the sample-quality monitor: every sample_every steps, generate
 * sample_tokens tokens from BOS through andrea_generate (temperature 0.8, no filtering,
 * a seed derived from the run's seed and the step, so no extra state is needed to resume
 * exactly), score the text with the coherence gate (andrea_gate.h) and report it.
 */
#include <stdio.h>

#include "train/train_run.h"
#include "util/error.h"

int andrea_run_gate_open(andrea_train_run *r) {
    if (r->o.sample_every <= 0) return 0;
    r->gate = andrea_gate_load(r->o.words_path);
    if (!r->gate) {
        char why[600];
        snprintf(why, sizeof why, "%s", andrea_error());
        return andrea_set_error("coherence gate: %s (install wamerican, give --words FILE, or "
                                "turn sampling off with --sample-every 0)", why);
    }
    r->kv = andrea_kv_create(r->m);
    return r->kv ? 0 : -1;
}

typedef struct {
    andrea_bytes text;
    int oom;
} sample_text;

static void collect(const void *bytes, size_t n, void *user) {
    sample_text *t = user;
    if (!t->oom && andrea_bytes_append(&t->text, bytes, n)) t->oom = 1;
}

int andrea_run_sample(andrea_train_run *r, int step, andrea_gate_result *gr) {
    const andrea_train_options *o = &r->o;
    andrea_rng rng;
    andrea_rng_seed(&rng, o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)step);
    sample_text t = {{0}, 0};
    andrea_gen_options g = {0};
    andrea_sampler_default(&g.sampler); /* temperature 0.8, no filtering */
    /* the BOS takes position 0, so at most ctx - 1 tokens fit */
    g.n_predict = o->sample_tokens < r->cfg.ctx ? o->sample_tokens : r->cfg.ctx - 1;
    g.emit = collect;
    g.user = &t;
    andrea_gen_result res;
    andrea_kv_reset(r->kv);
    const float *logits = andrea_kv_step(r->m, r->kv, andrea_tokenizer_bos(r->tok));
    int rc = andrea_generate(r->m, r->kv, r->tok, logits, &g, &rng, &res);
    if (rc == 0 && t.oom) rc = andrea_set_error("out of memory while sampling");
    if (rc == 0) rc = andrea_gate_score((const char *)t.text.data, t.text.len, r->gate, gr);
    if (rc == 0) {
        andrea_train_sample s = {step, o->max_steps, res.n_generated, gr->total, gr->bigram,
                                 gr->trigram, gr->english, gr->chardiv,
                                 gr->total >= o->gate_threshold, (const char *)t.text.data, t.text.len};
        ANDREA_REPORT(r, on_sample, &s);
    }
    andrea_bytes_free(&t.text);
    return rc;
}
