/*
 * probe.c - is this model usable at all? Every number of a file can be finite and its
 * checksum valid while the weights are useless: a diverged run leaves weights of 1e10,
 * whose logits overflow to Inf and whose losses print as NaN. One forward over a fixed
 * probe batch (and the size of the largest weight) tells: the front ends refuse such a model with one line naming the file,
 * and the trainer never checkpoints such a state.
 */
#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "model/model.h"
#include "util/error.h"

enum { PROBE_T = 16 };
/* No trained fp32 model has a weight this large (f16 files cannot hold one over 65504);
 * one that does is damaged even when its forward happens to stay finite (a weight of 3e38
 * in an embedding row is normalised away, and sampling from it still "works"). */
#define PROBE_MAX_WEIGHT 1e6

double andrea_model_param_max_abs(const andrea_model *m) {
    return m->be->ops.max_abs(m->be, m->params, (size_t)m->layout.total); /* on the backend */
}

int andrea_model_probe(const andrea_model *m, const char *name) {
    double big = andrea_model_param_max_abs(m);
    if (big > PROBE_MAX_WEIGHT)
        return andrea_set_error("%s is unusable: its largest weight is %.3g, beyond %g, where no "
                                "trained model's weights lie: a diverged run or damaged weights; "
                                "use an earlier checkpoint", name, big, PROBE_MAX_WEIGHT);
    int T = m->cfg.ctx < PROBE_T ? m->cfg.ctx : PROBE_T, V = m->cfg.vocab;
    int32_t x[PROBE_T];
    for (int t = 0; t < T; t++) x[t] = (int32_t)((7919u * (unsigned)t + 1u) % (unsigned)V);
    andrea_context *c = andrea_context_create(m);
    if (!c) return -1;
    andrea_clear_error();
    float r = andrea_context_forward(m, c, x, NULL, 1, T);
    if (isnan(r) && andrea_error()[0]) {
        andrea_context_free(c);
        return -1;
    }
    const float *logits = andrea_context_logits(c);
    long bad = -1, n = (long)T * V;
    for (long i = 0; i < n && bad < 0; i++)
        if (!isfinite(logits[i])) bad = i;
    float at = bad >= 0 ? logits[bad] : 0.0f;
    andrea_context_free(c);
    if (bad < 0) return 0;
    return andrea_set_error("%s is unusable: its forward on a probe gives a non-finite logit (%g "
                            "at position %ld, token %ld; largest weight %.3g): a diverged run or "
                            "damaged weights; use an earlier checkpoint", name, (double)at,
                            bad / V, bad % V, big);
}
