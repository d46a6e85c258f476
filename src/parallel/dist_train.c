/* dist_train.c - the trainer's hooks into the ranks (dist_train.h). */
#include "parallel/dist_train.h"
#include "parallel/dist_device.h"

#include <stdlib.h>
#include <string.h>

#include "backend/tensor_io.h"
#include "model/model.h"
#include "util/error.h"
#include "util/perf.h"

int andrea_dist_is_root(const andrea_train_run *r) { return !r->dist || r->dist->rank == 0; }

enum { ALLREDUCE_UNKNOWN = -2 }; /* not a --dist-allreduce name (AUTO is -1) */

int andrea_dist_run_open(andrea_train_run *r) {
    andrea_train_options *o = &r->o;
    if (o->zero != 0 && o->zero != 1) {
        andrea_set_error("--zero %d: expected 0 (off) or 1 (shard the AdamW moments)", o->zero);
        return ANDREA_TRAIN_BAD_OPTIONS;
    }
    if (o->dist_check_every < 0) {
        andrea_set_error("--dist-check-every %d: expected 0 (never) or a number of steps",
                         o->dist_check_every);
        return ANDREA_TRAIN_BAD_OPTIONS;
    }
    const char *ar = o->dist_allreduce ? o->dist_allreduce : "auto";
    r->allreduce_choice = strcmp(ar, "ring") == 0   ? ANDREA_ALLREDUCE_RING
                          : strcmp(ar, "mpi") == 0  ? ANDREA_ALLREDUCE_MPI
                          : strcmp(ar, "auto") == 0 ? ANDREA_ALLREDUCE_AUTO
                          : strcmp(ar, "nccl") == 0 ? ANDREA_ALLREDUCE_DEVICE
                                                    : ALLREDUCE_UNKNOWN;
    const char *clash = NULL;
    if (o->dist_overlap && o->dist_no_overlap)
        clash = "--dist-overlap and --dist-no-overlap: give one of them";
    else if (o->dist_bf16 && r->allreduce_choice == ANDREA_ALLREDUCE_MPI)
        clash = "--dist-bf16 needs andrea's ring, not --dist-allreduce mpi";
    else if (o->dist_bf16 && o->dist_deterministic)
        clash = "--dist-bf16 and --dist-deterministic: give one of them";
    else if (r->allreduce_choice == ANDREA_ALLREDUCE_DEVICE && (o->dist_bf16 || o->dist_deterministic))
        clash = "--dist-allreduce nccl sums in NCCL's order, in fp32: not with --dist-bf16 or "
                "--dist-deterministic";
    if (r->allreduce_choice == ALLREDUCE_UNKNOWN)
        andrea_set_error("--dist-allreduce '%s': expected auto, ring, mpi or nccl", ar);
    else if (clash)
        andrea_set_error("%s", clash);
    if (r->allreduce_choice == ALLREDUCE_UNKNOWN || clash) return ANDREA_TRAIN_BAD_OPTIONS;
    if (o->dist_bf16) r->allreduce_choice = ANDREA_ALLREDUCE_RING;
    r->dist = andrea_dist_open(o->dist_timeout, o->dist_deterministic);
    if (!r->dist) return -1;
    r->dist->wire_bf16 = o->dist_bf16;
    /* overlap: forced either way, or measured over the first steps */
    r->overlap_plan = o->dist_no_overlap ? 0 : o->dist_overlap || r->dist->size == 1 ? 1 : -1;
    if (r->dist->rank != 0) { /* rank 0 alone prints and logs */
        o->sink = NULL;
        o->quiet = 1;
    }
    return 0;
}

/* The gradient sums on the device (NCCL) where the model is: chosen (--dist-allreduce
 * nccl: an error when it cannot be), or by default for a model in device memory when
 * every rank has a device of its own; else the host's collectives. 1 on, 0 off, -1. */
