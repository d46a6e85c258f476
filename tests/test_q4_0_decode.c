/* test_q4_0_decode.c - a q4_0 GGUF decodes at its own precision: the blocks andrea writes
 * are ggml's layout (f16 d, then 16 bytes: element j's nibble low, element 16 + j's high,
 * checked against values worked out by hand from ggml's rule), the q4_0 product of every
 * ISA is the f32 product of the dequantised weights (bits on AVX2, AVX-512 and NEON) and
 * the double reference within rounding, a q4_0 file is recognised
 * as exact q4_0, and KV-cached decoding through the q4_0 path gives the logits and greedy
 * tokens of the same file's dequantised f32 weights. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_formats.h"
#include "andrea_tokenizer.h"
#include "formats/fmt.h"
#include "reference/reference.h"
#include "model/model.h"
#include "test_decode.h"
#include "test_util.h"

/* x[j] = j - 16: the extreme is x[0] = -16, so d = -16 / -8 = 2 (f16 0x4000), q[j] =
 * min(15, trunc((j - 16) / 2 + 8.5)) = min(15, trunc(j / 2 + 0.5)); byte j = q[j] | q[16 + j] << 4 */
static void layout(void) {
    float x[32], back[32];
    uint8_t blk[ANDREA_Q4_0_BYTES];
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16);
    andrea_q4_0_quantize(x, blk, 32);
    CHECK(blk[0] == 0x00 && blk[1] == 0x40);
    for (int j = 0; j < 16; j++) {
        int lo = (j + 1) / 2, hi = (16 + j + 1) / 2 > 15 ? 15 : (16 + j + 1) / 2;
        CHECK(blk[2 + j] == (uint8_t)(lo | hi << 4));
    }
    andrea_q4_0_dequantize(blk, back, 32);
    for (int j = 0; j < 32; j++) { /* (q - 8) d: within one step (2) of x, -16 exact */
        int q = j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4;
        CHECK(back[j] == 2.0f * (float)(q - 8) && fabsf(back[j] - x[j]) <= 2.0f);
    }
    CHECK(back[0] == -16.0f);
    /* the kernels' quantizer gives the same nibbles and d, and requantizes its values */
    uint8_t qs[16], qs2[16];
    CHECK(andrea_q4_0_block(x, qs) == 2.0f && memcmp(qs, blk + 2, 16) == 0);
    CHECK(andrea_q4_0_block(back, qs2) == 2.0f && memcmp(qs2, qs, 16) == 0);
    /* a NaN or Inf is no block (and never reaches the int cast: UBSan) */
    x[5] = NAN;
    CHECK(isnan(andrea_q4_0_block(x, qs)));
    x[5] = INFINITY;
    CHECK(isnan(andrea_q4_0_block(x, qs)));
}

/* K = 96: one 64-wide block of 4 AVX-512 vectors, then a 32 tail; N rows, n inputs */
enum { K = 96, N = 7, NIN = 3 };

/* Every ISA's q4_0 product is the f32 product of the dequantised weights at that ISA (to
 * the bit on the vector ISAs, which sum in the f32 dot's order) and the plain double
 * reference within float rounding. */
static void kernel_exact(void) {
    float w[N * K], x[NIN * K], deq[N * K], scale[N * K / 32], want[NIN * N], got[NIN * N];
    float ref[NIN * N];
    uint8_t q[N * K / 2];
    for (int i = 0; i < N * K; i++) w[i] = sinf(0.37f * (float)i) * (1.0f + (float)(i % 5));
    for (int i = 0; i < NIN * K; i++) x[i] = cosf(0.11f * (float)i);
    andrea_quantize_rows(q, scale, w, ANDREA_QUANT_Q4_0, N, K);
    andrea_gather_rows(deq, q, ANDREA_QUANT_Q4_0, scale, NULL, N, K);
    for (int b = 0; b < N * K / 32; b++) { /* within one step of each block's max / 8 */
        double amax = tu_max_abs(w + 32 * b, 32);
        CHECK(tu_check_array("q4_0 rounding", deq + 32 * b, w + 32 * b, 32, 1.002 / 8 * amax, 0));
    }
    andrea_ref_matvec_rows(ref, x, q, ANDREA_QUANT_Q4_0, scale, NULL, K, N, NIN);
    int isas[] = {ANDREA_ISA_BASELINE, ANDREA_ISA_AVX2, ANDREA_ISA_AVX512};
    for (int i = 0; i < 3; i++) {
        andrea_matvec_rows_isa(isas[i], want, x, deq, ANDREA_QUANT_NONE, NULL, NULL, K, N, NIN);
        andrea_matvec_rows_isa(isas[i], got, x, q, ANDREA_QUANT_Q4_0, scale, NULL, K, N, NIN);
        char what[64];
        snprintf(what, sizeof what, "q4_0 %s vs double reference", andrea_isa_name(andrea_cpu_isa(isas[i])));
        CHECK(tu_check_array(what, got, ref, NIN * N, 1e-5, 1e-5));
        if (andrea_cpu_isa(isas[i]) == ANDREA_ISA_BASELINE) /* capped by ANDREA_ISA too */
            CHECK(tu_check_array("q4_0 baseline vs f32", got, want, NIN * N, 1e-5, 1e-6));
        else
            CHECK(memcmp(want, got, sizeof got) == 0);
    }
}

static void gguf_native(const char *dir) {
    andrea_config c = td_gpt2_tiny();
    andrea_model *m = andrea_model_create(&c, 5);
    andrea_tokenizer *tok = andrea_tokenizer_byte(), *bt = NULL;
    CHECK(andrea_gguf_save(tu_path(dir, "q4.gguf"), m, tok, ANDREA_DTYPE_Q4_0) == 0);
    CHECK(andrea_gguf_save(tu_path(dir, "q8.gguf"), m, tok, ANDREA_DTYPE_Q8_0) == 0);
    andrea_model *q8 = andrea_gguf_load(tu_path(dir, "q8.gguf"), NULL);
    CHECK(q8 && andrea_model_native_quant(q8) == ANDREA_QUANT_Q8_0);
    andrea_model *q = andrea_gguf_load(tu_path(dir, "q4.gguf"), &bt);
    CHECK(q && andrea_model_native_quant(q) == ANDREA_QUANT_Q4_0);
    if (q) {
        /* the file holds exactly what --quant q4_0 makes of the original weights */
        CHECK(andrea_model_fake_quantize(m, ANDREA_QUANT_Q4_0) == 0);
        CHECK(memcmp(m->params, q->params, sizeof(float) * (size_t)m->layout.total) == 0);
        td_same_as_f32(q, ANDREA_QUANT_Q4_0, "q4_0 path vs dequantised f32");
    }
    andrea_model_free(q);
    andrea_model_free(q8);
    andrea_tokenizer_free(bt);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
}

int main(void) {
    char dir[1024];
    if (td_scratch_dir("test_q4_0_decode", dir, sizeof dir)) return 1;
    layout();
    kernel_exact();
    gguf_native(dir);
    int k;
    CHECK(andrea_dtype_parse("q4_0", &k) == 0 && k == ANDREA_DTYPE_Q4_0);
    CHECK(strcmp(andrea_dtype_name(ANDREA_DTYPE_Q4_0), "q4_0") == 0);
    return tu_finish("test_q4_0_decode");
}
