/* fuzz_corpus.c - libFuzzer harness for training text (andrea_corpus_load, as --data and
 * eval -d read it): any bytes, with the byte tokenizer or a char tokenizer trained on
 * them, give token ids inside the vocabulary or a one-line error. */
#include "fuzz_file.h" /* first: it defines _GNU_SOURCE */
#include "train/data/corpus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    for (int pass = 0; pass < 2; pass++) {
        andrea_tokenizer *tok = NULL;
        int32_t *ids = NULL;
        int64_t n = 0;
        uint64_t sum = 0;
        if (andrea_corpus_load(path, pass ? "char" : NULL, &tok, &ids, &n, &sum)) {
            fuzz_check_error();
            continue;
        }
        int32_t V = andrea_tokenizer_vocab_size(tok);
        for (int64_t i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= V) abort();
        free(ids);
        andrea_tokenizer_free(tok);
    }
    return 0;
}
