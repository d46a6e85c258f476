/*
 * test_vocab_pad.c - the LM head padded to Vp rows on a backend that asks for it
 * (backend.h's vocab_multiple; model.h's andrea_head_pad): the arithmetic and the memory
 * plan, then one model on cpu-guarded (padded here by ANDREA_VOCAB_MULTIPLE=64, 257 -> 320;
 * the other suites leave it unpadded) against the same model on
 * cpu (which does not), tied and untied: the loss, the logits handed out (V columns),
 * every gradient, a few AdamW steps with weight decay, the zero rows after an untied head
 * (zero through training), the padded logits columns (0 in dlogits, never a probability),
 * checkpoints (byte-identical files) and their resumption. cpu-guarded runs cpu's kernels,
 * a product's columns do not depend on how many others there are, and the padded rows come
 * after the real ones (the reduction's blocks unchanged), so every comparison is exact.
 * Every other backend that pads (cuda in
 * the emulator build, or on a GPU) runs the same checks within test_backend_parity's
 * tolerances, its checkpoint read back exactly and resumed on it to the bit.
 */
#include <string.h>

#include "backend/backend.h"
#include "model/model.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"

static void test_padded_sizes(void) {
    CHECK(andrea_vocab_padded(8449, 64) == 8512);
    CHECK(andrea_vocab_padded(50257, 64) == 50304);
    CHECK(andrea_vocab_padded(257, 64) == 320);
    CHECK(andrea_vocab_padded(8512, 64) == 8512); /* already a multiple: stays */
    CHECK(andrea_vocab_padded(64, 64) == 64);
    CHECK(andrea_vocab_padded(8449, 0) == 8449); /* 0 and 1: no padding */
    CHECK(andrea_vocab_padded(8449, 1) == 8449);
    CHECK(andrea_vocab_padded(1, 64) == 64);
}

static void test_plans(void) {
    andrea_config c;
    andrea_head_pad hp;
    /* GPT-2: tied, its 47 extra rows are the parameters after wte (wpe...): no zeros */
    CHECK(andrea_config_preset("gpt2-124m", &c) == 0);
    andrea_head_pad_plan(&c, 64, &hp);
    CHECK(hp.V == 50257 && hp.Vp == 50304 && hp.after == 0);
    /* andrea-120m: untied, 63 zero rows after lm_head (the layout's last tensor) */
    CHECK(andrea_config_preset("andrea-120m", &c) == 0);
    andrea_head_pad_plan(&c, 64, &hp);
    CHECK(hp.V == 8449 && hp.Vp == 8512 && hp.after == 63 * 768);
    /* tied, with fewer parameters after wte than the extra rows need: zeros for the rest */
    CHECK(andrea_config_preset("tiny", &c) == 0);
    c.tied = 1, c.vocab = 65, c.d_model = 4, c.n_head = 1, c.n_layer = 1, c.ctx = 4;
    andrea_head_pad_plan(&c, 64, &hp);
    int64_t follow = andrea_config_param_counts(&c).total - 65 * 4;
    CHECK(hp.Vp == 128 && follow > 0 && follow < 63 * 4 && hp.after == 63 * 4 - follow);
    /* no padding: 0 or 1, or V already a multiple */
    for (int mult = 0; mult <= 1; mult++) {
        andrea_head_pad_plan(&c, mult, &hp);
        CHECK(hp.Vp == c.vocab && hp.after == 0);
    }
    c.vocab = 512, c.tied = 0;
    andrea_head_pad_plan(&c, 64, &hp);
    CHECK(hp.Vp == 512 && hp.after == 0);
    /* who pads */
    CHECK(andrea_backend_vocab_multiple(&andrea_backend_cpu_guarded) == 64); /* main's env */
    CHECK(andrea_backend_vocab_multiple(&andrea_backend_cpu) == 1); /* never, whatever it says */
}

/* n floats of backend memory x as a fresh host array */
static float *host(const andrea_model *m, const float *x, size_t n) {
    float *h = tu_falloc(n ? n : 1);
    if (n) m->be->ops.download(m->be, h, x, sizeof(float) * n);
    return h;
}

/* the tolerance of the backend under test against cpu (test_backend_parity's): 0 for
 * cpu-guarded, whose kernels are cpu's */
static double REL = 0.0;

