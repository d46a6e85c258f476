/*
 * checkpoint.c - write checkpoints (version 2, layout: docs/checkpoint.md): a preamble,
 * tagged sections (CONF, TOKN, STAT, OPTS, BATC, PARM, ADAM) and a checksum, every number
 * little-endian. The writer never touches the destination until a complete, fsync'ed copy
 * exists beside it.
 */
#include "train/checkpoint/checkpoint.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_tokenizer.h"
#include "model/model.h"
#include "train/data/batch_source.h"
#include "train/checkpoint/ckpt_format.h"
#include "train/checkpoint/ckpt_stream.h"
#include "backend/tensor_io.h"
#include "train/run_options.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/le.h"

/* ---- the sections before the tensors, into a buffer ---------------------------------- */

static int put(andrea_bytes *b, const void *p, size_t n) { return andrea_bytes_append(b, p, n); }
static int put32(andrea_bytes *b, uint32_t v) {
    uint8_t x[4];
    put_u32(x, v);
    return put(b, x, 4);
}
static int put64(andrea_bytes *b, uint64_t v) {
    uint8_t x[8];
    put_u64(x, v);
    return put(b, x, 8);
}
static int putf(andrea_bytes *b, float v) {
    uint8_t x[4];
    put_f32(x, v);
    return put(b, x, 4);
}

/* Starts a section; returns where its length goes (patched by end_section). */
static size_t begin_section(andrea_bytes *b, const char tag[4], int *rc) {
    size_t at = b->len;
    *rc |= put(b, tag, 4) | put32(b, 0) | put64(b, 0);
    return at;
}
static void end_section(andrea_bytes *b, size_t at, int *rc) {
    uint64_t len = b->len - at - ANDREA_CKPT_SECTION_HEADER;
    static const uint8_t zero[8] = {0};
    *rc |= put(b, zero, (size_t)((8 - len % 8) % 8));
    if (!*rc) put_u64(b->data + at + 8, len);
}

static int encode_options(andrea_bytes *b, const andrea_ckpt_state *st) {
    int n, count = 0, rc = 0;
    const andrea_train_option *t = andrea_train_option_table(&n);
    for (int i = 0; i < n; i++) count += t[i].ckpt >= 0;
    rc |= put32(b, (uint32_t)count);
    for (int i = 0; i < n; i++) {
        if (t[i].ckpt < 0) continue;
        const uint8_t *f = (const uint8_t *)st + t[i].ckpt;
        uint8_t len = (uint8_t)strlen(t[i].flag), type = (uint8_t)t[i].type;
        rc |= put(b, &len, 1) | put(b, t[i].flag, len) | put(b, &type, 1);
        uint32_t u32;
        uint64_t u64;
        switch (t[i].type) {
        case ANDREA_OPT_INT:
        case ANDREA_OPT_FLOAT: memcpy(&u32, f, 4); rc |= put32(b, u32); break;
        case ANDREA_OPT_U64: memcpy(&u64, f, 8); rc |= put64(b, u64); break;
        case ANDREA_OPT_STR: {
            size_t sl = strnlen((const char *)f, ANDREA_CKPT_STR - 1);
            rc |= put32(b, (uint32_t)sl) | put(b, f, sl);
            break;
        }
        }
    }
    return rc;
}

int andrea_ckpt_encode_meta(andrea_bytes *b, const andrea_config *c, const andrea_ckpt_state *s,
                            const void *blob, uint64_t blob_len) {
    int rc = put(b, ANDREA_CKPT_MAGIC, 8) | put32(b, ANDREA_CKPT_VERSION) |
             put32(b, ANDREA_CKPT_PREAMBLE) | put64(b, 0); /* file size, patched by the writer */
    size_t at = begin_section(b, "CONF", &rc);
    const int32_t ints[] = {c->n_layer, c->n_head, c->d_model, c->ctx, c->vocab,
                            c->norm, c->act, c->bias, c->tied};
    for (int i = 0; i < 9; i++) rc |= put32(b, (uint32_t)ints[i]);
    rc |= putf(b, c->norm_eps) | putf(b, c->init_std);
    end_section(b, at, &rc);
    at = begin_section(b, "TOKN", &rc);
    rc |= put32(b, s->tokenizer_kind) | put32(b, 0) | put64(b, s->tokenizer_checksum);
    if (blob_len) rc |= put(b, blob, (size_t)blob_len);
    end_section(b, at, &rc);
    at = begin_section(b, "STAT", &rc);
    rc |= put64(b, (uint64_t)s->step) | putf(b, s->best_val_loss) | putf(b, s->smooth_loss) |
          put32(b, (uint32_t)s->gate_fails) | put32(b, 0);
    end_section(b, at, &rc);
    at = begin_section(b, "OPTS", &rc);
    rc |= encode_options(b, s);
    end_section(b, at, &rc);
    at = begin_section(b, "BATC", &rc);
    if (s->batch_pos_len) {
        rc |= put(b, s->batch_pos, s->batch_pos_len);
    } else { /* the single corpus's position, from the legacy fields */
        uint8_t pos[ANDREA_CORPUS_POS_BYTES];
        andrea_corpus_position_encode(s->data_checksum, s->data_rng, pos);
        rc |= put(b, pos, sizeof pos);
    }
    end_section(b, at, &rc);
    return rc ? andrea_set_error("out of memory encoding a checkpoint") : 0;
}

