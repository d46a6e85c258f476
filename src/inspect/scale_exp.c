/*
 * scale_exp.c - the lesson's central claim, seen rather than stated: without the
 * 1/sqrt(d_k) "Pelatihan terhenti" (training stalls). The same small model is trained
 * twice on the same text, from the same initial weights on the same batches, once with
 * the scores divided by sqrt(d_k) and once divided by 1:
 *
 *   x_i = E[t_i] + P[i];  q, k, v = x Wq, x Wk, x Wv  (C -> d_k);
 *   A = softmax(mask(q k^T / divisor));  logits_i = (A v)_i Wo  ->  next character
 *
 * An attention-only model (no residual, no MLP): every bit the prediction uses passes
 * through A, so whatever happens to A shows in the loss. q and k start with unit-variance
 * entries (the lesson's premise), so the unscaled scores have a std of sqrt(d_k): the rows
 * of A are nearly one-hot, the softmax's Jacobian diag(p) - p p^T nearly 0, and the
 * gradient reaching Wq and Wk is a fraction of the scaled run's. What is measured every
 * `every` steps: the batch loss, the mean entropy and max p of the rows of A, and
 * ||dL/dWq||, ||dL/dWk|| (the gradient that reaches the queries and keys); at the end the
 * loss on held-out text. Double precision, hand-written gradients, Adam; each sequence's
 * gradient in its own buffer, summed in a fixed order, so the numbers do not depend on
 * the number of threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_inspect.h"
#include "util/error.h"

typedef struct { /* one model's parameters (or gradients, or Adam moments), carved */
    double *E, *P, *Wq, *Wk, *Wv, *Wo; /* (V, C) (T, C) (C, D) x3 (D, V) */
} sx_params;

typedef struct {
    int V, C, D, T;
    size_t n; /* doubles in one sx_params */
} sx_dims;

typedef struct { /* one sequence's activations */
    double *x, *q, *k, *v, *A, *o, *dlg; /* (T, C) (T, D) x3 (T, T) (T, D) (T, V) */
} sx_acts;

static void carve(const sx_dims *d, double *p, sx_params *w) {
    w->E = p;
    w->P = w->E + (size_t)d->V * d->C;
    w->Wq = w->P + (size_t)d->T * d->C;
    w->Wk = w->Wq + (size_t)d->C * d->D;
    w->Wv = w->Wk + (size_t)d->C * d->D;
    w->Wo = w->Wv + (size_t)d->C * d->D;
}

static size_t n_params(const sx_dims *d) {
    return (size_t)d->V * d->C + (size_t)d->T * d->C + 3 * (size_t)d->C * d->D +
           (size_t)d->D * d->V;
}

static size_t n_acts(const sx_dims *d) {
    return (size_t)d->T * (d->C + 4 * d->D + d->T + d->V);
}

static void carve_acts(const sx_dims *d, double *p, sx_acts *a) {
    a->x = p;
    a->q = a->x + (size_t)d->T * d->C;
    a->k = a->q + (size_t)d->T * d->D;
    a->v = a->k + (size_t)d->T * d->D;
    a->A = a->v + (size_t)d->T * d->D;
    a->o = a->A + (size_t)d->T * d->T;
    a->dlg = a->o + (size_t)d->T * d->D;
}

/* Forward of tok[0..T-1], the loss of predicting tok[1..T], and dlogits into a->dlg.
 * Adds the rows' entropy and max p (rows 1..T-1) into *ent and *pmax. */