static double tolerance(const andrea_backend *be) {
    if (be == &andrea_backend_cpu_guarded) return 0.0;
    return andrea_backend_precision(be) == ANDREA_PRECISION_BF16 ? 2e-2 : 1e-4;
}

/* x of a (xa) and of b (xb) within rel of the scale (0: to the bit) */
static void close_to(const char *what, const andrea_model *a, const float *xa,
                     const andrea_model *b, const float *xb, size_t n, double rel) {
    float *ha = host(a, xa, n), *hb = host(b, xb, n);
    tu_same(what, hb, ha, n, rel);
    free(ha);
    free(hb);
}
static void same(const char *what, const andrea_model *a, const float *xa, const andrea_model *b,
                 const float *xb, size_t n) {
    close_to(what, a, xa, b, xb, n, 0.0);
}
static void similar(const char *what, const andrea_model *a, const float *xa,
                    const andrea_model *b, const float *xb, size_t n) {
    close_to(what, a, xa, b, xb, n, REL);
}

/* how many of the zeros allocated after m's flat vector x (params or grads) are not 0 */
static size_t pad_nonzero(const andrea_model *m, const float *x) {
    size_t after = (size_t)m->pad.after, k = 0;
    float *t = host(m, x + m->layout.total, after);
    for (size_t i = 0; i < after; i++) k += t[i] != 0.0f;
    free(t);
    return k;
}

/* how many padded columns (V..Vp-1) of the context's first `rows` logits rows are not 0 */
static size_t logits_pad_nonzero(const andrea_model *m, int rows) {
    const andrea_context *ctx = m->ctx;
    int Vp = ctx->logits_ld, V = m->cfg.vocab;
    size_t k = 0;
    float *h = host(m, ctx->a.logits, (size_t)rows * Vp);
    for (int r = 0; r < rows; r++)
        for (int j = V; j < Vp; j++) k += h[(size_t)r * Vp + j] != 0.0f;
    free(h);
    return k;
}

enum { B = 2, T = 8, STEPS = 3 };

static void batch(int step, int V, int32_t *x, int32_t *y) {
    for (int i = 0; i < B * T; i++) {
        x[i] = (i * 37 + step * 11) % V;
        y[i] = i == 4 ? -1 : (i * 53 + 1 + step) % V; /* one ignored target */
    }
}

/* one training step: forward, backward, AdamW with weight decay; the loss */
static float step(andrea_model *m, float *am, float *av, int t) {
    int32_t x[B * T], y[B * T];
    batch(t, m->cfg.vocab, x, y);
    float loss = andrea_model_forward(m, x, y, B, T);
    andrea_model_discard_grads(m);
    CHECK(andrea_model_backward(m) == 0);
    andrea_model_adamw_step(m, am, av, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, t, 1.0f);
    return loss;
}

static int file_bytes(const char *path, char **out, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)*n + 1);
    size_t got = *out ? fread(*out, 1, (size_t)*n, f) : 0;
    fclose(f);
    return got == (size_t)*n ? 0 : -1;
}

static void same_file(const char *what, const char *a, const char *b) {
    char *x = NULL, *y = NULL;
    long nx = 0, ny = 0;
    CHECK(file_bytes(a, &x, &nx) == 0 && file_bytes(b, &y, &ny) == 0);
    if (x && y && (nx != ny || memcmp(x, y, (size_t)nx) != 0)) {
        fprintf(stderr, "%s: %s and %s differ (%ld and %ld bytes)\n", what, a, b, nx, ny);
        tu_failures++;
    }
    free(x);
    free(y);
}

