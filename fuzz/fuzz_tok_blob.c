/* fuzz_tok_blob.c - libFuzzer harness for the tokenizer blob (the .tok format, also the
 * TOKN section of a checkpoint): any bytes give a tokenizer that encodes and decodes, or a
 * one-line error; never a crash, a leak or an allocation the blob cannot justify. */
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *p = malloc(size ? size : 1); /* exactly size bytes: ASan sees a read past them */
    if (!p) return 0;
    memcpy(p, data, size);
    andrea_tokenizer *t = andrea_tokenizer_deserialize(p, size, "fuzz");
    if (t) fuzz_exercise_tokenizer(t);
    else fuzz_check_error();
    andrea_tokenizer_free(t);
    free(p);
    return 0;
}