static double sx_forward(const sx_dims *d, const sx_params *w, const int *tok, double divisor,
                         sx_acts *a, double *ent, double *pmax) {
    int T = d->T, C = d->C, D = d->D, V = d->V;
    for (int i = 0; i < T; i++)
        for (int c = 0; c < C; c++)
            a->x[i * C + c] = w->E[(size_t)tok[i] * C + c] + w->P[(size_t)i * C + c];
    for (int i = 0; i < T; i++)
        for (int e = 0; e < D; e++) {
            double q = 0, k = 0, v = 0;
            for (int c = 0; c < C; c++) {
                double x = a->x[i * C + c];
                q += x * w->Wq[(size_t)c * D + e];
                k += x * w->Wk[(size_t)c * D + e];
                v += x * w->Wv[(size_t)c * D + e];
            }
            a->q[i * D + e] = q, a->k[i * D + e] = k, a->v[i * D + e] = v;
        }
    double loss = 0;
    for (int i = 0; i < T; i++) {
        double *A = a->A + (size_t)i * T, mx = -INFINITY, z = 0;
        for (int j = 0; j <= i; j++) {
            double s = 0;
            for (int e = 0; e < D; e++) s += a->q[i * D + e] * a->k[j * D + e];
            A[j] = s / divisor;
            if (A[j] > mx) mx = A[j];
        }
        for (int j = 0; j <= i; j++) z += (A[j] = exp(A[j] - mx));
        double h = 0, pm = 0;
        for (int j = 0; j <= i; j++) {
            A[j] /= z;
            if (A[j] > 0) h -= A[j] * log(A[j]);
            if (A[j] > pm) pm = A[j];
        }
        for (int j = i + 1; j < T; j++) A[j] = 0;
        if (i > 0) *ent += h, *pmax += pm;
        for (int e = 0; e < D; e++) {
            double s = 0;
            for (int j = 0; j <= i; j++) s += A[j] * a->v[j * D + e];
            a->o[i * D + e] = s;
        }
        double *lg = a->dlg + (size_t)i * V, lm = -INFINITY, lz = 0;
        for (int c = 0; c < V; c++) {
            double s = 0;
            for (int e = 0; e < D; e++) s += a->o[i * D + e] * w->Wo[(size_t)e * V + c];
            lg[c] = s;
            if (s > lm) lm = s;
        }
        for (int c = 0; c < V; c++) lz += exp(lg[c] - lm);
        loss -= lg[tok[i + 1]] - lm - log(lz);
        for (int c = 0; c < V; c++) lg[c] = (exp(lg[c] - lm) / lz - (c == tok[i + 1])) / T;
    }
    return loss / T;
}

/* The gradients of the last sx_forward's loss into g (which starts at 0); returns the
 * squared norm of dL/dz, z the softmax's input (the scores after the divisor). scratch:
 * dO, dq, dk, dv, (T, D) each. */
static double sx_backward(const sx_dims *d, const sx_params *w, const int *tok, double divisor,
                        const sx_acts *a, sx_params *g, double *scratch) {
    int T = d->T, C = d->C, D = d->D, V = d->V;
    double *dO = scratch, *dq = dO + (size_t)T * D, *dk = dq + (size_t)T * D,
           *dv = dk + (size_t)T * D;
    memset(dq, 0, sizeof(double) * 3 * (size_t)T * D);
    double gz = 0;
    for (int i = 0; i < T; i++)
        for (int e = 0; e < D; e++) {
            double s = 0;
            for (int c = 0; c < V; c++) {
                s += a->dlg[(size_t)i * V + c] * w->Wo[(size_t)e * V + c];
                g->Wo[(size_t)e * V + c] += a->o[i * D + e] * a->dlg[(size_t)i * V + c];
            }
            dO[i * D + e] = s;
        }
    for (int i = 0; i < T; i++) {
        const double *A = a->A + (size_t)i * T;
        double dot = 0, dA[1024];
        for (int j = 0; j <= i; j++) {
            double s = 0;
            for (int e = 0; e < D; e++) {
                s += dO[i * D + e] * a->v[j * D + e];
                dv[j * D + e] += A[j] * dO[i * D + e];
            }
            dA[j] = s;
            dot += A[j] * s;
        }
        for (int j = 0; j <= i; j++) { /* through the softmax, then the divisor */
            double dz = A[j] * (dA[j] - dot), ds = dz / divisor;
            gz += dz * dz;
            for (int e = 0; e < D; e++) {
                dq[i * D + e] += ds * a->k[j * D + e];
                dk[j * D + e] += ds * a->q[i * D + e];
            }
        }
    }
    for (int i = 0; i < T; i++)
        for (int c = 0; c < C; c++) {
            double dx = 0, x = a->x[i * C + c];
            for (int e = 0; e < D; e++) {
                size_t k = (size_t)c * D + e;
                dx += dq[i * D + e] * w->Wq[k] + dk[i * D + e] * w->Wk[k] + dv[i * D + e] * w->Wv[k];
                g->Wq[k] += x * dq[i * D + e];
                g->Wk[k] += x * dk[i * D + e];
                g->Wv[k] += x * dv[i * D + e];
            }
            g->E[(size_t)tok[i] * C + c] += dx;
            g->P[(size_t)i * C + c] += dx;
        }
    return gz;
}

