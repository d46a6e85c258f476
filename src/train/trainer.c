/*
 * trainer.c - the training loop: for each step, the gradients of a batch (step.c), a
 * skip when they are not finite, the AdamW update on ANDREA's schedule, then when due
 * validation (evaluate.c), a scored sample (sample_gate.c) and checkpoints (run_files.c),
 * until max_steps, a stop request, or an error. Everything is reported through sinks
 * (log.jsonl and the caller's); the library prints nothing.
 */
#include <math.h>
#include <string.h>

#include "dist/dist_train.h"
#include "train/train_run.h"
#include "util/error.h"
#include "util/perf.h"

/* After a good step: validation, sample gate, checkpoints. 0, -1, or 1: stop requested. */
static int after_step(andrea_train_run *r, int done);

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

    andrea_ckpt_state *st = r->st;
    int bad_steps = 0, timed_steps = 0, stop = 0;
    double t_start = andrea_now(), ms_sum = 0.0;
    while (rc == 0 && st->step < o->max_steps) {
        int step = (int)st->step;
        double t0 = andrea_now();
        float lr = andrea_lr_at(o, step), loss, gnorm;
        if (andrea_step_grads(r, step, &loss, &gnorm)) {
            rc = -1;
            break;
        }
        if (!isfinite(loss) || !isfinite(gnorm)) {
            /* the step is consumed (its batch drawn), the weights untouched */
            andrea_train_skip sk = {step + 1, loss, gnorm, ++bad_steps, o->max_bad_steps};
            ANDREA_REPORT(r, on_skip, &sk);
            if (bad_steps >= o->max_bad_steps)
                rc = andrea_set_error("training stopped at step %d: %d consecutive non-finite "
                                      "steps (lower --lr or --grad-clip?); the last good "
                                      "checkpoint is '%s'", step + 1, bad_steps, r->ckpt_path);
            st->step++;
            continue;
        }
        bad_steps = 0;
        if (andrea_step_update(r, step, lr, gnorm)) {
            rc = -1;
            break;
        }
        int done = (int)++st->step;
        st->smooth_loss = isnan(st->smooth_loss) ? loss : 0.9f * st->smooth_loss + 0.1f * loss;

        double ms = (andrea_now() - t0) * 1e3;
        if (step > 0 || o->resume_path) { /* the first step pays for allocation */
            ms_sum += ms;
            timed_steps++;
        }
        double avg_ms = timed_steps ? ms_sum / timed_steps : ms;
        double tok_s = (double)o->batch * o->seq * o->grad_accum * r->dist->size / (ms / 1e3);
        andrea_train_step rep = {done, o->max_steps, loss, st->smooth_loss, lr, gnorm, ms, tok_s,
                                 avg_ms * (o->max_steps - done) / 1e3,
                                 start.peak_gflops > 0 ? start.flops_per_token * tok_s / 1e9 /
                                                             start.peak_gflops : 0.0};
        ANDREA_REPORT(r, on_step, &rep);
        int s = after_step(r, done);
        if (s < 0) rc = -1;
        if (s > 0) stop = s;
        if (stop) break;
    }
    if (rc == 0 && st->step == 0 && o->max_steps == 0)
        rc = andrea_run_save(r, 1); /* nothing to train: still leave the initial weights */
    if (rc == 0) {
        andrea_train_done d = {stop ? stop : ANDREA_STOP_DONE, st->step, andrea_now() - t_start,
                               st->best_val_loss, o->out_dir, r->ckpt_path};
        ANDREA_REPORT(r, on_done, &d);
        if (stop) rc = ANDREA_TRAIN_INTERRUPTED;
    }
    andrea_run_free(r);
    return rc;
}

static int due(int every, int step) { return every > 0 && step % every == 0; }

static int after_step(andrea_train_run *r, int done) {
    const andrea_train_options *o = &r->o;
    andrea_ckpt_state *st = r->st;
    int last = done == o->max_steps;
    if (andrea_run_has_validation(r) && (due(o->eval_every, done) || last)) {
        double vl;
        if (andrea_run_validate(r, &vl)) return -1;
        int improved = vl < st->best_val_loss;
        ANDREA_REPORT(r, on_eval, done, o->max_steps, vl, improved);
        if (improved) {
            st->best_val_loss = (float)vl;
            if (andrea_run_save(r, 0)) return -1;
        }
    }
    if (due(o->sample_every, done)) {
        andrea_gate_result gr;
        if (andrea_run_sample(r, done, &gr)) return -1;
        st->gate_fails = gr.total < o->gate_threshold ? st->gate_fails + 1 : 0;
        if (st->gate_fails >= o->gate_patience) {
            andrea_run_save(r, 1); /* a coherent state, kept for inspection */
            return andrea_set_error("coherence gate: %d consecutive samples scored below %g "
                                    "(last %.1f) at step %d; training halted, state in '%s'",
                                    st->gate_fails, o->gate_threshold, gr.total, done,
                                    r->ckpt_path);
        }
    }
    int stop = o->should_stop && o->should_stop(o->stop_user) ? ANDREA_STOP_HOOK
               : o->stop_at > 0 && done >= o->stop_at && !last ? ANDREA_STOP_AT
                                                               : 0;
    if (andrea_dist_agree(r, &stop)) return -1; /* a signal to any rank stops them all */
    if ((due(o->ckpt_every, done) || last || stop) && andrea_run_save(r, 1)) return -1;
    return stop;
}
