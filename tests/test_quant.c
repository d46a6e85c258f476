/* test_quant.c - weight-only bf16/int8/q8_0/q4_0 decoding computes what the rounded weights say:
 * KV-cached logits with quantised matvecs equal a full forward over fake-quantised
 * fp32 weights; rounding errors are within each format's bound. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "model/model.h"
#include "test_util.h"

static void check_kind(int kind, double max_rel_weight_err) {
    andrea_config c;
    andrea_config_preset("tiny", &c);
    c.vocab = 60;
    andrea_model *ref = andrea_model_create(&c, 9), *q = andrea_model_create(&c, 9);
    int64_t n = andrea_model_num_params(ref);
    CHECK(andrea_model_fake_quantize(ref, kind) == 0);
    /* the rounding itself: bf16 keeps 8 mantissa bits (rel err <= 2^-9); int8 <= half a step */
    double worst = 0;
    for (int i = 0; i < andrea_model_num_tensors(q); i++) {
        const andrea_tensor_info *t = andrea_model_tensor(q, i);
        if (!t->cols) {
            CHECK(memcmp(ref->params + t->offset, q->params + t->offset, 4 * t->size) == 0);
            continue;
        }
        for (int r = 0; r < t->rows; r++) {
            float amax = 0;
            for (int k = 0; k < t->cols; k++) amax = fmaxf(amax, fabsf(q->params[t->offset + (int64_t)r * t->cols + k]));
            for (int k = 0; k < t->cols; k++) {
                int64_t j = t->offset + (int64_t)r * t->cols + k;
                double e = fabs(ref->params[j] - q->params[j]) /
                           (kind == ANDREA_QUANT_BF16 ? fabs(q->params[j]) + 1e-30 : amax);
                if (e > worst) worst = e;
            }
        }
    }
    CHECK(worst <= max_rel_weight_err);
    CHECK(andrea_model_quantize(q, kind) == 0);
    int32_t toks[20];
    for (int i = 0; i < 20; i++) toks[i] = (i * 11 + 5) % 60;
    andrea_model_forward(ref, toks, NULL, 1, 20);
    andrea_kv *kv = andrea_kv_create(q);
    for (int t = 0; t < 20; t++) {
        const float *lg = andrea_kv_step(q, kv, toks[t]);
        /* same rounded weights, different summation order: float noise only */
        if (lg) tu_check_array("quantised kv logits", lg, andrea_model_logits(ref) + t * 60, 60, 1e-5, 1e-4);
    }
    andrea_kv_free(kv);
    (void)n;
    andrea_model_free(ref);
    andrea_model_free(q);
}

int main(void) {
    check_kind(ANDREA_QUANT_BF16, 1.0 / 256); /* round to nearest: 2^-9 relative, with margin */
    check_kind(ANDREA_QUANT_INT8, 0.5 / 127 + 1e-6);
    /* q8_0: half a step of a block's max / 127 plus the f16 rounding of that scale
     * (127 steps x 2^-11), relative to the row's max (>= the block's) */
    check_kind(ANDREA_QUANT_Q8_0, 0.57 / 127);
    /* q4_0: steps of max|block| / 8, half a step off, but the extreme opposite in sign to
     * the block's largest value clamps at q = 15, a whole step (ggml's rule); plus f16 */
    check_kind(ANDREA_QUANT_Q4_0, 1.0 / 8 + 1e-3);
    int k;
    CHECK(andrea_quant_parse("bf16", &k) == 0 && k == ANDREA_QUANT_BF16);
    CHECK(andrea_quant_parse("int4", &k) != 0);
    return tu_finish("test_quant");
}