static double norm2(const double *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

/* ---- the experiment ----------------------------------------------------------------------- */

typedef struct {
    sx_dims d;
    const int *ids; /* the text as token ids */
    size_t n_train, n_ids;
    const andrea_scale_exp_options *o;
} sx_job;

/* One run with divisor r (0: 1, 1: sqrt(d_k)) from rng: fills out's series r. */
static int sx_run(const sx_job *job, int r, andrea_rng rng, andrea_scale_exp *out) {
    const sx_dims *d = &job->d;
    const andrea_scale_exp_options *o = job->o;
    int B = o->batch, T = d->T;
    double divisor = out->divisor[r];
    size_t np = d->n, na = n_acts(d), ns = 4 * (size_t)T * d->D;
    /* weights, Adam's moments, a gradient per sequence, activations and scratch per sequence */
    double *mem = calloc(np * (3 + (size_t)B) + (na + ns) * (size_t)B, sizeof(double));
    int *tok = malloc(sizeof(int) * (size_t)B * (T + 1));
    if (!mem || !tok) {
        free(mem);
        free(tok);
        return andrea_set_error("scale experiment: out of memory");
    }
    double *w = mem, *m1 = w + np, *m2 = m1 + np, *gs = m2 + np, *act = gs + np * B;
    sx_params W;
    carve(d, w, &W);
    /* x = E + P with unit variance; q, k, v = x W with unit variance: the lesson's premise */
    for (size_t i = 0; i < (size_t)(W.Wq - w); i++) w[i] = sqrt(0.5) * andrea_rng_normal(&rng);
    for (size_t i = (size_t)(W.Wq - w); i < (size_t)(W.Wo - w); i++)
        w[i] = andrea_rng_normal(&rng) / sqrt((double)d->C);
    for (size_t i = (size_t)(W.Wo - w); i < np; i++) w[i] = andrea_rng_normal(&rng) / sqrt((double)d->D);
    const double b1 = 0.9, b2 = 0.999;
    int point = 0;
    for (int s = 1; s <= o->steps; s++) {
        for (int b = 0; b < B; b++) { /* the batch: random windows of the training text */
            size_t at = (size_t)(andrea_rng_u64(&rng) % (job->n_train - (size_t)T - 1));
            for (int i = 0; i <= T; i++) tok[b * (T + 1) + i] = job->ids[at + (size_t)i];
        }
        double loss = 0, ent = 0, pmax = 0, gz = 0;
#pragma omp parallel for schedule(static) reduction(+ : loss, ent, pmax, gz)
        for (int b = 0; b < B; b++) {
            sx_acts a;
            double *ab = act + (na + ns) * (size_t)b;
            carve_acts(d, ab, &a);
            sx_params g;
            memset(gs + np * (size_t)b, 0, sizeof(double) * np);
            carve(d, gs + np * (size_t)b, &g);
            loss += sx_forward(d, &W, tok + b * (T + 1), divisor, &a, &ent, &pmax);
            gz += sx_backward(d, &W, tok + b * (T + 1), divisor, &a, &g, ab + na);
        }
        for (int b = 1; b < B; b++) /* a fixed order: the same sums on any thread count */
            for (size_t i = 0; i < np; i++) gs[i] += gs[np * (size_t)b + i];
        sx_params G;
        carve(d, gs, &G);
        for (size_t i = 0; i < np; i++) gs[i] /= B;
        if (s == 1 || s % o->every == 0 || s == o->steps) {
            size_t nw = (size_t)d->C * d->D;
            out->step[point] = s;
            out->loss[r][point] = loss / B;
            out->entropy[r][point] = ent / ((double)B * (T - 1));
            out->max_p[r][point] = pmax / ((double)B * (T - 1));
            out->grad_z[r][point] = sqrt(gz) / B; /* of the batch's mean loss */
            out->grad_qk[r][point] = sqrt(pow(norm2(G.Wq, nw), 2) + pow(norm2(G.Wk, nw), 2));
            point++;
        }
        for (size_t i = 0; i < np; i++) { /* Adam */
            m1[i] = b1 * m1[i] + (1 - b1) * gs[i];
            m2[i] = b2 * m2[i] + (1 - b2) * gs[i] * gs[i];
            w[i] -= o->lr * (m1[i] / (1 - pow(b1, s))) / (sqrt(m2[i] / (1 - pow(b2, s))) + 1e-8);
        }
    }
    out->n_points = point;
    /* held-out loss: EVAL windows spread evenly over the text after the training part */
    enum { EVAL = 64 };
    double ev = 0, e1 = 0, e2 = 0;
    size_t span = job->n_ids - job->n_train - (size_t)T - 1;
    for (int k = 0; k < EVAL; k++) {
        sx_acts a;
        carve_acts(d, act, &a);
        size_t at = job->n_train + span * (size_t)k / EVAL;
        for (int i = 0; i <= T; i++) tok[i] = job->ids[at + (size_t)i];
        ev += sx_forward(d, &W, tok, divisor, &a, &e1, &e2);
    }
    out->eval_loss[r] = ev / EVAL;
    free(mem);
    free(tok);
    return 0;
}

int andrea_scale_experiment(const uint8_t *text, size_t n, const andrea_scale_exp_options *o,
                            andrea_scale_exp *out) {
    memset(out, 0, sizeof *out);
    if (o->d_k < 1 || o->d_k > 4096 || o->d_model < 1 || o->d_model > 1024)
        return andrea_set_error("scale experiment: d_k %d, d_model %d (d_k 1..4096, d_model 1..1024)",
                                o->d_k, o->d_model);
    if (o->T < 2 || o->T > 1024 || o->batch < 1 || o->steps < 1 || o->every < 1 || !(o->lr > 0))
        return andrea_set_error("scale experiment: T %d (2..1024), batch %d, steps %d, every %d "
                                "must be >= 1 and lr %g > 0", o->T, o->batch, o->steps, o->every, o->lr);
    /* the text's own characters (bytes) as the vocabulary; 10% held out at the end */
    int map[256], V = 0;
    for (int c = 0; c < 256; c++) map[c] = -1;
    for (size_t i = 0; i < n; i++) map[text[i]] = 1;
    for (int c = 0; c < 256; c++)
        if (map[c] > 0) map[c] = V++;
    size_t n_train = n - n / 10;
    if (n / 10 < (size_t)o->T * 4 || n_train < (size_t)o->T * 16)
        return andrea_set_error("scale experiment: the text has %zu bytes; it needs at least %zu "
                                "(160 windows of T = %d)", n, (size_t)o->T * 160, o->T);
    int *ids = malloc(sizeof(int) * n);
    int points = o->steps / o->every + 2;
    out->step = calloc((size_t)points, sizeof(int));
    double *series = calloc((size_t)points * 10, sizeof(double));
    if (!ids || !out->step || !series) {
        free(ids);
        free(series);
        return andrea_set_error("scale experiment: out of memory");
    }
    for (size_t i = 0; i < n; i++) ids[i] = map[text[i]];
    for (int r = 0; r < 2; r++) {
        out->loss[r] = series + (size_t)points * (5 * r + 0);
        out->entropy[r] = series + (size_t)points * (5 * r + 1);
        out->max_p[r] = series + (size_t)points * (5 * r + 2);
        out->grad_z[r] = series + (size_t)points * (5 * r + 3);
        out->grad_qk[r] = series + (size_t)points * (5 * r + 4);
    }
    out->vocab = V;
    out->options = *o;
    out->divisor[0] = 1;
    out->divisor[1] = sqrt((double)o->d_k);
    sx_job job = {{V, o->d_model, o->d_k, o->T, 0}, ids, n_train, n, o};
    job.d.n = n_params(&job.d);
    andrea_rng rng;
    andrea_rng_seed(&rng, o->seed);
    int rc = 0; /* both runs: the same initial weights and batches (copies of one rng) */
    for (int r = 0; r < 2 && !rc; r++) rc = sx_run(&job, r, rng, out);
    free(ids);
    if (rc) return rc;
    int half = out->n_points / 2;
    for (int r = 0; r < 2; r++) {
        for (int p = half; p < out->n_points; p++) out->grad_z_late[r] += out->grad_z[r][p];
        out->grad_z_late[r] /= out->n_points - half;
    }
    /* the margins hold on 10 of 10 seeds at the defaults (docs/attention.md) */
    out->ok_loss = out->eval_loss[0] - out->eval_loss[1] >= ANDREA_SCALE_EXP_MARGIN;
    out->ok_sharp = out->entropy[0][0] < 0.5 * out->entropy[1][0];
    out->ok_grad = out->grad_z_late[0] < ANDREA_SCALE_EXP_GRAD_RATIO * out->grad_z_late[1];
    return 0;
}

void andrea_scale_exp_free(andrea_scale_exp *e) {
    free(e->step);
    free(e->loss[0]); /* the one allocation of every series */
    memset(e, 0, sizeof *e);
}
