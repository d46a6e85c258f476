/* fuzz_harris_json.c - libFuzzer harness for harris_segments.json (andrea_tokenizer_harris_
 * import): any bytes give a tokenizer that works or a one-line error. */
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    andrea_tokenizer *t = andrea_tokenizer_harris_import(fuzz_file(data, size));
    if (t) fuzz_exercise_tokenizer(t);
    else fuzz_check_error();
    andrea_tokenizer_free(t);
    return 0;
}
