/*
 * checkpoint.c - save and load checkpoints (layout: docs/checkpoint.md).
 * The writer never touches the destination until a complete, fsync'ed copy
 * exists beside it; the reader checks magic, version, config, sizes, file
 * length and checksum before it trusts a single float.
 */
#include "train/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "andrea_tokenizer.h"
#include "model/model.h"
#include "util/bigalloc.h"
#include "util/error.h"
#include "util/hash.h"

static void put32(unsigned char *h, int off, uint32_t v) { memcpy(h + off, &v, 4); }
static void put64(unsigned char *h, int off, uint64_t v) { memcpy(h + off, &v, 8); }
static void putf(unsigned char *h, int off, float v) { memcpy(h + off, &v, 4); }
static uint32_t get32(const unsigned char *h, int off) { uint32_t v; memcpy(&v, h + off, 4); return v; }
static uint64_t get64(const unsigned char *h, int off) { uint64_t v; memcpy(&v, h + off, 8); return v; }
static float getf(const unsigned char *h, int off) { float v; memcpy(&v, h + off, 4); return v; }

static void encode_header(unsigned char *h, const andrea_config *c, int64_t n_params,
                          int has_moments, const andrea_ckpt_state *s, uint64_t blob_len) {
    memset(h, 0, ANDREA_CKPT_HEADER);
    memcpy(h, ANDREA_CKPT_MAGIC, 8);
    put32(h, 8, ANDREA_CKPT_VERSION);
    put32(h, 12, ANDREA_CKPT_HEADER);
    put32(h, 16, (uint32_t)c->n_layer);
    put32(h, 20, (uint32_t)c->n_head);
    put32(h, 24, (uint32_t)c->d_model);
    put32(h, 28, (uint32_t)c->ctx);
    put32(h, 32, (uint32_t)c->vocab);
    put32(h, 36, (uint32_t)c->norm);
    put32(h, 40, (uint32_t)c->act);
    put32(h, 44, (uint32_t)c->bias);
    put32(h, 48, (uint32_t)c->tied);
    putf(h, 52, c->norm_eps);
    putf(h, 56, c->init_std);
    put32(h, 60, has_moments ? 1u : 0u);
    put64(h, 64, (uint64_t)n_params);
    put32(h, 72, s->tokenizer_kind);
    put64(h, 80, s->tokenizer_checksum);
    put64(h, 88, blob_len);
    put64(h, 96, (uint64_t)s->step);
    put64(h, 104, s->data_rng[0]);
    put64(h, 112, s->data_rng[1]);
    put64(h, 120, s->seed);
    put64(h, 128, s->data_checksum);
    putf(h, 136, s->best_val_loss);
    putf(h, 140, s->smooth_loss);
    const int32_t ints[] = {s->batch, s->seq, s->grad_accum, s->max_steps, s->warmup,
                            s->eval_every, s->eval_batches, s->ckpt_every, s->log_every,
                            s->max_bad_steps};
    for (int i = 0; i < 10; i++) put32(h, 144 + 4 * i, (uint32_t)ints[i]);
    const float fl[] = {s->lr, s->lr_min, s->beta1, s->beta2, s->eps, s->weight_decay,
                        s->grad_clip, s->val_fraction};
    for (int i = 0; i < 8; i++) putf(h, 184 + 4 * i, fl[i]);
    put32(h, 216, (uint32_t)s->sample_every);
    put32(h, 220, (uint32_t)s->sample_tokens);
    put32(h, 224, (uint32_t)s->gate_patience);
    putf(h, 228, s->gate_threshold);
    put32(h, 232, (uint32_t)s->gate_fails);
}

static void decode_header(const unsigned char *h, andrea_config *c, andrea_ckpt_state *s) {
    c->n_layer = (int32_t)get32(h, 16);
    c->n_head = (int32_t)get32(h, 20);
    c->d_model = (int32_t)get32(h, 24);
    c->ctx = (int32_t)get32(h, 28);
    c->vocab = (int32_t)get32(h, 32);
    c->norm = (int32_t)get32(h, 36);
    c->act = (int32_t)get32(h, 40);
    c->bias = (int32_t)get32(h, 44);
    c->tied = (int32_t)get32(h, 48);
    c->norm_eps = getf(h, 52);
    c->init_std = getf(h, 56);
    s->tokenizer_kind = get32(h, 72);
    s->tokenizer_checksum = get64(h, 80);
    s->step = (int64_t)get64(h, 96);
    s->data_rng[0] = get64(h, 104);
    s->data_rng[1] = get64(h, 112);
    s->seed = get64(h, 120);
    s->data_checksum = get64(h, 128);
    s->best_val_loss = getf(h, 136);
    s->smooth_loss = getf(h, 140);
    int32_t *ints[] = {&s->batch, &s->seq, &s->grad_accum, &s->max_steps, &s->warmup,
                       &s->eval_every, &s->eval_batches, &s->ckpt_every, &s->log_every,
                       &s->max_bad_steps};
    for (int i = 0; i < 10; i++) *ints[i] = (int32_t)get32(h, 144 + 4 * i);
    float *fl[] = {&s->lr, &s->lr_min, &s->beta1, &s->beta2, &s->eps, &s->weight_decay,
                   &s->grad_clip, &s->val_fraction};
    for (int i = 0; i < 8; i++) *fl[i] = getf(h, 184 + 4 * i);
    s->sample_every = (int32_t)get32(h, 216);
    s->sample_tokens = (int32_t)get32(h, 220);
    s->gate_patience = (int32_t)get32(h, 224);
    s->gate_threshold = getf(h, 228);
    s->gate_fails = (int32_t)get32(h, 232);
}

