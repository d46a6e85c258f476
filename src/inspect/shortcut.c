/*
 * shortcut.c - what the causal mask prevents, shown by training. A one-head attention
 * model (token and position embeddings, q, k, v, one output matrix; double precision,
 * hand-written gradients, Adam) learns to predict the next token of random tokens:
 *
 *   x_i = E[t_i] + P[i];  A = softmax(mask(x Wq (x Wk)^T / sqrt(D)));  logits_i = (A x Wv)_i Wo
 *
 * Random tokens cannot be predicted from the past: the honest loss is ln V. Without the
 * mask, position i may read position i + 1, the very token it must predict, and the
 * training loss falls towards 0. At generation the future token does not exist yet (the
 * model sees t_0..t_i and must produce t_{i+1}): that model's loss is then far above ln V.
 * With the mask, the loss in training and in generation are the same number.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "inspect/explain_int.h"

enum { SV = 8, ST = 8, SD = 16, BATCH = 16, STEPS = 100, EVAL = 100 };

typedef struct {
    double E[SV][SD], P[ST][SD], Wq[SD][SD], Wk[SD][SD], Wv[SD][SD], Wo[SD][SV];
} sc_params;

typedef struct { /* one pass's activations, (n, .) */
    double x[ST][SD], q[ST][SD], k[ST][SD], v[ST][SD], A[ST][ST], o[ST][SD], dlg[ST][SV];
} sc_acts;

static void sc_forward(const sc_params *p, const int *tok, int n, int mask, sc_acts *a) {
    double scale = 1 / sqrt((double)SD);
    for (int i = 0; i < n; i++)
        for (int d = 0; d < SD; d++) a->x[i][d] = p->E[tok[i]][d] + p->P[i][d];
    for (int i = 0; i < n; i++)
        for (int d = 0; d < SD; d++) {
            double q = 0, k = 0, v = 0;
            for (int c = 0; c < SD; c++) {
                q += a->x[i][c] * p->Wq[c][d];
                k += a->x[i][c] * p->Wk[c][d];
                v += a->x[i][c] * p->Wv[c][d];
            }
            a->q[i][d] = q, a->k[i][d] = k, a->v[i][d] = v;
        }
    for (int i = 0; i < n; i++) {
        double mx = -INFINITY, z = 0;
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int d = 0; d < SD; d++) s += a->q[i][d] * a->k[j][d];
            a->A[i][j] = mask && j > i ? -INFINITY : s * scale;
            if (a->A[i][j] > mx) mx = a->A[i][j];
        }
        for (int j = 0; j < n; j++) z += (a->A[i][j] = exp(a->A[i][j] - mx));
        for (int j = 0; j < n; j++) a->A[i][j] /= z;
        for (int d = 0; d < SD; d++) {
            double s = 0;
            for (int j = 0; j < n; j++) s += a->A[i][j] * a->v[j][d];
            a->o[i][d] = s;
        }
    }
}

/* Mean cross-entropy of positions from..n-1 predicting tok[i + 1]; fills a->dlg. */
static double sc_loss(const sc_params *p, const int *tok, int from, int n, sc_acts *a) {
    double loss = 0;
    int cnt = n - from;
    memset(a->dlg, 0, sizeof a->dlg); /* positions outside from..n-1 pass no gradient */
    for (int i = from; i < n; i++) {
        double lg[SV], mx = -INFINITY, z = 0;
        for (int c = 0; c < SV; c++) {
            double s = 0;
            for (int d = 0; d < SD; d++) s += a->o[i][d] * p->Wo[d][c];
            lg[c] = s;
            if (s > mx) mx = s;
        }
        for (int c = 0; c < SV; c++) z += exp(lg[c] - mx);
        loss -= lg[tok[i + 1]] - mx - log(z);
        for (int c = 0; c < SV; c++) a->dlg[i][c] = (exp(lg[c] - mx) / z - (c == tok[i + 1])) / cnt;
    }
    return loss / cnt;
}

