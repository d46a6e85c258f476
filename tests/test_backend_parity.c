/*
 * test_backend_parity.c - one model on every backend against the same model on cpu:
 * initialisation, forward (loss and logits), backward (every gradient), one AdamW step,
 * a KV step, a prefill, a batched decode, a quantised (int8) decode, a checkpoint
 * save/load round trip and a safetensors export. The tensors are read back through the
 * backend (download), never dereferenced, so the test runs on backends whose memory is
 * not the host's (cpu-guarded).
 *
 * Tolerances, per quantity, relative to the scale of the tensor (tu_check_rel):
 *  - cpu-guarded runs cpu's kernels: 0, every bit equal;
 *  - the fp32 variants differ from cpu only in the order of the sums inside the products
 *    (ISA tiles, BLAS): a few float epsilons per term of K ~ 4C-long sums, 1e-4 of the
 *    scale leaves room for the 2 layers and the backward's extra product;
 *  - cpu-bf16 rounds the products' operands to 8 significant bits: 2^-8 relative per
 *    term with random signs, about 2^-8 sqrt(K) / sqrt(K) of the scale; 2e-2 leaves the
 *    same room through two layers.
 * The initialisation, the checkpoint round trip and the export are exact on every backend.
 */
#include <string.h>

#include "andrea_formats.h"
#include "backend/backend.h"
#include "model/model.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"

static double tol(be_t be) {
    if (be == &andrea_backend_cpu_guarded) return 0.0;
    return andrea_backend_precision(be) == ANDREA_PRECISION_BF16 ? 2e-2 : 1e-4;
}

/* n floats of backend memory x as a fresh host array */
static float *host(const andrea_model *m, const float *x, size_t n) {
    float *h = tu_falloc(n);
    m->be->ops.download(m->be, h, x, sizeof(float) * n);
    return h;
}


static void same_tensor(const char *what, const andrea_model *a, const float *xa,
                        const andrea_model *b, const float *xb, size_t n, double rel) {
    float *ha = host(a, xa, n), *hb = host(b, xb, n);
    tu_same(what, hb, ha, n, rel);
    free(ha);
    free(hb);
}

static void decode(const andrea_model *ref, andrea_model *m, double rel) {
    const andrea_config *c = andrea_model_config(m);
    size_t V = (size_t)c->vocab;
    int32_t prompt[5] = {3, 70, 120, 9, 200};
    andrea_kv *kr = andrea_kv_create(ref), *km = andrea_kv_create(m);
    andrea_context *cr = andrea_model_context((andrea_model *)ref);
    tu_same("prefill logits", andrea_kv_prefill_ctx(m, andrea_model_context(m), km, prompt, 5),
         andrea_kv_prefill_ctx(ref, cr, kr, prompt, 5), V, rel);
    float want[257];
    memcpy(want, andrea_kv_step(ref, kr, 44), sizeof(float) * V);
    tu_same("KV step logits", andrea_kv_step(m, km, 44), want, V, rel);
    /* a batch of two: km continues, a fresh cache starts */
    andrea_kv *k2r = andrea_kv_create(ref), *k2m = andrea_kv_create(m);
    andrea_kv_batch *br = andrea_kv_batch_create(ref, 2), *bm = andrea_kv_batch_create(m, 2);
    andrea_kv *sr[2] = {kr, k2r}, *sm[2] = {km, k2m};
    int32_t tok[2] = {5, 6};
    float wantb[2 * 257];
    memcpy(wantb, andrea_kv_batch_step(ref, br, sr, tok, 2), sizeof(float) * 2 * V);
    tu_same("batched decode logits", andrea_kv_batch_step(m, bm, sm, tok, 2), wantb, 2 * V, rel);
    tu_same("batched decode: a cache's logits", andrea_kv_logits(k2m), wantb + V, V, rel);
    andrea_kv_batch_free(br), andrea_kv_batch_free(bm);
    andrea_kv_free(kr), andrea_kv_free(km), andrea_kv_free(k2r), andrea_kv_free(k2m);
}