static int plan_device(andrea_train_run *r) {
    andrea_dist *d = r->dist;
    const andrea_backend *be = r->m->be;
    int forced = r->allreduce_choice == ANDREA_ALLREDUCE_DEVICE;
    if (!forced && (r->allreduce_choice != ANDREA_ALLREDUCE_AUTO || be->memory == ANDREA_MEM_HOST
                    || d->deterministic || d->wire_bf16))
        return 0;
    char why[200] = "";
    int ok = andrea_dist_device_usable(d, be, why, sizeof why);
    if (ok < 0) return -1;
    if (!ok && forced) return andrea_set_error("--dist-allreduce nccl on %s: %s", be->name, why);
    size_t len = strlen(r->dist_ranks), cap = sizeof r->dist_ranks;
    if (!ok) { /* said in the run's description, then the host's sums are planned */
        snprintf(r->dist_ranks + len, cap - len, "; no device sums: %s", why);
        return 0;
    }
    if (andrea_dist_device_open(d, be)) return -1;
    d->algo = ANDREA_ALLREDUCE_DEVICE;
    snprintf(r->dist_ranks + len, cap - len, "; gradient sums: %s on device buffers; overlap: %s",
             be->comm->name, r->overlap_plan < 0 ? "measured on steps 2-7" :
             r->overlap_plan ? "on" : "off");
    return 1;
}

int andrea_dist_run_plan(andrea_train_run *r) {
    andrea_dist *d = r->dist;
    if (d->size == 1) return 0;
    int dev = plan_device(r);
    if (dev) return dev < 0 ? -1 : 0;
    size_t n = (size_t)r->m->layout.total;
    if (andrea_dist_plan(d, n, r->allreduce_choice)) return -1;
    size_t len = strlen(r->dist_ranks), cap = sizeof r->dist_ranks;
    char *b = r->dist_ranks + len;
    if (d->deterministic)
        snprintf(b, cap - len, "; gradient sums in rank order (--dist-deterministic)");
    else if (d->plan_ms[0] > 0)
        snprintf(b, cap - len, "; gradient sums: %s (measured on %zu floats: ring %.2f ms, mpi "
                 "%.2f ms); overlap: %s", andrea_dist_algo_name(d->algo),
                 n < ANDREA_DIST_BUCKET ? n : (size_t)ANDREA_DIST_BUCKET, d->plan_ms[1],
                 d->plan_ms[0], r->overlap_plan < 0 ? "measured on steps 2-7" :
                 r->overlap_plan ? "on" : "off");
    else
        snprintf(b, cap - len, "; gradient sums: %s (%s); overlap: %s",
                 andrea_dist_algo_name(d->algo), d->wire_bf16 ? "--dist-bf16: bf16 on the wire" : "--dist-allreduce", r->overlap_plan < 0 ? "measured on steps 2-7" :
                 r->overlap_plan ? "on" : "off");
    return 0;
}

int andrea_dist_run_batch(andrea_train_run *r) {
    andrea_train_options *o = &r->o;
    int n = r->dist->size;
    if (!o->resume_path || o->batch != r->st->batch || o->grad_accum != r->st->grad_accum)
        return 0; /* fresh, or --batch/--grad-accum given again: per rank as given */
    if (o->batch % n) {
        andrea_set_error("checkpoint '%s' trained at a global micro-batch of %d sequences, "
                         "which %d ranks cannot share evenly: give --batch (per rank) and "
                         "--grad-accum for the global batch you want", o->resume_path,
                         o->batch, n);
        return ANDREA_TRAIN_BAD_OPTIONS;
    }
    o->batch /= n;
    return 0;
}

void andrea_dist_run_record_batch(andrea_train_run *r) {
    r->st->batch = r->o.batch * r->dist->size;
}

