/* fuzz_token_file.c - libFuzzer harness for token files (`andrea prepare`'s output): any
 * bytes open with every id inside the vocabulary, or give a one-line error. */
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    andrea_token_file *f = andrea_token_file_open(fuzz_file(data, size), 1);
    if (!f) {
        fuzz_check_error();
        return 0;
    }
    int32_t V = andrea_token_file_vocab(f), bos = andrea_token_file_bos(f);
    if (V < 2 || bos < 0 || bos >= V) abort(); /* what the API promises */
    uint64_t n = andrea_token_file_count(f);
    int32_t ids[256];
    size_t k = n < 256 ? (size_t)n : 256;
    if (andrea_token_file_read(f, n - k, k, ids)) abort();
    for (size_t i = 0; i < k; i++)
        if (ids[i] < 0 || ids[i] >= V) abort();
    if (andrea_token_file_read(f, n, 1, ids) == 0) abort(); /* past the end */
    andrea_token_file_close(f);
    return 0;
}