static void parity(be_t be) {
    double rel = tol(be);
    int before = tu_failures;
    andrea_config cfg;
    CHECK(andrea_config_preset("tiny", &cfg) == 0);
    andrea_model *ref = andrea_model_create_on(&cfg, 11, "cpu");
    andrea_model *m = andrea_model_create_on(&cfg, 11, be->name);
    CHECK(ref && m && andrea_model_backend(m) == be);
    if (!ref || !m) return;
    size_t n = (size_t)andrea_model_num_params(m);
    same_tensor("init", ref, ref->params, m, m->params, n, 0.0);

    enum { B = 2, T = 9 };
    int32_t x[B * T], y[B * T];
    for (int i = 0; i < B * T; i++) x[i] = (i * 37) % cfg.vocab, y[i] = (i * 53 + 1) % cfg.vocab;
    andrea_model_forward(ref, x, NULL, B, T);
    andrea_model_forward(m, x, NULL, B, T);
    size_t nl = (size_t)B * T * cfg.vocab;
    tu_same("logits", andrea_model_logits(m), andrea_model_logits(ref), nl, rel);
    float lr = andrea_model_forward(ref, x, y, B, T), lm = andrea_model_forward(m, x, y, B, T);
    CHECK_CLOSE(lm, lr, 0, rel + 1e-7);
    andrea_model_zero_grad(ref), andrea_model_zero_grad(m);
    CHECK(andrea_model_backward(ref) == 0 && andrea_model_backward(m) == 0);
    same_tensor("gradients", ref, ref->grads, m, m->grads, n, rel);
    float *mr = andrea_model_moments_alloc(ref), *vr = andrea_model_moments_alloc(ref);
    float *mm = andrea_model_moments_alloc(m), *vm = andrea_model_moments_alloc(m);
    andrea_model_adamw_step(ref, mr, vr, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, 1.0f);
    andrea_model_adamw_step(m, mm, vm, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, 1.0f);
    same_tensor("AdamW step", ref, ref->params, m, m->params, n, rel);
    same_tensor("AdamW v", ref, vr, m, vm, n, rel);

    decode(ref, m, rel);
    CHECK(andrea_model_quantize(ref, ANDREA_QUANT_INT8) == 0);
    CHECK(andrea_model_quantize(m, ANDREA_QUANT_INT8) == 0);
    decode(ref, m, rel == 0.0 ? 0.0 : 10 * rel); /* int8 rounding may flip with the weights */

    /* checkpoint and export round trips from m: exact */
    char dir[1024];
    CHECK(tu_tmp_dir(dir, sizeof dir) == 0);
    andrea_ckpt_state st;
    memset(&st, 0, sizeof st);
    const char *ck = tu_path(dir, "parity.bin"), *stp = tu_path(dir, "parity.safetensors");
    CHECK(andrea_checkpoint_save(ck, m, mm, vm, &st, "tok", 3) == 0);
    float *lm2 = NULL, *lv2 = NULL;
    andrea_model *back = andrea_checkpoint_load(ck, &lm2, &lv2, NULL, NULL, NULL);
    CHECK(back && lm2 && lv2);
    if (back) {
        same_tensor("checkpoint round trip", m, m->params, back, back->params, n, 0.0);
        same_tensor("checkpoint round trip, v", m, vm, back, lv2, n, 0.0);
        andrea_model_moments_free(back, lm2), andrea_model_moments_free(back, lv2);
        andrea_model_free(back);
    }
    CHECK(andrea_safetensors_save(stp, m, NULL, 0) == 0);
    andrea_model *st_back = andrea_safetensors_load(stp, NULL);
    CHECK(st_back != NULL);
    if (st_back) same_tensor("safetensors round trip", m, m->params, st_back, st_back->params, n, 0.0);
    andrea_model_free(st_back);

    /* moving a model: cpu -> be -> cpu keeps every bit */
    CHECK(andrea_model_set_backend(ref, be->name) == 0 && andrea_model_set_backend(ref, "cpu") == 0);
    andrea_model_moments_free(ref, mr), andrea_model_moments_free(ref, vr);
    andrea_model_moments_free(m, mm), andrea_model_moments_free(m, vm);
    andrea_model_free(ref);
    andrea_model_free(m);
    printf("%-13s parity with cpu (tolerance %g of each tensor's scale): %s\n", be->name, rel,
           tu_failures == before ? "OK" : "FAIL");
}

int main(void) {
    for (int i = 0; i < andrea_backend_count(); i++)
        if (andrea_backend_get(i) != &andrea_backend_cpu) parity(andrea_backend_get(i));
    return tu_finish("test_backend_parity");
}