static int write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }

int andrea_checkpoint_save(const char *path, const andrea_model *model, const float *adam_m,
                           const float *adam_v, const andrea_ckpt_state *st, const void *blob,
                           uint64_t blob_len) {
    int64_t n = model->layout.total;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(model->params[i]))
            return andrea_set_error("refusing to save '%s': parameter %lld is not finite", path,
                                    (long long)i);
    int has_moments = adam_m && adam_v;
    unsigned char hdr[ANDREA_CKPT_HEADER];
    encode_header(hdr, &model->cfg, n, has_moments, st, blob_len);

    size_t plen = strlen(path);
    char *tmp = malloc(plen + 8);
    if (!tmp) return andrea_set_error("out of memory");
    snprintf(tmp, plen + 8, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        andrea_set_error("cannot write checkpoint '%s': %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    size_t bytes = sizeof(float) * (size_t)n;
    uint64_t h = andrea_hash(ANDREA_HASH_INIT, hdr, sizeof hdr);
    h = andrea_hash(h, model->params, bytes);
    if (has_moments) {
        h = andrea_hash(h, adam_m, bytes);
        h = andrea_hash(h, adam_v, bytes);
    }
    if (blob_len) h = andrea_hash(h, blob, blob_len);
    int bad = write_all(f, hdr, sizeof hdr) || write_all(f, model->params, bytes);
    if (!bad && has_moments) bad = write_all(f, adam_m, bytes) || write_all(f, adam_v, bytes);
    if (!bad && blob_len) bad = write_all(f, blob, blob_len);
    if (!bad) bad = write_all(f, &h, 8);
    if (!bad) bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    int err = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        andrea_set_error("writing checkpoint '%s' failed: %s (the previous file is untouched)",
                         path, strerror(err));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    /* make the rename itself durable */
    char *dircopy = strdup(path);
    if (dircopy) {
        int dfd = open(dirname(dircopy), O_RDONLY);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        free(dircopy);
    }
    free(tmp);
    return 0;
}

static int read_exact(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n ? 0 : -1; }

andrea_model *andrea_checkpoint_load(const char *path, float **adam_m, float **adam_v,
                                     andrea_ckpt_state *st, void **blob, uint64_t *blob_len) {
    if (adam_m) *adam_m = NULL;
    if (adam_v) *adam_v = NULL;
    if (blob) *blob = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return andrea_set_error("cannot open checkpoint '%s': %s", path, strerror(errno)), NULL;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return andrea_set_error("checkpoint '%s' is not a regular file", path), NULL;
    }
    uint64_t fsize = (uint64_t)sb.st_size;
    unsigned char hdr[ANDREA_CKPT_HEADER];
    if (fsize < 16 || read_exact(f, hdr, fsize < sizeof hdr ? (size_t)fsize : sizeof hdr)) {
        fclose(f);
        return andrea_set_error("checkpoint '%s': truncated header (%llu bytes)", path,
                                (unsigned long long)fsize), NULL;
    }
    if (memcmp(hdr, ANDREA_CKPT_MAGIC, 8) != 0) {
        fclose(f);
        return andrea_set_error("'%s' is not an andrea checkpoint (bad magic)", path), NULL;
    }
    if (get32(hdr, 8) != ANDREA_CKPT_VERSION || get32(hdr, 12) != ANDREA_CKPT_HEADER) {
        fclose(f);
        return andrea_set_error("checkpoint '%s': unsupported version %u (this build reads %d)",
                                path, get32(hdr, 8), ANDREA_CKPT_VERSION), NULL;
    }
    if (fsize < sizeof hdr) {
        fclose(f);
        return andrea_set_error("checkpoint '%s': truncated header (%llu of %d bytes)", path,
                                (unsigned long long)fsize, ANDREA_CKPT_HEADER), NULL;
    }
    andrea_config cfg;
    andrea_ckpt_state s;
    memset(&s, 0, sizeof s);
    decode_header(hdr, &cfg, &s);
    if (andrea_config_validate(&cfg)) {
        char why[512];
        snprintf(why, sizeof why, "%s", andrea_error());
        fclose(f);
        return andrea_set_error("checkpoint '%s': %s", path, why), NULL;
    }
    int has_moments = get32(hdr, 60) & 1u;
    int64_t n = (int64_t)get64(hdr, 64);
    uint64_t blen = get64(hdr, 88);
    andrea_param_counts pc = andrea_config_param_counts(&cfg);
    if (n != pc.total) {
        fclose(f);
        return andrea_set_error("checkpoint '%s': header says %lld parameters but its config has "
                                "%lld (corrupt file?)", path, (long long)n, (long long)pc.total), NULL;
    }
    uint64_t bytes = (uint64_t)n * 4;
    uint64_t want = ANDREA_CKPT_HEADER + bytes * (has_moments ? 3 : 1) + blen + 8;
    if (blen > (1ull << 32) || fsize != want) {
        fclose(f);
        return andrea_set_error("checkpoint '%s': %s (%llu of %llu bytes); was it being written "
                                "when the run stopped?", path, fsize < want ? "truncated" : "too long",
                                (unsigned long long)fsize, (unsigned long long)want), NULL;
    }
    andrea_model *m = andrea_model_alloc(&cfg);
    float *mm = NULL, *vv = NULL;
    void *bb = NULL;
    if (!m) {
        fclose(f);
        return NULL;
    }
    int bad = read_exact(f, m->params, (size_t)bytes);
    uint64_t h = andrea_hash(ANDREA_HASH_INIT, hdr, sizeof hdr);
    h = andrea_hash(h, m->params, (size_t)bytes);
    if (!bad && has_moments) {
        mm = andrea_big_alloc((size_t)bytes);
        vv = andrea_big_alloc((size_t)bytes);
        bad = !mm || !vv || read_exact(f, mm, (size_t)bytes) || read_exact(f, vv, (size_t)bytes);
        if (!bad) {
            h = andrea_hash(h, mm, (size_t)bytes);
            h = andrea_hash(h, vv, (size_t)bytes);
        }
    }
    if (!bad && blen) {
        bb = malloc((size_t)blen);
        bad = !bb || read_exact(f, bb, (size_t)blen);
        if (!bad) h = andrea_hash(h, bb, (size_t)blen);
    }
    uint64_t stored = 0;
    if (!bad) bad = read_exact(f, &stored, 8);
    fclose(f);
    if (bad || stored != h) {
        andrea_set_error(bad ? "checkpoint '%s': read error" :
                               "checkpoint '%s': checksum mismatch (the file is corrupt)", path);
        andrea_model_free(m);
        free(mm);
        free(vv);
        free(bb);
        return NULL;
    }
    if (adam_m) *adam_m = mm; else free(mm);
    if (adam_v) *adam_v = vv; else free(vv);
    if (blob) *blob = bb; else free(bb);
    if (blob_len) *blob_len = blen;
    if (st) *st = s;
    return m;
}

