/*
 * sources.c - the curriculum batch source ("sources"): a run manifest's sources, one of
 * them active at a time (curriculum.c chooses it), its training documents read in order
 * (shuffled per epoch), each source with its own held-out documents for validation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/data/batch_source.h"
#include "train/curriculum/curriculum.h"
#include "util/error.h"

static int next(andrea_batch_source *bs, int B, int T, int32_t *x, int32_t *y) {
    andrea_curriculum *c = bs->state;
    int32_t row[4097];
    if (T > 4096) return andrea_set_error("curriculum: T = %d, at most 4096", T);
    if (c->active < 0) andrea_cur_draw(c);
    for (int b = 0; b < B; b++) {
        andrea_cur_read_row(c, T, row);
        memcpy(x + (size_t)b * T, row, sizeof(int32_t) * (size_t)T);
        memcpy(y + (size_t)b * T, row + 1, sizeof(int32_t) * (size_t)T);
    }
    return 0;
}

static int observe(andrea_batch_source *bs, int step, float loss, FILE *log) {
    andrea_curriculum *c = bs->state;
    if (c->active < 0) return 0; /* no batch was drawn */
    if (log && c->log_start) andrea_cur_log_start(c, log);
    if (log && c->pivot) andrea_cur_log_pivot(c, log);
    if (log && c->log_draw) andrea_cur_log_draw(c, log); /* the draw this step trained under */
    c->log_start = c->pivot = c->log_draw = 0;
    if (log) andrea_cur_log_step(c, log, step, loss);
    andrea_cur_observe(c, loss);
    if (log && c->log_draw) {
        andrea_cur_log_draw(c, log);
        c->log_draw = 0;
    }
    if (log) fflush(log);
    return 0;
}

static size_t save(const andrea_batch_source *bs, uint8_t *out, size_t cap) {
    return andrea_cur_save(bs->state, out, cap);
}

static int restore(andrea_batch_source *bs, const uint8_t *pos, size_t n, const char *from) {
    return andrea_cur_restore(bs->state, pos, n, from);
}

static void describe(const andrea_batch_source *bs, char *buf, size_t n) {
    const andrea_curriculum *c = bs->state;
    long long docs = 0, toks = 0;
    for (int k = 0; k < c->man.n; k++) {
        docs += c->s[k].d.n_docs;
        toks += c->s[k].d.start[c->s[k].d.n_docs];
    }
    snprintf(buf, n, "manifest '%s': %d sources, %lld documents, %lld tokens, policy %s",
             c->man.path, c->man.n, docs, toks, andrea_policy_name(c->man.cur.policy));
}

static void sizes(const andrea_batch_source *bs, int64_t *n_train, int64_t *n_val) {
    const andrea_curriculum *c = bs->state;
    *n_train = *n_val = 0;
    for (int k = 0; k < c->man.n; k++) {
        *n_train += c->s[k].d.start[c->s[k].d.n_train];
        *n_val += c->s[k].d.n_val;
    }
}

static const int32_t *validation(const andrea_batch_source *bs, int64_t *n) {
    const andrea_curriculum *c = bs->state;
    *n = c->n_val_all;
    return c->n_val_all ? c->val_all : NULL;
}

static int parts(const andrea_batch_source *bs) { return ((const andrea_curriculum *)bs->state)->man.n; }

static const int32_t *part_validation(const andrea_batch_source *bs, int k, int64_t *n,
                                      const char **name) {
    const andrea_curriculum *c = bs->state;
    *name = c->man.src[k].name;
    *n = c->s[k].d.n_val;
    return *n ? c->s[k].d.val : NULL;
}

static void source_free(andrea_batch_source *bs) {
    if (!bs) return;
    andrea_curriculum *c = bs->state;
    for (int k = 0; c && c->s && k < c->man.n; k++) {
        andrea_docset_free(&c->s[k].d);
        free(c->s[k].perm);
    }
    if (c) {
        free(c->s);
        free(c->val_all);
        andrea_manifest_free(&c->man);
    }
    free(c);
    free(bs);
}

/* Every source's documents, their first epoch's order, the joint validation stream. */
static int load_sources(andrea_curriculum *c, const andrea_tokenizer *tok, double vf) {
    for (int k = 0; k < c->man.n; k++) {
        andrea_cur_source *s = &c->s[k];
        if (andrea_docset_load(&s->d, &c->man.src[k], tok, vf)) return -1;
        if (s->d.n_train < 1) return andrea_set_error("source '%s': no training documents", c->man.src[k].name);
        if (!(s->perm = malloc(sizeof(int64_t) * (size_t)s->d.n_train))) return andrea_set_error("out of memory");
        andrea_cur_shuffle(c, k);
        c->n_val_all += s->d.n_val;
    }
    c->val_all = malloc(sizeof(int32_t) * (size_t)(c->n_val_all + 1));
    if (!c->val_all) return andrea_set_error("out of memory");
    int64_t at = 0;
    for (int k = 0; k < c->man.n; k++) {
        memcpy(c->val_all + at, c->s[k].d.val, sizeof(int32_t) * (size_t)c->s[k].d.n_val);
        at += c->s[k].d.n_val;
    }
    return 0;
}

andrea_batch_source *andrea_sources_open(const char *manifest_path, const char *tokenizer_spec,
                                         andrea_tokenizer **tok, float val_fraction, int T,
                                         uint64_t seed) {
    (void)T;
    andrea_batch_source *bs = calloc(1, sizeof *bs);
    andrea_curriculum *c = calloc(1, sizeof *c);
    if (!bs || !c) {
        free(bs);
        free(c);
        return andrea_set_error("out of memory"), NULL;
    }
    *bs = (andrea_batch_source){"sources", next, save, restore, describe, sizes, validation,
                                source_free, c, observe, parts, part_validation};
    int made = 0;
    if (andrea_manifest_read(manifest_path, &c->man)) goto fail;
    if (!(c->s = calloc((size_t)c->man.n, sizeof *c->s))) goto oom;
    if (!*tok) {
        const char *spec = c->man.tokenizer ? c->man.tokenizer : tokenizer_spec ? tokenizer_spec : "byte";
        if (strcmp(spec, "char") == 0) {
            andrea_set_error("manifest '%s': the char tokenizer is trained on one text; give a "
                             "byte, gpt2, .tok or Harris tokenizer", manifest_path);
            goto fail;
        }
        if (!(*tok = andrea_tokenizer_open(spec))) goto fail;
        made = 1;
    }
    c->bos = andrea_tokenizer_bos(*tok);
    c->seed = seed;
    andrea_rng_seed(&c->rng, seed ^ 0x5EED5C0BA11D1CEull);
    c->active = -1;
    c->new_step = 1;
    c->log_start = 1;
    if (load_sources(c, *tok, c->man.val_fraction >= 0 ? c->man.val_fraction : val_fraction)) goto fail;
    return bs;
oom:
    andrea_set_error("out of memory");
fail:
    if (made) {
        andrea_tokenizer_free(*tok);
        *tok = NULL;
    }
    source_free(bs);
    return NULL;
}