int andrea_dist_run_moments(andrea_train_run *r) {
    if (!r->o.zero || r->dist->size == 1) return 0;
    if (andrea_zero_plan(&r->zero, r->m, r->dist)) return -1;
    size_t k = (size_t)(r->zero.hi - r->zero.lo);
    const andrea_backend *be = r->m->be; /* the moments are in the model's backend memory */
    float *m = be->ops.alloc(be, sizeof(float) * (k ? k : 1));
    float *v = be->ops.alloc(be, sizeof(float) * (k ? k : 1));
    if (!m || !v) {
        if (m) be->ops.free(be, m);
        if (v) be->ops.free(be, v);
        return andrea_set_error("out of memory for this rank's AdamW moments");
    }
    be->ops.copy_rows(be, m, 0, r->adam_m + r->zero.lo, 0, k, 1);
    be->ops.copy_rows(be, v, 0, r->adam_v + r->zero.lo, 0, k, 1);
    andrea_model_moments_free(r->m, r->adam_m);
    andrea_model_moments_free(r->m, r->adam_v);
    r->adam_m = m;
    r->adam_v = v;
    return 0;
}

/* The gradients as the host memory the collectives sum: m->grads itself on a host
 * backend, else the run's staging copy (a GPU-aware path would sum device memory). */
static float *grad_host(andrea_train_run *r) {
    if (r->m->be->memory == ANDREA_MEM_HOST) return r->m->grads;
    if (!r->dist_stage) r->dist_stage = malloc(sizeof(float) * (size_t)r->m->layout.total);
    if (!r->dist_stage) andrea_set_error("out of memory staging the gradients for the ranks");
    return r->dist_stage;
}

/* The model's grad_ready: sums each final stretch over the ranks while backward goes on
 * (moving the earlier ones on meanwhile). After a failure it starts nothing more; the
 * error stays set for andrea_dist_reduce_grads to report. */
static void sum_ready(void *user, int64_t lo, int64_t hi) {
    andrea_train_run *r = user;
    if (r->overlap_failed) return;
    if (r->dist->device) { /* where the gradients are */
        if (andrea_dist_device_start_sum(r->dist, r->m->grads + lo, (size_t)(hi - lo)))
            r->overlap_failed = 1;
        return;
    }
    float *h = grad_host(r);
    if (h && h != r->m->grads)
        andrea_tio_read(r->m->be, h + lo, r->m->grads + lo, (size_t)(hi - lo));
    if (!h || andrea_dist_start_sum(r->dist, h + lo, (size_t)(hi - lo)) ||
        andrea_dist_progress(r->dist))
        r->overlap_failed = 1;
}

/* While measuring: the first sum is not timed (it pays for allocation), then sums
 * 1, 3, 5 run during backward and 2, 4, 6 after it. */
#define OVERLAP_TRIALS 6
static int overlap_now(const andrea_train_run *r) {
    if (r->overlap_plan >= 0) return r->overlap_plan;
    return r->overlap_trials == 0 || r->overlap_trials % 2 == 1;
}

void andrea_dist_overlap_arm(andrea_train_run *r, int last_micro) {
    int on = last_micro && r->dist->size > 1 && !r->dist->deterministic && overlap_now(r);
    if (last_micro) r->overlap_t0 = andrea_now();
    r->m->grad_ready = on ? sum_ready : NULL;
    r->m->grad_ready_user = r;
    r->overlap_failed = 0;
}

static double median3(const double *v) {
    double lo = v[0] < v[1] ? v[0] : v[1], hi = v[0] < v[1] ? v[1] : v[0];
    return v[2] < lo ? lo : v[2] > hi ? hi : v[2];
}

/* After a gradient sum while measuring: records its time (the last backward and the
 * sums); after the trials every rank decides on the ranks' summed medians, and rank 0
 * logs the decision ("dist_plan" in log.jsonl). */
