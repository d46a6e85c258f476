/* fuzz_gguf.c - libFuzzer harness for the gguf reader: any bytes must give a model or a
 * one-line error, and a model its own weight format (q8_0, q4_0: the file's blocks
 * requantized), never a crash, a leak or an out-of-bounds read (ASan + UBSan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* a copy of exactly size bytes, so ASan catches a read one past the end */
    uint8_t *p = malloc(size ? size : 1);
    if (!p) return 0;
    memcpy(p, data, size);
    andrea_tokenizer *tok = NULL;
    andrea_model *m = andrea_gguf_parse(p, size, "fuzz", &tok);
    andrea_tokenizer_free(tok);
    /* the decoding path's weights: a q8_0 or q4_0 file's blocks requantized on load */
    if (m && andrea_model_quantize(m, ANDREA_QUANT_AUTO) != 0 && !andrea_error()[0]) abort();
    if (m) andrea_model_free(m);
    else if (!andrea_error()[0] || strchr(andrea_error(), '\n')) abort();
    free(p);
    return 0;
}
