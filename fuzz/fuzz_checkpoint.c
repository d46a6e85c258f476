/* fuzz_checkpoint.c - libFuzzer harness for the checkpoint readers (versions 1 and 2, the
 * embedded tokenizer, the state a resume reads): any bytes give a model or a one-line
 * error, never a crash, a leak, an out-of-bounds read or NaN weights (ASan + UBSan). */
#include "fuzz_file.h" /* first: it defines _GNU_SOURCE */

#include <math.h>

#include "model/model.h"
#include "train/checkpoint/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    andrea_config cfg;
    static andrea_ckpt_state st;
    if (andrea_checkpoint_peek(path, &cfg, &st)) fuzz_check_error();
    float *m = NULL, *v = NULL;
    void *blob = NULL;
    uint64_t blen = 0;
    andrea_model *model = andrea_checkpoint_load(path, &m, &v, &st, &blob, &blen);
    if (!model) {
        fuzz_check_error();
        return 0;
    }
    int64_t n = andrea_config_param_counts(&model->cfg).total;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(model->params[i])) abort(); /* the NaN guard on load */
    andrea_tokenizer *tok = andrea_checkpoint_tokenizer(path, &st, blob, blen);
    if (!tok) fuzz_check_error();
    andrea_tokenizer_free(tok);
    andrea_model_free(model);
    free(m);
    free(v);
    free(blob);
    return 0;
}