static void padded_vs_unpadded(const andrea_backend *be, const andrea_config *cfg,
                               const char *what) {
    int before = tu_failures;
    REL = tolerance(be);
    andrea_model *ref = andrea_model_create_on(cfg, 5, "cpu");
    andrea_model *m = andrea_model_create_on(cfg, 5, be->name);
    CHECK(ref && m);
    if (!ref || !m) return;
    int tied = cfg->tied, Vp = andrea_vocab_padded(cfg->vocab, andrea_backend_vocab_multiple(be));
    andrea_head_pad hp;
    andrea_head_pad_plan(cfg, andrea_backend_vocab_multiple(be), &hp);
    CHECK(m->pad.after == hp.after);
    if (strcmp(what, "tied-short") == 0) CHECK(hp.after > 0);
    size_t n = (size_t)andrea_model_num_params(m), V = (size_t)cfg->vocab;
    /* the files' view of the model does not move: the same count, the same tensors */
    CHECK(andrea_model_num_params(ref) == (int64_t)n);
    CHECK(n == (size_t)andrea_config_param_counts(cfg).total);
    CHECK(ref->pad.Vp == cfg->vocab && ref->pad.after == 0);
    CHECK(m->pad.Vp == Vp && Vp > cfg->vocab);
    same("init", ref, ref->params, m, m->params, n);
    CHECK(pad_nonzero(m, m->params) == 0);

    /* the forward: logits handed out with V columns; an untied head's padded columns are
     * its zero rows' logits, 0, and the softmax leaves them (a probability there would be
     * exp(0 - max) / sum); a tied head's are wpe's..., never read */
    int32_t x[B * T], y[B * T];
    batch(0, cfg->vocab, x, y);
    andrea_model_forward(ref, x, NULL, B, T);
    andrea_model_forward(m, x, NULL, B, T);
    tu_same("logits (V columns)", andrea_model_logits(m), andrea_model_logits(ref),
            (size_t)B * T * V, REL);
    float lr = andrea_model_forward(ref, x, y, B, T), lm = andrea_model_forward(m, x, y, B, T);
    CHECK_CLOSE(lm, lr, 0, REL);
    CHECK(lr > 0.0f);
    if (!tied) CHECK(logits_pad_nonzero(m, B * T) == 0);
    andrea_model_zero_grad(ref), andrea_model_zero_grad(m);
    CHECK(andrea_model_backward(ref) == 0 && andrea_model_backward(m) == 0);
    CHECK(logits_pad_nonzero(m, B * T) == 0); /* dlogits: 0 there, whatever the logits */
    /* every gradient, those of the tensors after a tied wte (its extra rows) too */
    similar("gradients", ref, ref->grads, m, m->grads, n);
    CHECK(pad_nonzero(m, m->grads) == 0);

    /* AdamW with weight decay: the padded rows are outside every update and stay 0 */
    float *rm = andrea_model_moments_alloc(ref), *rv = andrea_model_moments_alloc(ref);
    float *mm = andrea_model_moments_alloc(m), *mv = andrea_model_moments_alloc(m);
    CHECK(rm && rv && mm && mv);
    for (int t = 1; t <= STEPS; t++) {
        float a = step(ref, rm, rv, t), b = step(m, mm, mv, t);
        CHECK_CLOSE(b, a, 0, REL);
    }
    /* AdamW's first steps move each weight by about lr whatever the gradient's size, so a
     * rounding difference in a tiny gradient shows in the weights, and v squares the
     * gradients after the weights moved: 10x the products' bound for both */
    close_to("weights after AdamW", ref, ref->params, m, m->params, n, 10 * REL);
    close_to("AdamW v", ref, rv, m, mv, n, 10 * REL);
    if (REL == 0.0) same("AdamW m", ref, rm, m, mm, n);
    CHECK(pad_nonzero(m, m->params) == 0);
    CHECK(pad_nonzero(m, m->grads) == 0);

    /* the prefill that keeps every position (the head's product over Vp, a row at Vp) */
    andrea_kv *kr = andrea_kv_create(ref), *km = andrea_kv_create(m);
    CHECK(kr && km);
    const float *pr = andrea_kv_prefill_all(ref, andrea_model_context(ref), kr, x, T);
    float *want = pr ? tu_dup(pr, V) : NULL;
    tu_same("prefill logits", andrea_kv_prefill_all(m, andrea_model_context(m), km, x, T), want,
            V, 10 * REL);
    free(want);
    andrea_kv_free(kr), andrea_kv_free(km);

    /* checkpoints: the same bytes from both, and either resumes the other exactly */
    char dir[1024];
    CHECK(tu_tmp_dir(dir, sizeof dir) == 0);
    andrea_ckpt_state st;
    memset(&st, 0, sizeof st);
    st.step = STEPS;
    char pr_path[1200], pm_path[1200];
    snprintf(pr_path, sizeof pr_path, "%s/cpu_%s.ckpt", dir, what);
    snprintf(pm_path, sizeof pm_path, "%s/pad_%s.ckpt", dir, what);
    CHECK(andrea_checkpoint_save(pr_path, ref, rm, rv, &st, "tok", 3) == 0);
    CHECK(andrea_checkpoint_save(pm_path, m, mm, mv, &st, "tok", 3) == 0);
    if (REL == 0.0) same_file("checkpoints from cpu and from padded cpu-guarded", pr_path, pm_path);
    float *lm2 = NULL, *lv2 = NULL;
    andrea_model *back = andrea_checkpoint_load(pm_path, &lm2, &lv2, NULL, NULL, NULL);
    CHECK(back && lm2 && lv2);
    if (back && lm2 && lv2 && REL > 0.0) {
        /* the file holds exactly m's values (V rows, no padding), and resumes on be to the bit */
        CHECK(andrea_model_num_params(back) == (int64_t)n);
        CHECK(andrea_model_move(back, be->name, &lm2, &lv2) == 0);
        same("checkpoint read back", m, m->params, back, back->params, n);
        same("checkpoint read back, v", m, mv, back, lv2, n);
        CHECK(step(m, mm, mv, STEPS + 1) == step(back, lm2, lv2, STEPS + 1));
        same("resumed on the padding backend", m, m->params, back, back->params, n);
        CHECK(pad_nonzero(back, back->params) == 0);
    }
    if (back && lm2 && lv2 && REL == 0.0) {
        /* the padded file resumed on cpu: the next step is ref's */
        CHECK(andrea_model_move(back, "cpu", &lm2, &lv2) == 0);
        CHECK(back->pad.Vp == cfg->vocab);
        float a = step(ref, rm, rv, STEPS + 1), b = step(back, lm2, lv2, STEPS + 1);
        CHECK(a == b);
        same("resumed on cpu", ref, ref->params, back, back->params, n);
        /* moved to the padded backend: zero rows made around the same values */
        CHECK(andrea_model_move(back, be->name, &lm2, &lv2) == 0);
        CHECK(back->pad.Vp == Vp && pad_nonzero(back, back->params) == 0);
        CHECK(step(m, mm, mv, STEPS + 1) == a); /* m catches up with ref and back */
        float d = step(back, lm2, lv2, STEPS + 2), e = step(m, mm, mv, STEPS + 2);
        CHECK(d == e);
        same("resumed, moved to the padding backend", m, m->params, back, back->params, n);
        CHECK(pad_nonzero(back, back->params) == 0);
        andrea_model_moments_free(back, lm2), andrea_model_moments_free(back, lv2);
    }
    andrea_model_free(back);
    andrea_model_moments_free(ref, rm), andrea_model_moments_free(ref, rv);
    andrea_model_moments_free(m, mm), andrea_model_moments_free(m, mv);
    andrea_model_free(ref);
    andrea_model_free(m);
    printf("padded head (%s, V %d -> %d), %s against cpu (tolerance %g): %s\n", what, cfg->vocab,
           Vp, be->name, REL, tu_failures == before ? "OK" : "FAIL");
}