uint64_t andrea_checkpoint_size(const andrea_config *cfg, int with_moments,
                                uint64_t tokenizer_blob, const andrea_ckpt_state *st) {
    andrea_bytes meta = {0};
    uint8_t *blob = calloc(1, tokenizer_blob ? (size_t)tokenizer_blob : 1);
    uint64_t size = 0;
    if (blob && andrea_ckpt_encode_meta(&meta, cfg, st, blob, tokenizer_blob) == 0) {
        uint64_t n = (uint64_t)andrea_config_param_counts(cfg).total;
        size = meta.len + ANDREA_CKPT_SECTION_HEADER + (4 * n + 7) / 8 * 8 + 8;
        if (with_moments) size += ANDREA_CKPT_SECTION_HEADER + 8 * n;
    }
    free(blob);
    andrea_bytes_free(&meta);
    return size;
}

/* ---- the file -------------------------------------------------------------------------- */

static void write_tensor_section(andrea_ckpt_stream *w, be_t be, const char tag[4],
                                 const float *a, const float *b, uint64_t n) {
    uint8_t h[ANDREA_CKPT_SECTION_HEADER] = {0};
    uint64_t len = 4 * n * (b ? 2 : 1);
    memcpy(h, tag, 4);
    put_u64(h + 8, len);
    andrea_ckpt_write(w, h, sizeof h);
    andrea_ckpt_write_tensor(w, be, a, n);
    if (b) andrea_ckpt_write_tensor(w, be, b, n);
    static const uint8_t zero[8] = {0};
    andrea_ckpt_write(w, zero, (size_t)((8 - len % 8) % 8));
}

int andrea_checkpoint_save(const char *path, const andrea_model *model, const float *adam_m,
                           const float *adam_v, const andrea_ckpt_state *st, const void *blob,
                           uint64_t blob_len) {
    uint64_t n = (uint64_t)model->layout.total;
    float bad_value;
    int64_t at = andrea_tio_first_nonfinite(model->be, model->params, (size_t)n, 0, &bad_value);
    if (at >= 0)
        return andrea_set_error("refusing to save '%s': parameter %lld is not finite", path,
                                (long long)at);
    int has_moments = adam_m && adam_v;
    andrea_bytes meta = {0};
    if (andrea_ckpt_encode_meta(&meta, &model->cfg, st, blob, blob_len)) return -1;
    uint64_t size = meta.len + ANDREA_CKPT_SECTION_HEADER + (4 * n + 7) / 8 * 8 + 8;
    if (has_moments) size += ANDREA_CKPT_SECTION_HEADER + 8 * n;
    put_u64(meta.data + 16, size);

    andrea_atomic_file af;
    andrea_ckpt_stream *w = malloc(sizeof *w);
    if (!w || !andrea_atomic_open(&af, path)) {
        if (!w) andrea_set_error("out of memory");
        free(w);
        andrea_bytes_free(&meta);
        return -1;
    }
    andrea_ckpt_wopen(w, af.f);
    andrea_ckpt_write(w, meta.data, meta.len);
    andrea_bytes_free(&meta);
    /* the moments are in the model's backend memory, as the trainer allocates them */
    write_tensor_section(w, model->be, "PARM", model->params, NULL, n);
    if (has_moments) write_tensor_section(w, model->be, "ADAM", adam_m, adam_v, n);
    int bad = andrea_ckpt_wclose(w) != 0;
    free(w);
    if (bad) {
        andrea_atomic_abort(&af);
        return andrea_set_error("writing checkpoint '%s' failed: %s (the previous file is "
                                "untouched)", path, strerror(errno));
    }
    return andrea_atomic_commit(&af);
}