/* Adds the gradients of the last sc_loss into g; n: the tokens of the forward. */
static void sc_backward(const sc_params *p, const int *tok, int n, sc_acts *a, sc_params *g) {
    double scale = 1 / sqrt((double)SD);
    double dO[ST][SD], dq[ST][SD] = {{0}}, dk[ST][SD] = {{0}}, dv[ST][SD] = {{0}};
    for (int i = 0; i < n; i++)
        for (int d = 0; d < SD; d++) {
            double s = 0;
            for (int c = 0; c < SV; c++) {
                s += a->dlg[i][c] * p->Wo[d][c];
                g->Wo[d][c] += a->o[i][d] * a->dlg[i][c];
            }
            dO[i][d] = s;
        }
    for (int i = 0; i < n; i++) {
        double dA[ST], dot = 0;
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int d = 0; d < SD; d++) {
                s += dO[i][d] * a->v[j][d];
                dv[j][d] += a->A[i][j] * dO[i][d];
            }
            dA[j] = s;
            dot += a->A[i][j] * s;
        }
        for (int j = 0; j < n; j++) { /* through the softmax: A (dA - sum A dA), then the scale */
            double ds = a->A[i][j] * (dA[j] - dot) * scale;
            for (int d = 0; d < SD; d++) {
                dq[i][d] += ds * a->k[j][d];
                dk[j][d] += ds * a->q[i][d];
            }
        }
    }
    for (int i = 0; i < n; i++)
        for (int c = 0; c < SD; c++) {
            double dx = 0;
            for (int d = 0; d < SD; d++) {
                dx += dq[i][d] * p->Wq[c][d] + dk[i][d] * p->Wk[c][d] + dv[i][d] * p->Wv[c][d];
                g->Wq[c][d] += a->x[i][c] * dq[i][d];
                g->Wk[c][d] += a->x[i][c] * dk[i][d];
                g->Wv[c][d] += a->x[i][c] * dv[i][d];
            }
            g->E[tok[i]][c] += dx;
            g->P[i][c] += dx;
        }
}

static void random_tokens(andrea_rng *rng, int *tok) {
    for (int i = 0; i < ST; i++) tok[i] = (int)(andrea_rng_u64(rng) % SV);
}

/* Trains one model (mask or not) from rng; returns the loss as trained (whole sequences,
 * the model's own mask) and as generating (prefixes t_0..t_i predicting t_{i+1}). */
static void sc_run(int mask, andrea_rng *rng, double *train, double *gen) {
    enum { N = sizeof(sc_params) / sizeof(double) };
    sc_params *blk = calloc(4, sizeof(sc_params));
    sc_acts *a = malloc(sizeof *a);
    if (!blk || !a) { /* checks below fail with NaN losses */
        *train = *gen = NAN;
        free(blk);
        free(a);
        return;
    }
    double *w = (double *)&blk[0], *g = (double *)&blk[1], *m1 = (double *)&blk[2],
           *m2 = (double *)&blk[3];
    for (int i = 0; i < N; i++) w[i] = 0.3 * andrea_rng_normal(rng);
    const double lr = 0.03, b1 = 0.9, b2 = 0.999;
    int tok[ST];
    for (int s = 1; s <= STEPS; s++) {
        memset(g, 0, sizeof(sc_params));
        for (int b = 0; b < BATCH; b++) {
            random_tokens(rng, tok);
            sc_forward(&blk[0], tok, ST, mask, a);
            sc_loss(&blk[0], tok, 0, ST - 1, a);
            sc_backward(&blk[0], tok, ST, a, &blk[1]);
        }
        for (int i = 0; i < N; i++) { /* Adam */
            double gi = g[i] / BATCH;
            m1[i] = b1 * m1[i] + (1 - b1) * gi;
            m2[i] = b2 * m2[i] + (1 - b2) * gi * gi;
            w[i] -= lr * (m1[i] / (1 - pow(b1, s))) / (sqrt(m2[i] / (1 - pow(b2, s))) + 1e-8);
        }
    }
    *train = *gen = 0;
    for (int r = 0; r < EVAL; r++) {
        random_tokens(rng, tok);
        sc_forward(&blk[0], tok, ST, mask, a);
        *train += sc_loss(&blk[0], tok, 0, ST - 1, a) / EVAL;
        for (int n = 1; n < ST; n++) { /* generating: only t_0..t_{n-1} exist */
            sc_forward(&blk[0], tok, n, mask, a);
            *gen += sc_loss(&blk[0], tok, n - 1, n, a) / (EVAL * (ST - 1));
        }
    }
    free(blk);
    free(a);
}

void andrea_explain_shortcut(andrea_explain *e, andrea_rng *rng) {
    e->shortcut_run = 1;
    e->shortcut_steps = STEPS;
    e->shortcut_vocab = SV;
    e->shortcut_T = ST;
    andrea_rng r2 = *rng; /* both runs see the same initial weights and batches */
    sc_run(0, rng, &e->shortcut_train, &e->shortcut_gen);
    sc_run(1, &r2, &e->causal_train, &e->causal_gen);
    double chance = log((double)SV);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SHORTCUT, e->shortcut_train < 0.5 * chance,
                             "check.shortcut_train", e->shortcut_train, chance);
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SHORTCUT, e->shortcut_gen > chance,
                             "check.shortcut_gen", e->shortcut_gen, chance);
    /* the same sums in the same order: a causal model computes identical rows either way */
    andrea_explain_add_check(e, ANDREA_EXPLAIN_SHORTCUT,
                             fabs(e->causal_train - e->causal_gen) < 1e-9,
                             "check.shortcut_causal", e->causal_train, e->causal_gen);
}
