/*
 * test_gradcheck.c - the whole model's analytic gradients against finite
 * differences of an independent double-precision forward pass, for every
 * parameter tensor, on the ANDREA and GPT-2 architecture variants.
 *
 * The reference forward below shares nothing with src/ except the parameter
 * offsets: plain loops, doubles, the textbook formulas.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "model/model.h"
#include "test_util.h"

typedef struct {
    const andrea_model *m;
    const double *P; /* parameters in double, same layout as m->params */
} ref_model;

static const double *at(const ref_model *r, const float *fp) {
    return fp ? r->P + (fp - r->m->params) : NULL;
}

static void ref_norm(const andrea_config *c, double *out, const double *x, const double *w,
                     const double *b, int C) {
    if (c->norm == ANDREA_NORM_LAYER) {
        double mu = 0, var = 0;
        for (int i = 0; i < C; i++) mu += x[i];
        mu /= C;
        for (int i = 0; i < C; i++) var += (x[i] - mu) * (x[i] - mu);
        var /= C;
        double r = 1.0 / sqrt(var + c->norm_eps);
        for (int i = 0; i < C; i++) out[i] = (x[i] - mu) * r * w[i] + (b ? b[i] : 0.0);
    } else {
        double ss = 0;
        for (int i = 0; i < C; i++) ss += x[i] * x[i];
        double r = 1.0 / sqrt(ss / C + c->norm_eps);
        for (int i = 0; i < C; i++) out[i] = x[i] * r * w[i];
    }
}

static void ref_linear(double *out, const double *x, const double *w, const double *b, int K,
                       int N) {
    for (int n = 0; n < N; n++) {
        double s = b ? b[n] : 0.0;
        for (int k = 0; k < K; k++) s += w[(long)n * K + k] * x[k];
        out[n] = s;
    }
}

static double ref_act(int act, double x) {
    if (act == ANDREA_ACT_GELU)
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    if (act == ANDREA_ACT_RELU) return x > 0 ? x : 0;
    return x > 0 ? x * x : 0;
}

/* mean cross-entropy of one batch */
static double ref_loss(const ref_model *r, const int32_t *in, const int32_t *tg, int B, int T) {
    const andrea_config *c = &r->m->cfg;
    int C = c->d_model, NH = c->n_head, HS = C / NH, V = c->vocab;
    const andrea_view *p = &r->m->p;
    double *x = malloc(sizeof(double) * T * C), *xn = malloc(sizeof(double) * T * C);
    double *qkv = malloc(sizeof(double) * T * 3 * C), *y = malloc(sizeof(double) * T * C);
    double *h = malloc(sizeof(double) * 4 * C), *tmp = malloc(sizeof(double) * 4 * C);
    double *logits = malloc(sizeof(double) * V);
    double total = 0;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++)
            for (int i = 0; i < C; i++)
                x[t * C + i] = at(r, p->wte)[in[b * T + t] * C + i] + at(r, p->wpe)[t * C + i];
        for (int l = 0; l < c->n_layer; l++) {
            const andrea_layer_view *w = &p->h[l];
            for (int t = 0; t < T; t++) {
                ref_norm(c, xn + t * C, x + t * C, at(r, w->ln1w), at(r, w->ln1b), C);
                ref_linear(qkv + t * 3 * C, xn + t * C, at(r, w->wqkv), at(r, w->bqkv), C, 3 * C);
            }
            for (int hh = 0; hh < NH; hh++)
                for (int i = 0; i < T; i++) {
                    double s[64], mx = -INFINITY, sum = 0;
                    for (int j = 0; j <= i; j++) {
                        double d = 0;
                        for (int k = 0; k < HS; k++)
                            d += qkv[i * 3 * C + hh * HS + k] * qkv[j * 3 * C + C + hh * HS + k];
                        s[j] = d / sqrt((double)HS);
                        if (s[j] > mx) mx = s[j];
                    }
                    for (int j = 0; j <= i; j++) sum += (s[j] = exp(s[j] - mx));
                    for (int k = 0; k < HS; k++) {
                        double o = 0;
                        for (int j = 0; j <= i; j++) o += s[j] / sum * qkv[j * 3 * C + 2 * C + hh * HS + k];
                        y[i * C + hh * HS + k] = o;
                    }
                }
            for (int t = 0; t < T; t++) {
                ref_linear(tmp, y + t * C, at(r, w->wo), at(r, w->bo), C, C);
                for (int i = 0; i < C; i++) x[t * C + i] += tmp[i];
                ref_norm(c, xn + t * C, x + t * C, at(r, w->ln2w), at(r, w->ln2b), C);
                ref_linear(h, xn + t * C, at(r, w->wfc), at(r, w->bfc), C, 4 * C);
                for (int i = 0; i < 4 * C; i++) h[i] = ref_act(c->act, h[i]);
                ref_linear(tmp, h, at(r, w->wproj), at(r, w->bproj), 4 * C, C);
                for (int i = 0; i < C; i++) x[t * C + i] += tmp[i];
            }
        }
        for (int t = 0; t < T; t++) {
            ref_norm(c, xn + t * C, x + t * C, at(r, p->lnfw), at(r, p->lnfb), C);
            ref_linear(logits, xn + t * C, at(r, p->lm_head), NULL, C, V);
            double mx = -INFINITY, sum = 0;
            for (int v = 0; v < V; v++) mx = logits[v] > mx ? logits[v] : mx;
            for (int v = 0; v < V; v++) sum += exp(logits[v] - mx);
            total += log(sum) + mx - logits[tg[b * T + t]];
        }
    }
    free(x); free(xn); free(qkv); free(y); free(h); free(tmp); free(logits);
    return total / (B * T);
}

