/*
 * step.c - one optimisation step, and every call the trainer makes into the model and
 * its kernels for it: zero the gradients, forward and backward over grad_accum
 * micro-batches (each scaled by 1/grad_accum, so the gradient is that of the mean loss),
 * the global gradient norm, and AdamW per tensor with the clipping folded into its
 * gradient scale. A backend that runs elsewhere (a GPU) replaces this file's insides.
 */
#include <math.h>
#include <string.h>

#include "parallel/dist_train.h"
#include "model/model.h"
#include "train/train_run.h"
#include "util/error.h"

int64_t andrea_step_num_params(const andrea_train_run *r) { return r->m->layout.total; }

int andrea_step_prepare(andrea_train_run *r) {
    if (andrea_model_set_backend(r->m, r->o.backend)) return -1;
    andrea_model_set_flash_attention(r->m, r->o.attention != ANDREA_ATTN_EXPLICIT);
    andrea_model_zero_grad(r->m); /* allocates the gradients */
    return r->m->grads ? 0 : -1;
}

int andrea_step_grads(andrea_train_run *r, int step, float *loss, float *grad_norm) {
    andrea_model *m = r->m;
    const andrea_train_options *o = &r->o;
    int B = o->batch, T = o->seq, ranks = r->dist->size;
    /* each micro-batch scaled by 1/(accum x ranks): the sum over ranks is the mean */
    float scale = 1.0f / (float)(o->grad_accum * ranks);
    andrea_model_discard_grads(m); /* the first backward overwrites them */
    double loss_sum = 0.0;
    for (int micro = 0; micro < o->grad_accum; micro++) {
        if (r->src->next(r->src, B, T, r->x, r->y)) return -1;
        andrea_clear_error(); /* so that a NaN loss is told apart from a failed call */
        float l;
        if (ranks > 1) { /* the backward's sums overlap it: armed after the forward */
            l = andrea_model_forward(m, r->x, r->y, B, T);
            if (isnan(l) && andrea_error()[0]) return -1;
            andrea_dist_overlap_arm(r, micro == o->grad_accum - 1);
            if (andrea_model_backward_scaled(m, scale)) return -1;
        } else { /* one launch on a backend with graphs (graph_step.c) */
            andrea_dist_overlap_arm(r, micro == o->grad_accum - 1);
            l = andrea_model_train_micro(m, r->x, r->y, B, T, scale);
            if (isnan(l) && andrea_error()[0]) return -1;
        }
        loss_sum += l;
    }
    /* the global batch's gradient and loss on every rank (before anything reads them) */
    if (andrea_dist_reduce_grads(r, &loss_sum)) return -1;
    *loss = (float)(loss_sum / (o->grad_accum * ranks));
    if (o->inject_nan_step >= 0 && step >= o->inject_nan_step &&
        step < o->inject_nan_step + o->inject_nan_count)
        m->be->ops.upload(m->be, m->grads, &(float){NAN}, sizeof(float));
    *grad_norm = (float)sqrt(andrea_model_grad_sum_squares(m));
    return 0;
}

int andrea_step_update(andrea_train_run *r, int step, float lr, float grad_norm) {
    andrea_model *m = r->m;
    const andrea_train_options *o = &r->o;
    float gscale = o->grad_clip > 0 && grad_norm > o->grad_clip ? o->grad_clip / grad_norm : 1.0f;
    if (r->zero.on) /* this rank's slice, then the parameters all-gathered */
        return andrea_zero_step(&r->zero, r->dist, m, r->adam_m, r->adam_v, lr, o->beta1,
                                o->beta2, o->eps, o->weight_decay, step + 1, gscale);
    andrea_model_adamw_step(m, r->adam_m, r->adam_v, lr, o->beta1, o->beta2, o->eps,
                            o->weight_decay, step + 1, gscale);
    return 0;
}
