/*
 * sample_gate.c - the sample-quality monitor: every sample_every steps, generate
 * sample_tokens tokens from BOS through andrea_generate (temperature 0.8, no filtering,
 * a seed derived from the run's seed and the step, so no extra state is needed to resume
 * exactly), score the text with the coherence gate (andrea_gate.h: --gate honest or
 * course) and report it; then the halting rule.
 *
 * The score grades coherence; the halting rule catches collapse. A failing sample counts
 * toward a halt (a strike) only when, after the arm step, it shows a collapse: it loops
 * (repeat factor under 0.5), it is garbage (charset under 0.5) after a clean sample (one
 * with charset 0.9 or more: an untrained byte model writes every byte), or the run's validation
 * loss has risen over 1% above its best. A young model's letter soup fails the score and
 * is not counted: it is where every healthy run starts, and its validation loss falls.
 * At the first strike of a run of them, the newest checkpoint saved before it (ckpt.bin,
 * else best.bin, if no later than the last sample not counted) is kept as
 * pre-collapse.bin: the halt names it.
 *
 * The sample is always sample_tokens long (the course's 420), whatever the context:
 * when the context fills, its last half is kept and generation goes on (the context
 * shift of andrea_generate); a BOS ends a document, so it is written as a newline and
 * generation continues after it (the BOS is one of the sample_tokens). A small-context model (baby: 64) is thus judged on
 * as many words as a large one.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "parallel/dist_train.h"
#include "train/train_run.h"
#include "util/atomic_file.h"
#include "util/error.h"

#define RISE 0.01       /* validation this far over its best is rising, not noise */
#define COLLAPSED 0.5   /* a repeat or charset factor under this is a collapse */
#define CLEAN 0.9       /* a sample this clean shows the run writes text */

int andrea_run_gate_open(andrea_train_run *r) {
    r->last_val_loss = NAN;
    r->gate_good_step = r->gate_kept_step = -1;
    if (r->o.sample_every <= 0) return 0;
    int kind = ANDREA_GATE_HONEST;
    if (r->o.gate && andrea_gate_kind_parse(r->o.gate, &kind)) return -1;
    r->gate = andrea_gate_load(r->o.words_path);
    if (!r->gate || (kind == ANDREA_GATE_HONEST &&
                     andrea_gate_load_reference(r->gate, r->o.gate_reference))) {
        return andrea_set_error("%s (install wamerican and fortunes, give --words FILE or "
                                "--gate-reference FILE, or turn sampling off with "
                                "--sample-every 0)", andrea_error());
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

/* Why a failing sample is a collapse, or NULL: it is only not yet coherent. */
static const char *collapse_seen(const andrea_train_run *r, const andrea_gate_result *gr) {
    if (gr->repeat < COLLAPSED) return "loops";
    /* an untrained byte model writes every byte value: garbage is where runs start, and
     * a collapse only once its samples have been clean text */
    if (gr->charset < COLLAPSED && r->gate_was_clean) return "garbage";
    double best = r->st->best_val_loss;
    if (isfinite(r->last_val_loss) && isfinite(best) && r->last_val_loss > best * (1 + RISE))
        return "validation loss rising";
    return NULL;
}

/* The step of the checkpoint at path, or -1 when there is none to read. */
static int checkpoint_step(const char *path) {
    andrea_config cfg;
    andrea_ckpt_state st;
    if (access(path, F_OK) != 0 || andrea_checkpoint_peek(path, &cfg, &st)) return -1;
    return (int)st.step;
}

/* At the first strike: hard-links the newest checkpoint saved no later than the last
 * sample that was not counted as pre-collapse.bin, so the saves that follow (and the
 * halt's) cannot replace it. Best effort: the halt says when none could be kept. */
static void keep_pre_collapse(andrea_train_run *r) {
    r->gate_kept_step = -1;
    if (!andrea_dist_is_root(r) || r->gate_good_step < 0) return;
    const char *cands[2] = {r->ckpt_path, r->best_path};
    char keep[4200], tmp[4300];
    snprintf(keep, sizeof keep, "%s/pre-collapse.bin", r->o.out_dir);
    for (int k = 0; k < 2; k++) {
        int at = checkpoint_step(cands[k]);
        if (at < 0 || at > r->gate_good_step) continue;
        if (andrea_atomic_tmp_name(keep, tmp, sizeof tmp) || link(cands[k], tmp) != 0) return;
        if (rename(tmp, keep) != 0) {
            unlink(tmp);
            return;
        }
        r->gate_kept_step = at;
        return;
    }
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
        const char *strike = pass || !armed ? NULL : collapse_seen(r, gr);
        /* the halting count: collapsed samples after arming, in a row */
        r->st->gate_fails = strike ? r->st->gate_fails + 1 : 0;
        if (gr->charset >= CLEAN) r->gate_was_clean = 1;
        if (!strike) r->gate_good_step = step;
        else if (r->st->gate_fails == 1) keep_pre_collapse(r);
        andrea_train_sample s = {step, o->max_steps, made, (float)gr->total, (float)gr->bigram,
                                 (float)gr->trigram, (float)gr->english, (float)gr->chardiv,
                                 pass, (const char *)t.text.data, t.text.len,
                                 andrea_gate_kind_name(kind), o->gate_threshold, (float)gr->dict,
                                 (float)gr->repeat, (float)gr->charset, armed,
                                 r->st->gate_fails, o->gate_patience, (float)gr->common,
                                 (float)gr->order, strike};
        ANDREA_REPORT(r, on_sample, &s);
    }
    andrea_bytes_free(&t.text);
    return rc;
}

int andrea_gate_arm_step(const andrea_train_options *o) { return o->warmup; }

int andrea_run_gate_step(andrea_train_run *r, int step) {
    andrea_gate_result gr;
    if (andrea_run_sample(r, step, &gr)) return -1;
    const andrea_train_options *o = &r->o;
    if (r->st->gate_fails < o->gate_patience) return 0;
    char before[4400], held[700]; /* the messages name real files */
    if (r->gate_kept_step >= 0)
        snprintf(before, sizeof before, "the last checkpoint before the collapse is "
                 "'%s/pre-collapse.bin' (step %d)", o->out_dir, r->gate_kept_step);
    else if (r->gate_good_step >= 0)
        snprintf(before, sizeof before, "no checkpoint was saved before the collapse (last "
                 "sound sample: step %d; save more often with --ckpt-every)", r->gate_good_step);
    else /* resumed into the collapse: the file resumed from is the state before it */
        snprintf(before, sizeof before, "no sample of this process was sound; the run was "
                 "resumed from '%s'", o->resume_path ? o->resume_path : "(a fresh start)");
    if (andrea_run_save(r, 1) == 0)
        snprintf(held, sizeof held, "the state at the halt is in '%s'", r->ckpt_path);
    else
        snprintf(held, sizeof held, "the state at the halt could not be saved: %s", andrea_error());
    const char *why = collapse_seen(r, &gr);
    return andrea_set_error("coherence gate: %d consecutive samples collapsed (the last: %s, "
                            "score %.1f < %g, %s gate) at steps %d-%d; training halted; %s; %s",
                            r->st->gate_fails, why ? why : "?", gr.total, o->gate_threshold,
                            o->gate ? o->gate : "honest",
                            step - (r->st->gate_fails - 1) * o->sample_every, step, before, held);
}