andrea_model *andrea_checkpoint_load_model(const char *path) {
    return andrea_checkpoint_load(path, NULL, NULL, NULL, NULL, NULL);
}

int andrea_checkpoint_peek(const char *path, andrea_config *cfg, andrea_ckpt_state *st) {
    FILE *f = fopen(path, "rb");
    if (!f) return andrea_set_error("cannot open checkpoint '%s': %s", path, strerror(errno));
    unsigned char hdr[ANDREA_CKPT_HEADER];
    size_t got = fread(hdr, 1, sizeof hdr, f);
    fclose(f);
    if (got >= 8 && memcmp(hdr, ANDREA_CKPT_MAGIC, 8) != 0)
        return andrea_set_error("'%s' is not an andrea checkpoint (bad magic)", path);
    if (got < sizeof hdr)
        return andrea_set_error("checkpoint '%s': truncated header (%zu of %d bytes)", path, got,
                                ANDREA_CKPT_HEADER);
    if (get32(hdr, 8) != ANDREA_CKPT_VERSION || get32(hdr, 12) != ANDREA_CKPT_HEADER)
        return andrea_set_error("checkpoint '%s': unsupported version %u (this build reads %d)",
                                path, get32(hdr, 8), ANDREA_CKPT_VERSION);
    andrea_ckpt_state s;
    memset(&s, 0, sizeof s);
    decode_header(hdr, cfg, &s);
    if (andrea_config_validate(cfg)) {
        char why[512];
        snprintf(why, sizeof why, "%s", andrea_error());
        return andrea_set_error("checkpoint '%s': %s", path, why);
    }
    if (st) *st = s;
    return 0;
}

andrea_model *andrea_checkpoint_load_with_tokenizer(const char *path, andrea_tokenizer **tok) {
    void *blob = NULL;
    uint64_t blen = 0;
    *tok = NULL;
    andrea_model *m = andrea_checkpoint_load(path, NULL, NULL, NULL, &blob, &blen);
    if (!m) return NULL;
    char what[600];
    snprintf(what, sizeof what, "checkpoint '%s'", path);
    *tok = blen ? andrea_tokenizer_deserialize(blob, (size_t)blen, what) : andrea_tokenizer_byte();
    free(blob);
    if (!*tok) {
        andrea_model_free(m);
        return NULL;
    }
    if (andrea_tokenizer_vocab_size(*tok) > m->cfg.vocab) {
        andrea_set_error("checkpoint '%s': its tokenizer has %d tokens but the model only %d",
                         path, andrea_tokenizer_vocab_size(*tok), m->cfg.vocab);
        andrea_tokenizer_free(*tok);
        *tok = NULL;
        andrea_model_free(m);
        return NULL;
    }
    return m;
}
