/* make_corpus.c - writes the fuzzers' seed files: micro models (L 1, C 8 or 32 for
 * q8_0's blocks, T 4, byte tokenizer) in every format and tensor type, so the fuzzers
 * start from inputs that parse all the way through. usage: make_corpus DIR */
#include <stdio.h>

#include "andrea.h"
#include "andrea_formats.h"
#include "andrea_tokenizer.h"

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    andrea_config c = {1, 1, 8, 4, ANDREA_BYTE_VOCAB, ANDREA_NORM_LAYER, ANDREA_ACT_GELU, 1, 1, 1e-5f, 0.02f};
    andrea_config q = {1, 1, 32, 2, ANDREA_BYTE_VOCAB, ANDREA_NORM_LAYER, ANDREA_ACT_GELU, 0, 0, 1e-5f, 0.02f};
    andrea_config a = {1, 1, 8, 4, ANDREA_BYTE_VOCAB, ANDREA_NORM_RMS, ANDREA_ACT_RELU2, 0, 0, 1e-5f, 0.02f};
    andrea_model *m = andrea_model_create(&c, 1), *ma = andrea_model_create(&a, 1);
    andrea_model *mq = andrea_model_create(&q, 1);
    andrea_tokenizer *tok = andrea_tokenizer_byte();
    char p[1024];
    int rc = 0;
#define OUT(name) (snprintf(p, sizeof p, "%s/%s", argv[1], name), p)
    rc |= andrea_safetensors_save(OUT("safetensors/hf.safetensors"), m, NULL, ANDREA_NAMES_HF);
    rc |= andrea_safetensors_save(OUT("safetensors/andrea.safetensors"), ma, NULL, ANDREA_NAMES_ANDREA);
    rc |= andrea_gguf_save(OUT("gguf/f32.gguf"), m, tok, ANDREA_DTYPE_F32);
    rc |= andrea_gguf_save(OUT("gguf/f16.gguf"), m, tok, ANDREA_DTYPE_F16);
    rc |= andrea_gguf_save(OUT("gguf/q8_0.gguf"), mq, tok, ANDREA_DTYPE_Q8_0);
    rc |= andrea_llmc_save(OUT("llmc/gpt2.bin"), m);
    if (rc) fprintf(stderr, "make_corpus: %s\n", andrea_error());
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    andrea_model_free(ma);
    andrea_model_free(mq);
    return rc ? 1 : 0;
}
