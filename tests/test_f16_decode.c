/* test_f16_decode.c - an f16 GGUF decodes at its own precision: the f16 matvec (each
 * weight widened exactly, vcvtph2ps on x86, vcvt on NEON) is the fp32 product with the
 * file's f32 values to the bit at every vector ISA, for 1 to 5 inputs at once; f16's
 * rounding is round to nearest even within half an ulp; an f16 file is recognised as
 * f16 (an f32 one is not), and KV-cached decoding through the f16 path gives the logits
 * and the greedy tokens of the same weights in f32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_formats.h"
#include "andrea_tokenizer.h"
#include "backend/cpu/kernels/fastmath.h"
#include "backend/cpu/kernels/kernels.h"
#include "model/model.h"
#include "test_decode.h"
#include "test_util.h"

/* K = 101: a 64-wide block of AVX-512 vectors, a 32 one, then a scalar tail */
enum { K = 101, N = 7, NIN = 5 };

/* the branch-free widening the dots' simd loops use is the formats' one, bit for bit, on
 * all 65536 halves (subnormals, both zeros, Inf, every NaN payload) */
static void widening_all_halves(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = andrea_f16_to_f32((uint16_t)h), b = andrea_f16_to_f32_simd((uint16_t)h);
        if (memcmp(&a, &b, 4) != 0 && bad++ < 3) fprintf(stderr, "f16 0x%04x: %a vs %a\n", h, a, b);
    }
    CHECK(bad == 0);
}

static void kernel_exact(void) {
    float w[N * K], x[NIN * K], deq[N * K], want[NIN * N], got[NIN * N];
    uint16_t h[N * K], h2[N * K];
    for (int i = 0; i < N * K; i++) w[i] = sinf(0.37f * (float)i) * (1.0f + (float)(i % 5));
    for (int i = 0; i < NIN * K; i++) x[i] = cosf(0.11f * (float)i);
    andrea_quantize_rows(h, NULL, w, ANDREA_QUANT_F16, N, K);
    andrea_gather_rows(deq, h, ANDREA_QUANT_F16, NULL, NULL, N, K);
    int rounding_ok = 1; /* |w| < 6: f16's ulp there is at most 2^-8, half of it 2^-9 */
    for (int i = 0; i < N * K; i++) rounding_ok &= fabsf(deq[i] - w[i]) <= ldexpf(fabsf(w[i]), -11);
    CHECK(rounding_ok);
    andrea_quantize_rows(h2, NULL, deq, ANDREA_QUANT_F16, N, K); /* a file's values survive */
    CHECK(memcmp(h, h2, sizeof h) == 0);
    int isas[] = {ANDREA_ISA_BASELINE, ANDREA_ISA_AVX2, ANDREA_ISA_AVX512};
    for (int i = 0; i < 3; i++)
        for (int n = 1; n <= NIN; n++) {
            andrea_matvec_rows_isa(isas[i], want, x, deq, ANDREA_QUANT_NONE, NULL, NULL, K, N, n);
            andrea_matvec_rows_isa(isas[i], got, x, h, ANDREA_QUANT_F16, NULL, NULL, K, N, n);
            if (andrea_cpu_isa(isas[i]) == ANDREA_ISA_BASELINE) /* omp simd: any order */
                CHECK(tu_check_array("f16 baseline", got, want, n * N, 1e-5, 1e-6));
            else if (memcmp(want, got, sizeof(float) * (size_t)(n * N)) != 0) {
                fprintf(stderr, "f16 at %s, %d inputs: not the f32 product's bits\n",
                        andrea_isa_name(andrea_cpu_isa(isas[i])), n);
                CHECK(0);
            }
        }
}

static void gguf_native(const char *dir) {
    andrea_config c = td_gpt2_tiny();
    andrea_model *m = andrea_model_create(&c, 5);
    andrea_tokenizer *tok = andrea_tokenizer_byte(), *bt = NULL;
    CHECK(andrea_gguf_save(tu_path(dir, "f16.gguf"), m, tok, ANDREA_DTYPE_F16) == 0);
    CHECK(andrea_gguf_save(tu_path(dir, "f32.gguf"), m, tok, ANDREA_DTYPE_F32) == 0);
    andrea_model *f32 = andrea_gguf_load(tu_path(dir, "f32.gguf"), NULL);
    CHECK(f32 && andrea_model_native_quant(f32) == ANDREA_QUANT_NONE);
    andrea_model *h = andrea_gguf_load(tu_path(dir, "f16.gguf"), &bt);
    CHECK(h && andrea_model_native_quant(h) == ANDREA_QUANT_F16);
    if (h) td_same_as_f32(h, ANDREA_QUANT_F16, "f16 path vs the file's f32 values");
    andrea_model_free(h);
    andrea_model_free(f32);
    andrea_tokenizer_free(bt);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
}

int main(void) {
    char dir[1024];
    if (td_scratch_dir("test_f16_decode", dir, sizeof dir)) return 1;
    widening_all_halves();
    kernel_exact();
    gguf_native(dir);
    int k;
    CHECK(andrea_quant_parse("f16", &k) == 0 && k == ANDREA_QUANT_F16);
    CHECK(strcmp(andrea_quant_name(ANDREA_QUANT_F16), "f16") == 0);
    return tu_finish("test_f16_decode");
}
