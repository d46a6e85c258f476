/*
 * run_setup.c - everything a run needs before its first step: the effective options,
 * the tokenizer, the batch source, the model and its AdamW moments, either fresh or
 * restored exactly from a checkpoint (with the tokenizer and data the run started with).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parallel/dist_train.h"
#include "model/model.h"
#include "train/curriculum/manifest.h"
#include "train/run_options.h"
#include "train/train_run.h"
#include "util/bigalloc.h"
#include "util/error.h"

/* Loads the checkpoint to resume: model, moments, state, tokenizer. */
static int load_resume(andrea_train_run *r) {
    const char *path = r->o.resume_path;
    void *blob = NULL;
    uint64_t blen = 0;
    r->m = andrea_checkpoint_load(path, &r->adam_m, &r->adam_v, r->st, &blob, &blen);
    if (!r->m) return -1;
    r->tok = andrea_checkpoint_tokenizer(path, r->st, blob, blen);
    free(blob);
    if (!r->tok) return -1;
    if (!r->adam_m)
        return andrea_set_error("checkpoint '%s' holds weights only (no AdamW state); resume "
                                "from a full checkpoint such as ckpt.bin", path);
    if (memcmp(&r->m->cfg, &r->cfg, sizeof r->cfg) != 0)
        return andrea_set_error("the model flags given conflict with checkpoint '%s'; drop them "
                                "when resuming", path);
    return andrea_model_move(r->m, r->o.backend, &r->adam_m, &r->adam_v);
}

/* The options as the run uses them: seq resolved, the data path from a resume. */
static int effective_options(andrea_train_run *r) {
    andrea_train_options *o = &r->o;
    if (o->manifest_path) o->data_path = o->manifest_path; /* recorded as the data */
    if (o->seq == 0) o->seq = r->cfg.ctx < 64 ? r->cfg.ctx : 64;
    if (!o->data_path && o->resume_path) {
        if (!r->st->data_path[0]) {
            andrea_set_error("checkpoint '%s' (format version %u) does not record its training "
                             "data: give it with --data", o->resume_path, r->st->version);
            return ANDREA_TRAIN_BAD_OPTIONS;
        }
        o->data_path = r->st->data_path;
    }
    int rc = andrea_train_options_validate(&r->cfg, o);
    if (rc && o->resume_path) { /* the value may be the checkpoint's, not a flag's */
        andrea_set_error("resuming '%s' (its saved options, with the flags given): %s",
                         o->resume_path, andrea_error());
    }
    return rc;
}

static int fresh_model(andrea_train_run *r) {
    r->m = andrea_model_create_on(&r->cfg, r->o.seed, r->o.backend);
    if (!r->m) return -1;
    r->adam_m = andrea_model_moments_alloc(r->m);
    r->adam_v = andrea_model_moments_alloc(r->m);
    if (!r->adam_m || !r->adam_v) return andrea_set_error("out of memory allocating AdamW state");
    r->st->best_val_loss = INFINITY;
    r->st->smooth_loss = NAN;
    r->st->step = 0;
    return 0;
}

