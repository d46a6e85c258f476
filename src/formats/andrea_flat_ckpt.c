/*
 * andrea_flat_ckpt.c - ANDREA's flat checkpoint (andrea_flat.c) to and from andrea's
 * training checkpoint, moments included, so a model grown by the original engine
 * resumes here (`andrea train --resume`) and goes back.
 *
 * The flat file records only the step: the imported checkpoint gets andrea's default
 * training options and, when a data file is named, that file's batch position at the
 * start of sampling (the original engine's data cursor is not in its file either).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "andrea_formats.h"
#include "train/data/batch_source.h"
#include "train/checkpoint/checkpoint.h"
#include "train/run_options.h"
#include "util/error.h"

static int fill_state(andrea_ckpt_state *st, const andrea_config *cfg, const char *tok_spec,
                      const char *data_path, const andrea_tokenizer *tok) {
    andrea_train_options o;
    andrea_train_options_default(&o);
    o.seq = cfg->ctx < 64 ? cfg->ctx : 64;
    andrea_train_options_to_state(&o, st);
    st->best_val_loss = INFINITY;
    st->smooth_loss = NAN;
    st->tokenizer_kind = (uint32_t)andrea_tokenizer_kind(tok);
    st->tokenizer_checksum = andrea_tokenizer_checksum(tok);
    if (!data_path) return 0;
    andrea_tokenizer *t2 = NULL;
    andrea_batch_source *src =
        andrea_corpus_source_open(data_path, tok_spec, &t2, o.val_fraction, o.seq, o.seed);
    if (!src) return -1;
    st->batch_pos_len = (uint32_t)src->save(src, st->batch_pos, ANDREA_CKPT_POS_MAX);
    src->free(src);
    andrea_tokenizer_free(t2);
    char *abs = realpath(data_path, NULL);
    if (abs && strlen(abs) < sizeof st->data_path) strcpy(st->data_path, abs);
    free(abs);
    return 0;
}

int andrea_flat_to_checkpoint(const char *flat, const char *out, const andrea_config *cfg,
                              const char *tok_spec, const char *data_path,
                              andrea_flat_info *info) {
    andrea_tokenizer *tok = andrea_tokenizer_open(tok_spec);
    if (!tok) return -1;
    if (andrea_tokenizer_vocab_size(tok) > cfg->vocab) {
        andrea_set_error("the tokenizer '%s' has %d tokens, the model only %d", tok_spec,
                         andrea_tokenizer_vocab_size(tok), cfg->vocab);
        andrea_tokenizer_free(tok);
        return -1;
    }
    float *mm = NULL, *vv = NULL;
    andrea_model *m = andrea_flat_load(flat, cfg, &mm, &vv, info);
    andrea_ckpt_state *st = calloc(1, sizeof *st);
    andrea_bytes blob = {0};
    int rc = -1;
    if (!m) goto done;
    if (!st) {
        andrea_set_error("out of memory");
        goto done;
    }
    if (fill_state(st, cfg, tok_spec, data_path, tok) || andrea_tokenizer_serialize(tok, &blob))
        goto done;
    st->step = info->step;
    rc = andrea_checkpoint_save(out, m, mm, vv, st, blob.data, blob.len);
done:
    andrea_bytes_free(&blob);
    free(st);
    if (m) andrea_model_moments_free(m, mm); /* in the model's backend memory */
    if (m) andrea_model_moments_free(m, vv);
    andrea_model_free(m);
    andrea_tokenizer_free(tok);
    return rc;
}

int andrea_checkpoint_to_flat(const char *ckpt, const char *out, andrea_flat_info *info) {
    float *mm = NULL, *vv = NULL;
    andrea_ckpt_state *st = calloc(1, sizeof *st);
    if (!st) return andrea_set_error("out of memory");
    andrea_model *m = andrea_checkpoint_load(ckpt, &mm, &vv, st, NULL, NULL);
    int rc = -1;
    if (m && st->step > INT32_MAX) andrea_set_error("step %lld does not fit the flat file's int32", (long long)st->step);
    else if (m) rc = andrea_flat_save(out, m, mm, vv, (int32_t)st->step, info);
    free(st);
    if (m) andrea_model_moments_free(m, mm); /* in the model's backend memory */
    if (m) andrea_model_moments_free(m, vv);
    andrea_model_free(m);
    return rc;
}