/* the three heads: untied (zero rows after lm_head), tied (wpe... after wte), and tied
 * with fewer parameters after wte than the extra rows (zeros past the end) */
static void padded_heads(const andrea_backend *be) {
    andrea_config c;
    CHECK(andrea_config_preset("tiny", &c) == 0);
    padded_vs_unpadded(be, &c, "untied");
    c.tied = 1, c.norm = ANDREA_NORM_LAYER, c.act = ANDREA_ACT_GELU, c.bias = 1; /* GPT-2's */
    padded_vs_unpadded(be, &c, "tied");
    c.norm = ANDREA_NORM_RMS, c.bias = 0;
    c.vocab = 65, c.d_model = 4, c.n_head = 1, c.n_layer = 1, c.ctx = T;
    padded_vs_unpadded(be, &c, "tied-short");
}

int main(void) {
    /* cpu-guarded pads only when asked (backend.h); cpu never does */
    setenv("ANDREA_VOCAB_MULTIPLE", "64", 1);
    test_padded_sizes();
    test_plans();
    padded_heads(&andrea_backend_cpu_guarded);
    for (int i = 0; i < andrea_backend_count(); i++) {
        const andrea_backend *be = andrea_backend_get(i);
        if (be != &andrea_backend_cpu_guarded && andrea_backend_vocab_multiple(be) > 1) padded_heads(be);
    }
    return tu_finish("test_vocab_pad");
}