int andrea_run_setup(andrea_train_run *r, const andrea_config *cfg, const andrea_train_options *o) {
    memset(r, 0, sizeof *r);
    r->lock_fd = -1;
    r->o = *o;
    r->cfg = *cfg;
    r->preset_vocab = cfg->vocab;
    r->st = calloc(1, sizeof *r->st);
    if (!r->st) return andrea_set_error("out of memory");
    if (andrea_config_validate(&r->cfg)) return ANDREA_TRAIN_BAD_OPTIONS;
    int rc = andrea_dist_run_open(r); /* the ranks, under mpirun */
    if (rc) return rc;
    /* a checkpoint that cannot be read is a failure, not a usage error */
    if (r->o.resume_path && load_resume(r)) return -1;
    if ((rc = andrea_dist_run_batch(r)) || (rc = effective_options(r))) return rc;
    if (r->o.manifest_path || andrea_manifest_detect(r->o.data_path))
        r->src = andrea_sources_open(r->o.data_path, r->o.tokenizer, &r->tok, r->o.val_fraction,
                                     r->o.seq, r->o.seed);
    else
        r->src = andrea_corpus_source_open(r->o.data_path, r->o.tokenizer, &r->tok,
                                           r->o.val_fraction, r->o.seq, r->o.seed);
    if (r->src) r->src = andrea_dist_source(r->src, r->dist->rank, r->dist->size);
    if (!r->src) return -1;
    if (r->o.resume_path) {
        char from[600];
        snprintf(from, sizeof from, "checkpoint '%s'", r->o.resume_path);
        if (r->src->restore(r->src, r->st->batch_pos, r->st->batch_pos_len, from)) return -1;
    } else {
        int32_t v = andrea_tokenizer_vocab_size(r->tok);
        r->cfg.vocab = v; /* the tokenizer decides the vocabulary */
        if (fresh_model(r)) return -1;
    }
    if (andrea_dist_run_moments(r) || andrea_dist_run_isa(r) || andrea_dist_run_plan(r) ||
        andrea_dist_check_weights(r, (int)r->st->step, 1))
        return -1;
    if (andrea_tokenizer_serialize(r->tok, &r->tok_blob)) return -1;
    /* what every checkpoint records besides the tensors */
    r->st->tokenizer_kind = (uint32_t)andrea_tokenizer_kind(r->tok);
    r->st->tokenizer_checksum = andrea_tokenizer_checksum(r->tok);
    andrea_train_options_to_state(&r->o, r->st);
    andrea_dist_run_record_batch(r);
    /* recorded absolute, so a resume from another directory finds the data */
    char *abs = realpath(r->o.data_path, NULL);
    if (abs && strlen(abs) < sizeof r->st->data_path) strcpy(r->st->data_path, abs);
    free(abs);
    size_t bt = (size_t)r->o.batch * r->o.seq;
    /* the batch, then the probe: one (x, y) row of T tokens (see andrea_run_save) */
    r->x = malloc(sizeof(int32_t) * (bt * 2 + 2 * (size_t)r->o.seq));
    if (!r->x) return andrea_set_error("out of memory");
    r->y = r->x + bt;
    r->probe_x = r->y + bt;
    r->probe_y = r->probe_x + r->o.seq;
    if (andrea_step_prepare(r)) return -1;
    rc = andrea_run_open_files(r);
    if (rc) return rc;
    return andrea_run_gate_open(r);
}

void andrea_run_start_report(andrea_train_run *r, andrea_train_start *s, char *data, size_t n) {
    r->src->describe(r->src, data, n);
    memset(s, 0, sizeof *s);
    s->cfg = &r->cfg;
    s->n_params = andrea_step_num_params(r);
    s->preset_vocab = r->o.resume_path ? r->cfg.vocab : r->preset_vocab;
    s->data = data;
    r->src->sizes(r->src, &s->n_train, &s->n_val);
    s->tokenizer = andrea_tokenizer_kind_name(andrea_tokenizer_kind(r->tok));
    s->opts = &r->o;
    s->start_step = r->st->step;
    s->ranks = r->dist_ranks[0] ? r->dist_ranks : NULL;
}

void andrea_run_free(andrea_train_run *r) {
    andrea_kv_free(r->kv);
    andrea_gate_free(r->gate);
    andrea_jsonl_close(&r->log);
    if (r->lock_fd >= 0) close(r->lock_fd); /* releases the folder's lock */
    free(r->x);
    free(r->dist_stage);
    free(r->ckpt_path);
    free(r->best_path);
    if (r->m) {
        andrea_model_moments_free(r->m, r->adam_m);
        andrea_model_moments_free(r->m, r->adam_v);
    }
    andrea_model_free(r->m);
    if (r->src) r->src->free(r->src);
    andrea_bytes_free(&r->tok_blob);
    andrea_tokenizer_free(r->tok);
    free(r->st);
    andrea_zero_free(&r->zero);
    andrea_dist_close(r->dist);
    memset(r, 0, sizeof *r);
}
