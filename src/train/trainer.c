/*
 * trainer.c - the training loop: for each step, the gradients of a batch (step.c), a
 * skip when they are not finite, the AdamW update on ANDREA's schedule, then when due
 * validation (evaluate.c), a scored sample (sample_gate.c) and checkpoints (run_files.c),
 * until max_steps, a stop request, or an error. Everything is reported through sinks
 * (log.jsonl and the caller's); the library prints nothing.
 *
 * The NaN and divergence guard (divergence.c): a step whose loss or gradient is not
 * finite, spikes far above the recent steps', or whose update could carry a weight past
 * --max-weight is skipped; it leaves the weights and moments untouched, so the state is
 * always the last sane one. A skipped step still counts for checkpoints, --stop-at
 * and the end, so a run that ends on skipped steps leaves ckpt.bin holding that last
 * finite state and fails with a message saying so (never exit 0 on a stale file).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "parallel/dist_train.h"
#include "train/divergence.h"
#include "train/train_run.h"
#include "util/error.h"
#include "util/perf.h"

typedef struct {
    int bad_steps;       /* consecutive skipped steps (non-finite or divergent) */
    int last_good;       /* the last step whose update was applied (0: none this run) */
    int timed_steps;
    double ms_sum;
    andrea_guard guard;  /* the recent good steps, for the divergence guard */
} loop_state;

/* After a good step: validation and sample gate. 0 or -1. */
static int after_good_step(andrea_train_run *r, int done);
/* After any step, skipped or not: checkpoint when due, stop requests. 0, -1, or
 * ANDREA_STOP_*: stop requested. */
static int checkpoint_or_stop(andrea_train_run *r, int done);
/* One step: 0, or -1 (also when max_bad_steps ran out: checkpoint saved, error set). */
static int train_step(andrea_train_run *r, loop_state *ls, const andrea_train_start *start);

/* The error of a run that ends on skipped steps, naming the checkpoint of the last
 * finite state (saved first unless `saved`). -1. */
static int fail_nonfinite(andrea_train_run *r, const loop_state *ls, const char *why, int saved);

int andrea_train(const andrea_config *cfg, const andrea_train_options *opts) {
    andrea_train_run run, *r = &run;
    int rc = andrea_run_setup(r, cfg, opts);
    if (rc) {
        andrea_run_free(r);
        return rc;
    }
    const andrea_train_options *o = &r->o;
    andrea_train_start start;
    char data[1200];
    andrea_run_start_report(r, &start, data, sizeof data);
    /* MFU is measured against this machine's sgemm, measured now (0.3 s) */
    start.peak_gflops = o->quiet ? 0.0 : andrea_perf_gemm_gflops(andrea_model_backend(r->m), 512,
                                                                 0.3);
    start.flops_per_token = andrea_train_flops_per_token(&r->cfg, o->seq);
    ANDREA_REPORT(r, on_start, &start);
    rc = andrea_jsonl_check(&r->log);

    andrea_ckpt_state *st = r->st;
    loop_state ls;
    memset(&ls, 0, sizeof ls);
    ls.last_good = (int)st->step;
    int stop = 0;
    double t_start = andrea_now();
    while (rc == 0 && !stop && st->step < o->max_steps) {
        rc = train_step(r, &ls, &start);
        if (rc == 0) {
            int s = checkpoint_or_stop(r, (int)st->step);
            if (s < 0) rc = -1;
            else stop = s;
        }
        if (rc == 0) rc = andrea_jsonl_check(&r->log);
    }
    if (rc == 0 && st->step == 0 && o->max_steps == 0)
        rc = andrea_run_save(r, 1); /* nothing to train: still leave the initial weights */
    if (rc == 0 && !stop && ls.bad_steps > 0) /* ended on skipped steps: saved, but say so */
        rc = fail_nonfinite(r, &ls, "ended", 1);
    if (rc == 0) {
        andrea_train_done d = {stop ? stop : ANDREA_STOP_DONE, st->step, andrea_now() - t_start,
                               st->best_val_loss, o->out_dir, r->ckpt_path};
        ANDREA_REPORT(r, on_done, &d);
        rc = andrea_jsonl_check(&r->log);
        if (rc == 0 && stop) rc = ANDREA_TRAIN_INTERRUPTED;
    }
    if (rc == -1) andrea_jsonl_error(&r->log, st->step, andrea_error());
    andrea_run_free(r);
    return rc;
}

