/* test_ckpt.h - a checkpoint the CLI can load, for the tests that drive `andrea` as a
 * subprocess: a freshly initialised model with the byte tokenizer. */
#ifndef ANDREA_TEST_CKPT_H
#define ANDREA_TEST_CKPT_H

#include <string.h>

#include "andrea.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint.h"

/* Creates the model of cfg (seed), saves it to path; the model is the caller's (NULL when
 * creating or saving failed, which also fails the test). */
static inline andrea_model *tu_random_checkpoint(const char *path, const andrea_config *cfg,
                                                 uint64_t seed) {
    andrea_model *m = andrea_model_create(cfg, seed);
    andrea_ckpt_state st;
    memset(&st, 0, sizeof st);
    st.tokenizer_kind = ANDREA_TOK_BYTE;
    int ok = m && andrea_checkpoint_save(path, m, NULL, NULL, &st, NULL, 0) == 0;
    CHECK(ok);
    if (!ok) {
        andrea_model_free(m);
        return NULL;
    }
    return m;
}

#endif
