/* fuzz_tok_file.c - libFuzzer harness for a tokenizer file by path (util/file.c, then the
 * blob reader), as `-t FILE` and `andrea tokenizer info FILE` load it. */
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    andrea_tokenizer *t = andrea_tokenizer_load(fuzz_file(data, size));
    if (t) fuzz_exercise_tokenizer(t);
    else fuzz_check_error();
    andrea_tokenizer_free(t);
    return 0;
}
