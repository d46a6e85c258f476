/*
 * sample_gate.c - the sample-quality monitor: every sample_every steps, generate
 * sample_tokens tokens from BOS through andrea_generate (temperature 0.8, no filtering,
 * a seed derived from the run's seed and the step, so no extra state is needed to resume
 * exactly), score the text with the coherence gate (andrea_gate.h: --gate honest or
 * course) and report it; then the halting rule, counted only once the gate is armed.
 *
 * The sample is always sample_tokens long (the course's 420), whatever the context:
 * when the context fills, its last half is kept and generation goes on (the context
 * shift of andrea_generate); a BOS ends a document, so it is written as a newline and
 * generation continues after it (the BOS is one of the sample_tokens). A small-context model (baby: 64) is thus judged on
 * as many words as a large one.
 */
#include <stdio.h>
#include <string.h>

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

/* Generates n tokens into t, document after document. Returns the number made, or -1. */
static int generate_full(andrea_train_run *r, int n, andrea_rng *rng, sample_text *t) {
    andrea_gen_options g = {0};
    andrea_sampler_default(&g.sampler); /* temperature 0.8, no filtering */
    g.emit = collect;
    g.user = t;
    g.context_shift = 1;
    int32_t bos = andrea_tokenizer_bos(r->tok);
    int made = 0;
    while (made < n) {
        andrea_gen_result res;
        andrea_kv_reset(r->kv);
        const float *logits = andrea_kv_step(r->m, r->kv, bos);
        g.n_predict = n - made;
        if (andrea_generate(r->m, r->kv, r->tok, logits, &g, rng, &res)) return -1;
        made += res.n_generated;
        if (made >= n || strcmp(res.stop_reason, "bos") != 0) break;
        made++; /* the BOS counts as one of the n tokens: a model that only says BOS ends */
        if (made < n) collect("\n", 1, t);
    }
    return made;
}

int andrea_run_sample(andrea_train_run *r, int step, andrea_gate_result *gr) {
    const andrea_train_options *o = &r->o;
    andrea_rng rng;
    andrea_rng_seed(&rng, o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)step);
    sample_text t = {{0}, 0};
    int kind = ANDREA_GATE_HONEST;
    if (o->gate && andrea_gate_kind_parse(o->gate, &kind)) return -1;
    int made = generate_full(r, o->sample_tokens, &rng, &t);
    int rc = made < 0 ? -1 : 0;
    if (rc == 0 && t.oom) rc = andrea_set_error("out of memory while sampling");
    if (rc == 0) rc = andrea_gate_evaluate((const char *)t.text.data, t.text.len, r->gate, kind, gr);
    if (rc == 0) {
        int arm = o->gate_arm >= 0 ? o->gate_arm : andrea_gate_arm_step(o);
        int armed = step >= arm;
        int pass = gr->total >= o->gate_threshold;
        /* the halting count: failures after arming, in a row */
        r->st->gate_fails = pass || !armed ? 0 : r->st->gate_fails + 1;
        andrea_train_sample s = {step, o->max_steps, made, (float)gr->total, (float)gr->bigram,
                                 (float)gr->trigram, (float)gr->english, (float)gr->chardiv,
                                 pass, (const char *)t.text.data, t.text.len,
                                 andrea_gate_kind_name(kind), o->gate_threshold, (float)gr->dict,
                                 (float)gr->repeat, (float)gr->charset, armed,
                                 r->st->gate_fails, o->gate_patience};
        ANDREA_REPORT(r, on_sample, &s);
    }
    andrea_bytes_free(&t.text);
    return rc;
}

int andrea_gate_arm_step(const andrea_train_options *o) {
    int quarter = o->max_steps / 4 < 10000 ? o->max_steps / 4 : 10000;
    return o->warmup > quarter ? o->warmup : quarter;
}

int andrea_run_gate_step(andrea_train_run *r, int step) {
    andrea_gate_result gr;
    if (andrea_run_sample(r, step, &gr)) return -1;
    const andrea_train_options *o = &r->o;
    if (r->st->gate_fails < o->gate_patience) return 0;
    char held[700]; /* the state is kept for inspection; the message names a real file */
    if (andrea_run_save(r, 1) == 0)
        snprintf(held, sizeof held, "state in '%s'", r->ckpt_path);
    else
        snprintf(held, sizeof held, "no checkpoint could be saved: %s", andrea_error());
    return andrea_set_error("coherence gate: %d consecutive samples scored below %g "
                            "(last %.1f, %s gate) at step %d; training halted, %s",
                            r->st->gate_fails, o->gate_threshold, gr.total,
                            o->gate ? o->gate : "honest", step, held);
}
