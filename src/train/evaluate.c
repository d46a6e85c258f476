/* evaluate.c - validation: the mean loss over consecutive windows of held-out tokens. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/dist.h"
#include "model/model.h"
#include "train/data/data.h"
#include "train/train_run.h"
#include "util/error.h"
#include "util/json.h"

/* Sums loss x valid tokens over the batches first, first + stride, ... of B windows: one
 * rank's share (stride = the ranks, B = the per-rank batch). max_batches counts global
 * batches of stride x B windows (the first max_batches x stride batches of B), so
 * --eval-batches N covers the same windows, and tokens, on any number of ranks. */
static int eval_share(andrea_model *m, const int32_t *tokens, int64_t n, int B, int T,
                      int max_batches, int first, int stride, double *total, int64_t *count) {
    andrea_clear_error(); /* a stale message must not turn a NaN loss into a failure */
    *total = 0.0;
    *count = 0;
    /* borrowed: all of it is "validation" */
    andrea_dataset d = {.tokens = (int32_t *)tokens, .n = n};
    int64_t nw = andrea_dataset_val_windows(&d, T);
    if (nw == 0)
        return andrea_set_error("evaluation needs at least %d tokens, got %lld", T + 1,
                                (long long)n);
    int32_t *x = malloc(sizeof(int32_t) * (size_t)B * T * 2);
    if (!x) return andrea_set_error("out of memory");
    int32_t *y = x + (size_t)B * T;
    int64_t limit = (int64_t)max_batches * stride; /* batches of B windows, all ranks */
    for (int64_t b = first; b * B < nw && (max_batches <= 0 || b < limit); b += stride) {
        andrea_dataset_val_batch(&d, b * B, B, T, x, y);
        andrea_clear_error();
        float loss = andrea_model_forward(m, x, y, B, T);
        if (isnan(loss) && andrea_error()[0]) { /* a failed call, not a NaN model */
            free(x);
            return -1;
        }
        *total += (double)loss * m->ctx->n_valid;
        *count += m->ctx->n_valid;
    }
    free(x);
    return 0;
}

int andrea_eval_tokens(andrea_model *m, const int32_t *tokens, int64_t n, int B, int T,
                       int max_batches, double *mean_loss, int64_t *n_tokens) {
    double total;
    int64_t count;
    if (eval_share(m, tokens, n, B, T, max_batches, 0, 1, &total, &count)) return -1;
    *mean_loss = total / (double)count;
    if (n_tokens) *n_tokens = count;
    return 0;
}

int andrea_run_has_validation(const andrea_train_run *r) {
    int64_t n;
    const int32_t *v = r->src->validation(r->src, &n);
    andrea_dataset d = {.tokens = (int32_t *)v, .n = n};
    return v && andrea_dataset_val_windows(&d, r->o.seq) > 0;
}

/* The mean loss over held-out tokens v (n), the batches dealt round-robin over the ranks
 * and reduced: every rank gets the same *loss and *ntok. */
static int eval_spread(andrea_train_run *r, const int32_t *v, int64_t n, double *loss,
                       int64_t *ntok) {
    int64_t count;
    double sum[2]; /* loss x tokens, tokens */
    if (eval_share(r->m, v, n, r->o.batch, r->o.seq, r->o.eval_batches, r->dist->rank,
                   r->dist->size, &sum[0], &count))
        return -1;
    sum[1] = (double)count;
    if (andrea_dist_allreduce_sum_f64(r->dist, sum, 2)) return -1;
    *loss = sum[0] / sum[1];
    if (ntok) *ntok = (int64_t)sum[1];
    return 0;
}

/* A source of several parts (the curriculum's): each part's held-out documents on their
 * own, one "eval_source" line each in log.jsonl; the overall loss is their mean (every
 * source counts the same, whatever its size). */
static int validate_parts(andrea_train_run *r, double *val_loss) {
    double sum = 0.0;
    int used = 0;
    for (int k = 0; k < r->src->parts(r->src); k++) {
        int64_t n;
        const char *name;
        const int32_t *v = r->src->part_validation(r->src, k, &n, &name);
        andrea_dataset d = {.tokens = (int32_t *)v, .n = n};
        if (!v || andrea_dataset_val_windows(&d, r->o.seq) == 0) continue; /* too short */
        double l;
        int64_t ntok;
        if (eval_spread(r, v, n, &l, &ntok)) return -1;
        if (r->log.f) {
            fprintf(r->log.f, "{\"type\":\"eval_source\",\"step\":%lld,\"source\":",
                    (long long)r->st->step);
            andrea_json_write_string(r->log.f, name, strlen(name));
            fprintf(r->log.f, ",\"val_loss\":%.9g,\"tokens\":%lld}\n", l, (long long)ntok);
        }
        sum += l;
        used++;
    }
    if (!used) return andrea_set_error("no source has a validation window of %d tokens", r->o.seq + 1);
    *val_loss = sum / used;
    return 0;
}

int andrea_run_validate(andrea_train_run *r, double *val_loss) {
    if (r->src->parts) return validate_parts(r, val_loss);
    int64_t n;
    const int32_t *v = r->src->validation(r->src, &n);
    return eval_spread(r, v, n, val_loss, NULL);
}
