/* test_q8_0_decode.c - a q8_0 GGUF decodes at its own precision: the q8_0 matvec (int8
 * with ggml's per-32 f16 scales) is the fp32 product with the dequantised weights to the
 * bit at every ISA; a q8_0 file written by andrea is recognised as exact q8_0 (an f16 one
 * as f16), and KV-cached decoding through the q8_0 path gives the logits and the greedy
 * tokens of the same file's dequantised f32 weights. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_formats.h"
#include "andrea_tokenizer.h"
#include "backend/cpu/kernels/kernels.h"
#include "model/model.h"
#include "test_decode.h"
#include "test_util.h"

/* K = 96: one 64-wide block of 4 AVX-512 vectors, then a 32 tail; N rows, n inputs */
enum { K = 96, N = 7, NIN = 3 };

static void kernel_exact(void) {
    float w[N * K], x[NIN * K], deq[N * K], scale[N * K / 32], want[NIN * N], got[NIN * N];
    int8_t q[N * K];
    for (int i = 0; i < N * K; i++) w[i] = sinf(0.37f * (float)i) * (1.0f + (float)(i % 5));
    for (int i = 0; i < NIN * K; i++) x[i] = cosf(0.11f * (float)i);
    andrea_quantize_rows(q, scale, w, ANDREA_QUANT_Q8_0, N, K);
    andrea_gather_rows(deq, q, ANDREA_QUANT_Q8_0, scale, NULL, N, K);
    /* within q8_0's rounding of each block: half a step plus the f16 rounding of d */
    for (int b = 0; b < N * K / 32; b++) {
        double amax = tu_max_abs(w + 32 * b, 32);
        CHECK(tu_check_array("q8_0 rounding", deq + 32 * b, w + 32 * b, 32, 0.57 / 127 * amax, 0));
    }
    /* requantizing the dequantised values gives them back: the file's blocks survive */
    int8_t q2[N * K];
    float scale2[N * K / 32], deq2[N * K];
    andrea_quantize_rows(q2, scale2, deq, ANDREA_QUANT_Q8_0, N, K);
    andrea_gather_rows(deq2, q2, ANDREA_QUANT_Q8_0, scale2, NULL, N, K);
    CHECK(memcmp(deq, deq2, sizeof deq) == 0);
    int isas[] = {ANDREA_ISA_BASELINE, ANDREA_ISA_AVX2, ANDREA_ISA_AVX512};
    for (int i = 0; i < 3; i++) {
        andrea_matvec_rows_isa(isas[i], want, x, deq, ANDREA_QUANT_NONE, NULL, NULL, K, N, NIN);
        andrea_matvec_rows_isa(isas[i], got, x, q, ANDREA_QUANT_Q8_0, scale, NULL, K, N, NIN);
        /* the vector ISAs run the f32 dot's own order: the same bits; the baseline is
         * one `omp simd` reduction each, which the compiler may order differently */
        if (andrea_cpu_isa(isas[i]) == ANDREA_ISA_BASELINE) /* capped by ANDREA_ISA too */
            CHECK(tu_check_array("q8_0 baseline", got, want, NIN * N, 1e-5, 1e-6));
        else
            CHECK(memcmp(want, got, sizeof got) == 0);
    }
}

static void gguf_native(const char *dir) {
    andrea_config c = td_gpt2_tiny();
    andrea_model *m = andrea_model_create(&c, 5);
    andrea_tokenizer *tok = andrea_tokenizer_byte(), *bt = NULL;
    CHECK(andrea_gguf_save(tu_path(dir, "q8.gguf"), m, tok, ANDREA_DTYPE_Q8_0) == 0);
    CHECK(andrea_gguf_save(tu_path(dir, "f16.gguf"), m, tok, ANDREA_DTYPE_F16) == 0);
    andrea_model *f16 = andrea_gguf_load(tu_path(dir, "f16.gguf"), NULL);
    CHECK(f16 && andrea_model_native_quant(f16) == ANDREA_QUANT_F16); /* its own path, not q8_0 */
    CHECK(andrea_model_native_quant(m) == ANDREA_QUANT_NONE);
    andrea_model *q = andrea_gguf_load(tu_path(dir, "q8.gguf"), &bt);
    CHECK(q && andrea_model_native_quant(q) == ANDREA_QUANT_Q8_0);
    if (q)
        td_same_as_f32(q, ANDREA_QUANT_Q8_0, "q8_0 path vs dequantised f32");
    andrea_model_free(q);
    andrea_model_free(f16);
    andrea_tokenizer_free(bt);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
}

int main(void) {
    char dir[1024];
    if (td_scratch_dir("test_q8_0_decode", dir, sizeof dir)) return 1;
    kernel_exact();
    gguf_native(dir);
    int k;
    CHECK(andrea_quant_parse("q8_0", &k) == 0 && k == ANDREA_QUANT_Q8_0);
    CHECK(andrea_quant_parse("auto", &k) != 0);
    CHECK(andrea_quant_parse_auto("auto", &k) == 0 && k == ANDREA_QUANT_AUTO);
    return tu_finish("test_q8_0_decode");
}