static int overlap_measure(andrea_train_run *r) {
    int k = r->overlap_trials++;
    if (k == 0) return 0;
    r->overlap_ms[k % 2][(k - 1) / 2] = (andrea_now() - r->overlap_t0) * 1e3;
    if (k < OVERLAP_TRIALS) return 0;
    double ms[2] = {median3(r->overlap_ms[0]), median3(r->overlap_ms[1])};
    if (andrea_dist_allreduce_sum_f64(r->dist, ms, 2)) return -1;
    ms[0] /= r->dist->size;
    ms[1] /= r->dist->size;
    r->overlap_plan = ms[1] < ms[0];
    if (r->log.f)
        fprintf(r->log.f, "{\"type\":\"dist_plan\",\"step\":%lld,\"overlap\":%s,"
                "\"ms_during_backward\":%.3f,\"ms_after_backward\":%.3f,\"allreduce\":\"%s\"}\n",
                (long long)r->st->step + 1, r->overlap_plan ? "true" : "false", ms[1], ms[0],
                andrea_dist_algo_name(r->dist->algo));
    return 0;
}

/* andrea_dist_reduce_grads on device buffers: no staging, no buckets */
static int reduce_on_device(andrea_train_run *r, double *loss_sum) {
    andrea_dist *d = r->dist;
    int overlapped = r->m->grad_ready != NULL;
    r->m->grad_ready = NULL;
    if (overlapped && r->overlap_failed) return -1;
    int rc = overlapped ? andrea_dist_device_wait(d)
                        : andrea_dist_device_sum(d, r->m->grads, (size_t)r->m->layout.total);
    if (rc == 0) rc = andrea_dist_allreduce_sum_f64(d, loss_sum, 1);
    if (rc == 0 && r->overlap_plan < 0) rc = overlap_measure(r);
    return rc;
}

int andrea_dist_reduce_grads(andrea_train_run *r, double *loss_sum) {
    if (r->dist->size == 1) return 0;
    if (r->dist->device) return reduce_on_device(r, loss_sum);
    andrea_dist *d = r->dist;
    size_t n = (size_t)r->m->layout.total;
    float *h = grad_host(r);
    if (!h) return -1;
    int rc;
    if (r->m->grad_ready) { /* started during the last backward: wait for them */
        r->m->grad_ready = NULL;
        if (r->overlap_failed) return -1;
        rc = andrea_dist_finish(d) || andrea_dist_allreduce_sum_f64(d, loss_sum, 1) ? -1 : 0;
    } else {
        if (h != r->m->grads) andrea_tio_read(r->m->be, h, r->m->grads, n);
        rc = andrea_dist_allreduce_sum_f64(d, loss_sum, 1) || andrea_dist_allreduce_sum(d, h, n)
                 ? -1 : 0;
    }
    if (rc == 0 && h != r->m->grads) andrea_tio_write(r->m->be, r->m->grads, h, n);
    if (rc == 0 && r->overlap_plan < 0 && !d->deterministic) rc = overlap_measure(r);
    return rc;
}

int andrea_dist_agree(andrea_train_run *r, int *flag) {
    if (r->dist->size == 1) return 0;
    double f = *flag ? 1.0 : 0.0;
    if (andrea_dist_allreduce_sum_f64(r->dist, &f, 1)) return -1;
    if (f > 0 && !*flag) *flag = ANDREA_STOP_HOOK; /* another rank got the signal */
    return 0;
}

int andrea_dist_save_moments(andrea_train_run *r, float **m, float **v) {
    if (!r->zero.on) {
        *m = r->adam_m;
        *v = r->adam_v;
        return 0;
    }
    return andrea_zero_gather(&r->zero, r->dist, r->m, r->adam_m, r->adam_v, m, v);
}

void andrea_dist_release_moments(andrea_train_run *r, float *m, float *v) {
    if (!r->zero.on) return;
    if (m) r->m->be->ops.free(r->m->be, m);
    if (v) r->m->be->ops.free(r->m->be, v);
}

int andrea_dist_root_rc(andrea_train_run *r, int rc) {
    if (r->dist->size == 1) return rc;
    int32_t code = rc;
    if (andrea_dist_broadcast(r->dist, &code, sizeof code, 0)) return -1;
    if (code && r->dist->rank != 0)
        andrea_set_error("rank 0 failed to write a checkpoint (its message says why)");
    return code;
}
