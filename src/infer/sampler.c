/*
 * sampler.c - next-token choice from logits. The pipeline, in order:
 * repeat penalty, temperature, top-k, top-p (nucleus), min-p, then a draw
 * (or argmax when the temperature is 0). Ties are broken by token id so the
 * same seed always gives the same tokens.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"

void andrea_sampler_default(andrea_sampler *s) {
    s->temperature = 0.8f;
    s->top_k = 0;
    s->top_p = 1.0f;
    s->min_p = 0.0f;
    s->repeat_penalty = 1.0f;
    s->repeat_last_n = 64;
}

void andrea_sampler_describe(const andrea_sampler *s, char *buf, size_t n) {
    snprintf(buf, n, "repeat-penalty %g (last %d) -> temp %g%s -> top-k %d -> top-p %g -> min-p %g",
             s->repeat_penalty, s->repeat_last_n, s->temperature,
             s->temperature <= 0 ? " (greedy)" : "", s->top_k, s->top_p, s->min_p);
}

typedef struct {
    float p;
    int id;
} prob_id;

static int by_prob_desc(const void *a, const void *b) {
    const prob_id *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->id - y->id;
}

float andrea_logprob(const float *logits, int V, int token) {
    float maxv = -INFINITY;
    for (int i = 0; i < V; i++)
        if (logits[i] > maxv) maxv = logits[i];
    double sum = 0.0;
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - maxv);
    return (float)((double)logits[token] - maxv - log(sum));
}

int andrea_top_tokens(const float *logits, int V, int n, int32_t *ids) {
    if (n > V) n = V;
    int k = 0; /* ids[0..k) sorted, most likely first: one insertion per logit, O(V n) */
    for (int i = 0; i < V; i++) {
        int at = k;
        while (at > 0 && logits[i] > logits[ids[at - 1]]) at--; /* ties: the lower id first */
        if (at >= n) continue;
        int last = k < n ? k : n - 1;
        memmove(ids + at + 1, ids + at, sizeof(int32_t) * (size_t)(last - at));
        ids[at] = i;
        if (k < n) k++;
    }
    return k;
}

int andrea_sample_ex(const float *logits, int V, const andrea_sampler *s, const int32_t *history,
                     int n_history, andrea_rng *rng) {
    prob_id *pi = malloc(sizeof *pi * (size_t)V);
    if (!pi) return -1;
    for (int i = 0; i < V; i++) pi[i].p = logits[i], pi[i].id = i;
    if (s->repeat_penalty != 1.0f && history) {
        int from = n_history - s->repeat_last_n > 0 ? n_history - s->repeat_last_n : 0;
        /* each distinct recent token is penalised once */
        for (int h = from; h < n_history; h++) {
            int t = history[h];
            if (t < 0 || t >= V) continue;
            int seen = 0;
            for (int k = from; k < h && !seen; k++) seen = history[k] == t;
            if (!seen) pi[t].p = pi[t].p > 0 ? pi[t].p / s->repeat_penalty : pi[t].p * s->repeat_penalty;
        }
    }
    if (s->temperature <= 0.0f) {
        int best = 0;
        for (int i = 1; i < V; i++)
            if (pi[i].p > pi[best].p) best = i;
        free(pi);
        return best;
    }
    float maxv = -INFINITY;
    for (int i = 0; i < V; i++)
        if (pi[i].p > maxv) maxv = pi[i].p;
    for (int i = 0; i < V; i++) pi[i].p = expf((pi[i].p - maxv) / s->temperature);
    int n = V;
    int filtered = (s->top_k > 0 && s->top_k < V) || (s->top_p > 0.0f && s->top_p < 1.0f) ||
                   s->min_p > 0.0f;
    if (filtered) {
        qsort(pi, (size_t)V, sizeof *pi, by_prob_desc);
        if (s->top_k > 0 && s->top_k < n) n = s->top_k;
        if (s->top_p > 0.0f && s->top_p < 1.0f) {
            double sum = 0.0, cum = 0.0;
            for (int i = 0; i < n; i++) sum += pi[i].p;
            for (int i = 0; i < n; i++) {
                cum += pi[i].p;
                if (cum >= s->top_p * sum) {
                    n = i + 1;
                    break;
                }
            }
        }
        if (s->min_p > 0.0f) { /* pi[0] is the most likely token */
            float floor_p = s->min_p * pi[0].p;
            int keep = 1;
            while (keep < n && pi[keep].p >= floor_p) keep++;
            n = keep;
        }
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += pi[i].p;
    double r = andrea_rng_uniform(rng) * sum, cum = 0.0;
    int pick = pi[n - 1].id;
    for (int i = 0; i < n; i++) {
        cum += pi[i].p;
        if (r < cum) {
            pick = pi[i].id;
            break;
        }
    }
    free(pi);
    return pick;
}

int andrea_sample(const float *logits, int V, const andrea_sampler *s, andrea_rng *rng) {
    return andrea_sample_ex(logits, V, s, NULL, 0, rng);
}
