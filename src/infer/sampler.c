/*
 * sampler.c - next-token choice from logits: greedy (temperature 0) or
 * temperature-scaled softmax restricted by top-k and then top-p (nucleus).
 */
#include <math.h>
#include <stdlib.h>

#include "andrea.h"

typedef struct {
    float p;
    int id;
} prob_id;

static int by_prob_desc(const void *a, const void *b) {
    const prob_id *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->id - y->id; /* ties broken by id: deterministic */
}

int andrea_sample(const float *logits, int V, const andrea_sampler *s, andrea_rng *rng) {
    if (s->temperature <= 0.0f) {
        int best = 0;
        for (int i = 1; i < V; i++)
            if (logits[i] > logits[best]) best = i;
        return best;
    }
    prob_id *pi = malloc(sizeof *pi * (size_t)V);
    if (!pi) return -1;
    float maxv = -INFINITY;
    for (int i = 0; i < V; i++)
        if (logits[i] > maxv) maxv = logits[i];
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        pi[i].p = expf((logits[i] - maxv) / s->temperature);
        pi[i].id = i;
        sum += pi[i].p;
    }
    int n = V;
    if ((s->top_k > 0 && s->top_k < V) || (s->top_p > 0.0f && s->top_p < 1.0f)) {
        qsort(pi, (size_t)V, sizeof *pi, by_prob_desc);
        if (s->top_k > 0 && s->top_k < n) n = s->top_k;
        sum = 0.0;
        for (int i = 0; i < n; i++) sum += pi[i].p;
        if (s->top_p > 0.0f && s->top_p < 1.0f) {
            double cum = 0.0;
            for (int i = 0; i < n; i++) {
                cum += pi[i].p;
                if (cum >= s->top_p * sum) {
                    n = i + 1;
                    break;
                }
            }
            sum = 0.0;
            for (int i = 0; i < n; i++) sum += pi[i].p;
        }
    }
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