static void check_variant(const char *label, andrea_config cfg, int flash) {
    const int B = 2, T = 7;
    andrea_model *m = andrea_model_create(&cfg, 42);
    CHECK(m != NULL);
    if (!m) return;
    andrea_model_set_flash_attention(m, flash);
    /* perturb norm gains and biases away from 1/0 so their gradients are generic */
    andrea_rng rng;
    andrea_rng_seed(&rng, 7);
    int64_t n = andrea_model_num_params(m);
    for (int i = 0; i < andrea_model_num_tensors(m); i++) {
        const andrea_tensor_info *t = andrea_model_tensor(m, i);
        if (t->cols == 0)
            for (int64_t j = 0; j < t->size; j++)
                m->params[t->offset + j] += 0.1f * andrea_rng_normal(&rng);
    }
    int32_t in[B * T], tg[B * T];
    for (int i = 0; i < B * T; i++) {
        in[i] = (int32_t)(andrea_rng_u64(&rng) % cfg.vocab);
        tg[i] = (int32_t)(andrea_rng_u64(&rng) % cfg.vocab);
    }
    double *P = malloc(sizeof(double) * n);
    for (int64_t i = 0; i < n; i++) P[i] = m->params[i];
    ref_model r = {m, P};

    float loss = andrea_model_forward(m, in, tg, B, T);
    double ref = ref_loss(&r, in, tg, B, T);
    /* float32 forward vs double: a few ulps per op over ~10 layers of sums */
    CHECK_CLOSE(loss, ref, 1e-5, 1e-5);
    andrea_model_zero_grad(m);
    CHECK(andrea_model_backward(m) == 0);
    const float *g = andrea_model_grads(m);

    int n_checked = 0;
    for (int i = 0; i < andrea_model_num_tensors(m); i++) {
        const andrea_tensor_info *t = andrea_model_tensor(m, i);
        float gmax = 0;
        int64_t argmax = 0;
        for (int64_t j = 0; j < t->size; j++)
            if (fabsf(g[t->offset + j]) > gmax) gmax = fabsf(g[t->offset + j]), argmax = j;
        CHECK(gmax > 0); /* every tensor receives gradient */
        for (int k = 0; k < 12; k++) {
            int64_t j = k == 0 ? argmax : (int64_t)(andrea_rng_u64(&rng) % t->size);
            int64_t idx = t->offset + j;
            /* central difference in double: error O(h^2) ~ 1e-10, far below float noise */
            double h = 1e-5, keep = P[idx];
            P[idx] = keep + h;
            double lp = ref_loss(&r, in, tg, B, T);
            P[idx] = keep - h;
            double lm = ref_loss(&r, in, tg, B, T);
            P[idx] = keep;
            double num = (lp - lm) / (2 * h);
            /* float32 backward: relative error ~1e-5 of the tensor's largest gradient */
            double tol = 2e-4 * gmax + 1e-3 * fabs(num) + 1e-7;
            if (!(fabs(g[idx] - num) <= tol)) {
                fprintf(stderr, "%s: %s[%lld]: analytic %.8g numeric %.8g (tol %.3g)\n", label,
                        t->name, (long long)j, g[idx], num, tol);
                tu_failures++;
            }
            n_checked++;
        }
    }
    printf("%s, %s attention: %d tensors, %d gradient entries checked, loss %.6f (ref %.6f)\n",
           label, flash ? "flash" : "explicit", andrea_model_num_tensors(m), n_checked, loss, ref);
    free(P);
    andrea_model_free(m);
}

int main(void) {
    andrea_config c;
    /* ANDREA: RMSNorm, ReLU^2, no biases, untied head */
    CHECK(andrea_config_preset("tiny", &c) == 0);
    c.n_layer = 2; c.n_head = 2; c.d_model = 16; c.ctx = 8; c.vocab = 37;
    check_variant("andrea (rmsnorm, relu2, untied)", c, 0);
    check_variant("andrea (rmsnorm, relu2, untied)", c, 1);
    /* GPT-2: LayerNorm with bias, GELU-tanh, biases, tied head */
    CHECK(andrea_config_preset("gpt2-124m", &c) == 0);
    c.n_layer = 2; c.n_head = 4; c.d_model = 16; c.ctx = 8; c.vocab = 37;
    check_variant("gpt2 (layernorm+bias, gelu, tied)", c, 0);
    check_variant("gpt2 (layernorm+bias, gelu, tied)", c, 1);
    /* the remaining switch: plain ReLU */
    c.act = ANDREA_ACT_RELU; c.bias = 0; c.tied = 0;
    check_variant("layernorm, relu, no bias, untied", c, 1);
    return tu_finish("test_gradcheck");
}