static int train_step(andrea_train_run *r, loop_state *ls, const andrea_train_start *start) {
    const andrea_train_options *o = &r->o;
    andrea_ckpt_state *st = r->st;
    int step = (int)st->step;
    double t0 = andrea_now(), comm0 = r->dist->comm_s;
    float lr = andrea_lr_at(o, step), loss, gnorm;
    if (andrea_step_grads(r, step, &loss, &gnorm)) return -1;
    if (!r->has_probe) { /* real text for the checkpoint's sanity check (run_files.c) */
        memcpy(r->probe_x, r->x, sizeof(int32_t) * (size_t)o->seq);
        memcpy(r->probe_y, r->y, sizeof(int32_t) * (size_t)o->seq);
        r->has_probe = 1;
    }
    char why[300];
    andrea_guard_limits lim = {o->spike_loss, o->spike_grad, o->max_weight, r->cfg.vocab};
    if (andrea_guard_check(&ls->guard, &lim, loss, gnorm, why, sizeof why) ||
        andrea_guard_check_update(&lim, lim.max_weight > 0 ? andrea_model_param_max_abs(r->m) : 0,
                                  lr, o->beta1, o->beta2, o->weight_decay, step + 1, why,
                                  sizeof why)) {
        /* the step is consumed (its batch drawn), the weights untouched */
        andrea_train_skip sk = {step + 1, loss, gnorm, ++ls->bad_steps, o->max_bad_steps, why};
        ANDREA_REPORT(r, on_skip, &sk);
        st->step++;
        if (ls->bad_steps < o->max_bad_steps) return 0;
        /* a last checkpoint of the sane state, so that the message names a real file */
        return fail_nonfinite(r, ls, "stopped", 0);
    }
    ls->bad_steps = 0;
    if (andrea_step_update(r, step, lr, gnorm)) return -1;
    andrea_guard_observe(&ls->guard, loss, gnorm);
    r->updates_applied++;
    int done = (int)++st->step;
    ls->last_good = done;
    /* the curriculum learns the loss of the batch it gave */
    if (r->src->observe && r->src->observe(r->src, done, loss, r->log.f)) return -1;
    st->smooth_loss = isnan(st->smooth_loss) ? loss : 0.9f * st->smooth_loss + 0.1f * loss;

    double ms = (andrea_now() - t0) * 1e3;
    if (step > 0 || o->resume_path) { /* the first step pays for allocation */
        ls->ms_sum += ms;
        ls->timed_steps++;
    }
    double avg_ms = ls->timed_steps ? ls->ms_sum / ls->timed_steps : ms;
    double tok_s = (double)o->batch * o->seq * o->grad_accum * r->dist->size / (ms / 1e3);
    andrea_train_step rep = {done, o->max_steps, loss, st->smooth_loss, lr, gnorm, ms, tok_s,
                             avg_ms * (o->max_steps - done) / 1e3,
                             start->peak_gflops > 0 ? start->flops_per_token * tok_s / 1e9 /
                                                          start->peak_gflops : 0.0,
                             (r->dist->comm_s - comm0) * 1e3};
    ANDREA_REPORT(r, on_step, &rep);
    return after_good_step(r, done);
}

static int fail_nonfinite(andrea_train_run *r, const loop_state *ls, const char *why, int saved) {
    int step = (int)r->st->step, first = step - ls->bad_steps + 1;
    char held[700];
    if (andrea_run_keeps_resumed(r))
        snprintf(held, sizeof held, "'%s' is untouched and holds the last sane state (the weights "
                 "of step %d)", r->o.resume_path, ls->last_good);
    else if (saved || andrea_run_save(r, 1) == 0)
        snprintf(held, sizeof held, "'%s' holds the last sane state (the weights of step %d)",
                 r->ckpt_path, ls->last_good);
    else
        snprintf(held, sizeof held, "no checkpoint could be saved: %s", andrea_error());
    return andrea_set_error("training %s at step %d: %d consecutive skipped steps (%d-%d: "
                            "non-finite or divergent, updates skipped; lower --lr or "
                            "--grad-clip?); %s", why, step, ls->bad_steps, first, step, held);
}

static int due(int every, int step) { return every > 0 && step % every == 0; }

static int after_good_step(andrea_train_run *r, int done) {
    const andrea_train_options *o = &r->o;
    andrea_ckpt_state *st = r->st;
    int last = done == o->max_steps;
    if (andrea_run_has_validation(r) && (due(o->eval_every, done) || last)) {
        double vl;
        if (andrea_run_validate(r, &vl)) return -1;
        int improved = vl < st->best_val_loss;
        r->last_val_loss = vl; /* the gate asks whether validation is rising */
        ANDREA_REPORT(r, on_eval, done, o->max_steps, vl, improved);
        if (improved) {
            st->best_val_loss = (float)vl;
            if (andrea_run_save(r, 0)) return -1;
        }
    }
    if (due(o->sample_every, done) && andrea_run_gate_step(r, done)) return -1;
    return 0;
}

static int checkpoint_or_stop(andrea_train_run *r, int done) {
    const andrea_train_options *o = &r->o;
    int last = done == o->max_steps;
    int stop = o->should_stop && o->should_stop(o->stop_user) ? ANDREA_STOP_HOOK
               : o->stop_at > 0 && done >= o->stop_at && !last ? ANDREA_STOP_AT
                                                               : 0;
    int asked = o->should_save && o->should_save(o->stop_user); /* SIGUSR1: save, go on */
    /* a signal to any rank stops (or saves) them all: saving is collective */
    if (andrea_dist_agree(r, &stop) || andrea_dist_agree(r, &asked)) return -1;
    int save = due(o->ckpt_every, done) || last || stop || asked;
    /* the ranks' weights compared when due, and always before a checkpoint */
    if (andrea_dist_check_weights(r, done, save) || (save && andrea_run_save(r, 1))) return -1;
    return stop;
}
