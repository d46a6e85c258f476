/*
 * divergence.c - the divergence guard (docs/reliability.md): a step whose numbers say the
 * run is blowing up is skipped like a non-finite one, before its update touches the
 * weights, so the state kept is always the last sane one. Three rules, each configurable:
 *
 *   loss spike      loss > spike_loss x the median of the last good steps' losses, and more
 *                   than 1 nat above it (a factor alone would flag 0.1 -> 0.3 late in a run);
 *                   or, from the first step on, loss > spike_loss x ln V (a uniform guess
 *                   scores ln V: a model far worse than guessing has blown up)
 *   gradient spike  grad norm > spike_grad x the median of the last good steps' norms
 *   weight bound    the largest change AdamW can make this step could carry a weight past
 *                   max_weight (bound below); finite but useless weights (1e10 after
 *                   --lr 1e10) never exist, so they are never checkpointed
 *
 * The spike rules need a history: they are armed once GUARD_ARM good steps are in the
 * window (so a resume re-arms after GUARD_ARM steps; the window is not checkpointed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/divergence.h"

enum { GUARD_ARM = 10 };

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static float median(const float *ring, int n) {
    float s[ANDREA_GUARD_WINDOW];
    memcpy(s, ring, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_float);
    return n % 2 ? s[n / 2] : 0.5f * (s[n / 2 - 1] + s[n / 2]);
}

void andrea_guard_observe(andrea_guard *g, float loss, float grad_norm) {
    g->loss[g->next] = loss;
    g->gnorm[g->next] = grad_norm;
    g->next = (g->next + 1) % ANDREA_GUARD_WINDOW;
    if (g->n < ANDREA_GUARD_WINDOW) g->n++;
}

/* The most |m_hat / (sqrt(v_hat) + eps)| can be at step t (1-based) when m and v are
 * AdamW's moments of one gradient sequence, both from zero: by Cauchy-Schwarz,
 * |m_t| <= (1-b1)/sqrt(1-b2) * sqrt(v_t) * sqrt(sum_{k<t} (b1^2/b2)^k), times the bias
 * corrections. 1 at t = 1; about 2.35 for betas 0.9/0.99 late in a run. */
double andrea_guard_adam_ratio_bound(float b1, float b2, int t) {
    double q = (double)b1 * b1 / b2;
    double s = fabs(q - 1.0) < 1e-12 ? (double)t : (1.0 - pow(q, t)) / (1.0 - q);
    return (1.0 - b1) / sqrt(1.0 - b2) * sqrt(s) * sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t));
}

int andrea_guard_check(const andrea_guard *g, const andrea_guard_limits *lim, float loss,
                       float grad_norm, char *why, size_t n) {
    if (!isfinite(loss) || !isfinite(grad_norm)) {
        snprintf(why, n, "non-finite %s (%g)", isfinite(loss) ? "gradient norm" : "loss",
                 (double)(isfinite(loss) ? grad_norm : loss));
        return 1;
    }
    float guess = logf((float)lim->vocab); /* the loss of a uniform guess */
    if (lim->spike_loss > 0 && lim->vocab > 1 && loss > lim->spike_loss * guess) {
        snprintf(why, n, "loss %.4g is over %g x ln V = %.4g, the loss of a uniform guess "
                 "(--spike-loss)", (double)loss, (double)lim->spike_loss,
                 (double)(lim->spike_loss * guess));
        return 1;
    }
    if (g->n >= GUARD_ARM && lim->spike_loss > 0) {
        float med = median(g->loss, g->n);
        if (loss > lim->spike_loss * med && loss > med + 1.0f) {
            snprintf(why, n, "loss %.4g is over %g x the median %.4g of the last %d steps "
                     "(--spike-loss)", (double)loss, (double)lim->spike_loss, (double)med, g->n);
            return 1;
        }
    }
    if (g->n >= GUARD_ARM && lim->spike_grad > 0) {
        float med = median(g->gnorm, g->n);
        if (grad_norm > lim->spike_grad * med) {
            snprintf(why, n, "gradient norm %.4g is over %g x the median %.4g of the last %d "
                     "steps (--spike-grad)", (double)grad_norm, (double)lim->spike_grad,
                     (double)med, g->n);
            return 1;
        }
    }
    return 0;
}

int andrea_guard_check_update(const andrea_guard_limits *lim, double max_abs_w, float lr,
                              float b1, float b2, float wd, int t, char *why, size_t n) {
    if (!(lim->max_weight > 0)) return 0;
    double shrink = fabs(1.0 - (double)lr * wd); /* decay multiplies a weight by 1 - lr wd */
    double reach = max_abs_w * (shrink > 1.0 ? shrink : 1.0) +
                   (double)lr * andrea_guard_adam_ratio_bound(b1, b2, t);
    if (reach <= lim->max_weight) return 0;
    snprintf(why, n, "this update could carry a weight to %.3g, past --max-weight %g (largest "
             "weight %.3g, lr %g)", reach, (double)lim->max_weight, max_abs_w, (double)lr);
    return 1;
}
