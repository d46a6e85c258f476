/*
 * checkpoint_read.c - load checkpoints: version 2 (tagged sections, docs/checkpoint.md)
 * and, through checkpoint_v1.c, version 1. The reader checks magic, version, the recorded
 * file size, every section's bounds, the config, tensor sizes and the checksum before it
 * hands out a single float; sections it does not know are skipped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/model.h"
#include "train/data/batch_source.h"
#include "train/checkpoint/ckpt_format.h"
#include "train/checkpoint/ckpt_stream.h"
#include "train/run_options.h"
#include "util/bigalloc.h"
#include "util/error.h"
#include "util/file.h"
#include "util/le.h"

/* What a walk over the sections collected. */
typedef struct {
    const char *path;
    andrea_config cfg;
    andrea_ckpt_state *st;
    int have_conf;
    andrea_model *m;            /* PARM, when loading */
    float *adam_m, *adam_v;     /* ADAM */
    uint8_t *blob;              /* the tokenizer blob of TOKN */
    uint64_t blob_len;
    unsigned seen;              /* bit i: KNOWN[i] was read */
} walk;

/* The sections this reader knows: each may appear once (two CONF or TOKN would be
 * ambiguous, and the second must not silently replace the first). */
static const char KNOWN[][5] = {"CONF", "TOKN", "STAT", "OPTS", "BATC", "PARM", "ADAM"};

static int seen_twice(walk *w, const char tag[4]) {
    for (unsigned i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++)
        if (memcmp(tag, KNOWN[i], 4) == 0) {
            if (w->seen & 1u << i) return 1;
            w->seen |= 1u << i;
        }
    return 0;
}

static int corrupt(const char *path, const char *what) {
    return andrea_set_error("checkpoint '%s': %s (corrupt file?)", path, what);
}

static int decode_conf(walk *w, const uint8_t *p, uint64_t n) {
    if (n < ANDREA_CKPT_CONF_BYTES) return corrupt(w->path, "CONF section too short");
    int32_t *f[] = {&w->cfg.n_layer, &w->cfg.n_head, &w->cfg.d_model, &w->cfg.ctx, &w->cfg.vocab,
                    &w->cfg.norm,    &w->cfg.act,    &w->cfg.bias,    &w->cfg.tied};
    for (int i = 0; i < 9; i++) *f[i] = (int32_t)get_u32(p + 4 * i);
    w->cfg.norm_eps = get_f32(p + 36);
    w->cfg.init_std = get_f32(p + 40);
    if (andrea_config_validate(&w->cfg)) {
        return andrea_set_error("checkpoint '%s': %s", w->path, andrea_error());
    }
    w->have_conf = 1;
    return 0;
}

/* OPTS: named entries; unknown names are skipped, a known name of another type is an error. */
static int decode_opts(walk *w, const uint8_t *p, uint64_t n) {
    if (n < 4) return corrupt(w->path, "OPTS section too short");
    uint32_t count = get_u32(p);
    uint64_t at = 4;
    for (uint32_t i = 0; i < count; i++) {
        if (at + 1 > n || at + 2 + p[at] > n) return corrupt(w->path, "OPTS entry runs past its section");
        char name[256];
        memcpy(name, p + at + 1, p[at]);
        name[p[at]] = '\0';
        at += 1 + p[at];
        int type = p[at++];
        uint64_t size = type == ANDREA_OPT_U64 ? 8 : 4;
        if (at + size > n) return corrupt(w->path, "OPTS value runs past its section");
        if (type == ANDREA_OPT_STR) size += get_u32(p + at);
        if (at + size > n) return corrupt(w->path, "OPTS string runs past its section");
        const andrea_train_option *e = andrea_train_option_find(name);
        if (e && e->ckpt >= 0) {
            if (e->type != type)
                return andrea_set_error("checkpoint '%s': option '%s' has type %d, expected %d",
                                        w->path, name, type, e->type);
            uint8_t *f = (uint8_t *)w->st + e->ckpt;
            if (type == ANDREA_OPT_U64) {
                uint64_t v = get_u64(p + at);
                memcpy(f, &v, 8);
            } else if (type == ANDREA_OPT_STR) {
                uint64_t sl = size - 4 < ANDREA_CKPT_STR - 1 ? size - 4 : ANDREA_CKPT_STR - 1;
                memcpy(f, p + at + 4, (size_t)sl);
                f[sl] = '\0';
            } else {
                uint32_t v = get_u32(p + at);
                memcpy(f, &v, 4);
            }
        }
        at += size;
    }
    return 0;
}

static int decode_meta(walk *w, const char tag[4], const uint8_t *p, uint64_t n) {
    andrea_ckpt_state *s = w->st;
    if (memcmp(tag, "CONF", 4) == 0) return decode_conf(w, p, n);
    if (memcmp(tag, "TOKN", 4) == 0) {
        if (n < 16) return corrupt(w->path, "TOKN section too short");
        if (get_u32(p + 4) != 0) return corrupt(w->path, "TOKN reserved field is not 0");
        s->tokenizer_kind = get_u32(p);
        s->tokenizer_checksum = get_u64(p + 8);
        w->blob_len = s->tokenizer_blob = n - 16;
        if (w->blob_len) {
            w->blob = malloc((size_t)w->blob_len);
            if (!w->blob) return andrea_set_error("out of memory");
            memcpy(w->blob, p + 16, (size_t)w->blob_len);
        }
        return 0;
    }
    if (memcmp(tag, "STAT", 4) == 0) {
        if (n < 20) return corrupt(w->path, "STAT section too short");
        if (n >= 24 && get_u32(p + 20) != 0) return corrupt(w->path, "STAT reserved field is not 0");
        s->step = (int64_t)get_u64(p);
        s->best_val_loss = get_f32(p + 8);
        s->smooth_loss = get_f32(p + 12);
        s->gate_fails = (int32_t)get_u32(p + 16);
        return 0;
    }
    if (memcmp(tag, "OPTS", 4) == 0) return decode_opts(w, p, n);
    if (memcmp(tag, "BATC", 4) == 0) {
        if (n > ANDREA_CKPT_POS_MAX) return corrupt(w->path, "batch position too long");
        memcpy(s->batch_pos, p, (size_t)n);
        s->batch_pos_len = (uint32_t)n;
        andrea_corpus_position_decode(p, (size_t)n, &s->data_checksum, s->data_rng);
        return 0;
    }
    return 1; /* not a section before the tensors */
}

/* PARM and ADAM straight into the model's and the moments' memory. */
static int read_tensors(walk *w, andrea_ckpt_stream *r, const char tag[4], uint64_t len,
                        int want_moments) {
    if (!w->have_conf) return corrupt(w->path, "tensors before the CONF section");
    uint64_t n = (uint64_t)andrea_config_param_counts(&w->cfg).total;
    int adam = memcmp(tag, "ADAM", 4) == 0;
    if (len != 4 * n * (adam ? 2 : 1))
        return andrea_set_error("checkpoint '%s': %s holds %llu bytes, its config needs %llu "
                                "(corrupt file?)", w->path, adam ? "ADAM" : "PARM",
                                (unsigned long long)len, (unsigned long long)(4 * n * (adam ? 2 : 1)));
    if (!adam) {
        if (!w->m && !(w->m = andrea_model_alloc(&w->cfg))) return -1;
        return andrea_ckpt_read_tensor(r, w->m->be, w->m->params, n)
                   ? andrea_set_error("checkpoint '%s': read error", w->path) : 0;
    }
    if (!want_moments) return andrea_ckpt_skip(r, len);
    if (!w->m) return corrupt(w->path, "ADAM before PARM");
    w->adam_m = andrea_model_moments_alloc(w->m);
    w->adam_v = andrea_model_moments_alloc(w->m);
    if (!w->adam_m || !w->adam_v) return andrea_set_error("out of memory loading AdamW state");
    if (andrea_ckpt_read_tensor(r, w->m->be, w->adam_m, n) ||
        andrea_ckpt_read_tensor(r, w->m->be, w->adam_v, n))
        return andrea_set_error("checkpoint '%s': read error", w->path);
    return 0;
}

/* Walks every section of a version-2 file (r positioned after the preamble). header_only:
 * seek past the tensors instead of reading them (no checksum then). */
static int walk_sections(walk *w, andrea_ckpt_stream *r, uint64_t fsize, int header_only,
                         int want_moments) {
    uint64_t end = fsize - 8;
    uint8_t *buf = NULL;
    int rc = 0;
    while (rc == 0 && r->pos < end) {
        uint8_t h[ANDREA_CKPT_SECTION_HEADER];
        if (r->pos + sizeof h > end || andrea_ckpt_read(r, h, sizeof h)) {
            rc = corrupt(w->path, "a section header runs past the end");
            break;
        }
        char tag[4];
        memcpy(tag, h, 4);
        if (get_u32(h + 4) != 0) {
            rc = andrea_set_error("checkpoint '%s': section '%.4s' has reserved bits set (corrupt "
                                  "file?)", w->path, tag);
            break;
        }
        if (seen_twice(w, tag)) {
            rc = andrea_set_error("checkpoint '%s': section '%.4s' appears twice (corrupt file?)",
                                  w->path, tag);
            break;
        }
        uint64_t len = get_u64(h + 8), padded = (len + 7) / 8 * 8;
        if (len > end || padded > end - r->pos) {
            rc = andrea_set_error("checkpoint '%s': section '%.4s' of %llu bytes runs past the end "
                                  "(corrupt file?)", w->path, tag, (unsigned long long)len);
            break;
        }
        int tensor = memcmp(tag, "PARM", 4) == 0 || memcmp(tag, "ADAM", 4) == 0;
        if (memcmp(tag, "ADAM", 4) == 0) w->st->has_moments = 1;
        if (tensor && header_only) { /* jump: drop what the stream read ahead */
            r->pos += padded;
            r->at = r->fill = 0;
            if (fseeko(r->f, (off_t)r->pos, SEEK_SET) != 0)
                rc = andrea_set_error("checkpoint '%s': seek error", w->path);
            continue;
        }
        if (tensor) {
            rc = read_tensors(w, r, tag, len, want_moments);
            if (rc == 0) rc = andrea_ckpt_skip(r, padded - len);
            continue;
        }
        if (len > (1ull << 32)) { /* no section besides the tensors is that large */
            rc = andrea_ckpt_skip(r, padded);
            continue;
        }
        free(buf);
        buf = malloc(padded ? (size_t)padded : 1);
        if (!buf) rc = andrea_set_error("out of memory");
        else if (andrea_ckpt_read(r, buf, (size_t)padded)) rc = andrea_set_error("checkpoint '%s': read error", w->path);
        else if (decode_meta(w, tag, buf, len) < 0) rc = -1;
    }
    free(buf);
    if (rc == 0 && !w->have_conf) rc = corrupt(w->path, "no CONF section");
    if (rc == 0 && !header_only && !w->m) rc = corrupt(w->path, "no PARM section");
    return rc;
}

static void walk_free(walk *w) {
    if (w->m) {
        andrea_model_moments_free(w->m, w->adam_m);
        andrea_model_moments_free(w->m, w->adam_v);
    }
    andrea_model_free(w->m);
    free(w->blob);
}

/* Opens path and checks magic, version and size. *version: 1 or 2. */
static FILE *open_checked(const char *path, uint64_t *fsize, uint32_t *version) {
    FILE *f = andrea_file_fopen_regular(path, "checkpoint", 0, fsize);
    if (!f) return NULL;
    uint8_t pre[ANDREA_CKPT_PREAMBLE];
    size_t got = fread(pre, 1, sizeof pre, f);
    const char *err = NULL;
    if (got >= 8 && memcmp(pre, ANDREA_CKPT_MAGIC, 8) != 0) err = "bad magic";
    else if (got < 16) err = "truncated header";
    else if ((*version = get_u32(pre + 8)) != 1 && *version != ANDREA_CKPT_VERSION) err = "version";
    else if (*version == 2 && got < sizeof pre) err = "truncated header";
    else if (*version == 2 && get_u32(pre + 12) != ANDREA_CKPT_PREAMBLE) err = "preamble";
    if (err && strcmp(err, "bad magic") == 0)
        andrea_set_error("'%s' is not an andrea checkpoint (bad magic)", path);
    else if (err && strcmp(err, "preamble") == 0)
        andrea_set_error("checkpoint '%s': version 2 with a preamble of %u bytes, not %d (corrupt "
                         "file?)", path, get_u32(pre + 12), ANDREA_CKPT_PREAMBLE);
    else if (err && strcmp(err, "version") == 0)
        andrea_set_error("checkpoint '%s': unsupported version %u (this build reads 1 and %d)",
                         path, *version, ANDREA_CKPT_VERSION);
    else if (err)
        andrea_set_error("checkpoint '%s': truncated header (%llu bytes)", path,
                         (unsigned long long)*fsize);
    else if (*version == 2 && get_u64(pre + 16) != *fsize) {
        uint64_t want = get_u64(pre + 16);
        andrea_set_error("checkpoint '%s': %s (%llu of %llu bytes); was it being written when "
                         "the run stopped?", path, *fsize < want ? "truncated" : "too long",
                         (unsigned long long)*fsize, (unsigned long long)want);
        err = "size";
    } else if (*version == 2 && *fsize % 8 != 0) {
        corrupt(path, "length not a multiple of 8");
        err = "size";
    }
    if (err) {
        fclose(f);
        return NULL;
    }
    return f;
}

/* Is the checksum of the whole file wrong? (After a structural error: a flipped length
 * is corruption that the checksum names better than the symptom.) */
static int file_corrupt(FILE *f, andrea_ckpt_stream *r, uint64_t fsize) {
    if (fseeko(f, 0, SEEK_SET) != 0) return 0;
    andrea_ckpt_ropen(r, f, fsize - 8);
    return andrea_ckpt_skip(r, fsize - 8) == 0 && andrea_ckpt_rcheck(r) == 0;
}

/* The NaN guard on load: a model with NaN or Inf weights never comes out of a checkpoint
 * (eval would print "loss nan"); AdamW's second moment is >= 0 as well. */
static int check_tensors(const char *path, const andrea_model *m, const float *adam_m,
                         const float *adam_v) {
    uint64_t n = (uint64_t)andrea_config_param_counts(&m->cfg).total;
    if (andrea_ckpt_check_finite_be(path, "parameter", m->be, m->params, n, 0)) return -1;
    if (adam_m && andrea_ckpt_check_finite_be(path, "AdamW m", m->be, adam_m, n, 0)) return -1;
    if (adam_v && andrea_ckpt_check_finite_be(path, "AdamW v", m->be, adam_v, n, 1)) return -1;
    return 0;
}

static int read_any(const char *path, int header_only, andrea_config *cfg, andrea_ckpt_state *st,
                    andrea_model **model, float **adam_m, float **adam_v, void **blob,
                    uint64_t *blob_len, uint64_t *file_size) {
    uint64_t fsize;
    uint32_t version = 0;
    FILE *f = open_checked(path, &fsize, &version);
    if (!f) return -1;
    if (file_size) *file_size = fsize;
    memset(st, 0, sizeof *st);
    if (!header_only && version == 2 && andrea_ckpt_check_holes(f, path, fsize)) {
        fclose(f);
        return -1;
    }
    if (version == 1) {
        andrea_model *m1 = NULL;
        float *m1m = NULL, *m1v = NULL;
        int rc = andrea_ckpt_v1_read(f, path, fsize, cfg, st, header_only ? NULL : &m1,
                                     adam_m ? &m1m : NULL, adam_m ? &m1v : NULL, blob, blob_len);
        fclose(f);
        if (rc == 0) rc = andrea_ckpt_check_state(path, cfg, st);
        if (rc == 0 && m1) rc = check_tensors(path, m1, m1m, m1v);
        /* read on the host (the old layout is read in one piece): onto the default now */
        if (rc == 0 && m1) rc = andrea_model_move(m1, NULL, m1m ? &m1m : NULL, m1v ? &m1v : NULL);
        if (rc) {
            if (m1) andrea_model_moments_free(m1, m1m);
            if (m1) andrea_model_moments_free(m1, m1v);
            andrea_model_free(m1);
            if (blob) {
                free(*blob);
                *blob = NULL;
            }
            return -1;
        }
        if (model) *model = m1; else andrea_model_free(m1);
        if (adam_m) *adam_m = m1m;
        if (adam_v) *adam_v = m1v;
        return 0;
    }
    st->version = 2;
    andrea_ckpt_stream *r = malloc(sizeof *r);
    walk w;
    memset(&w, 0, sizeof w);
    w.path = path;
    w.st = st;
    int rc = r ? 0 : andrea_set_error("out of memory");
    if (rc == 0) {
        andrea_ckpt_ropen(r, f, fsize - 8);
        uint8_t pre[ANDREA_CKPT_PREAMBLE];
        fseek(f, 0, SEEK_SET);
        rc = andrea_ckpt_read(r, pre, sizeof pre);
        if (rc == 0) rc = walk_sections(&w, r, fsize, header_only, adam_m != NULL);
        if (rc && !header_only && file_corrupt(f, r, fsize)) /* name the cause, not a symptom */
            andrea_set_error("checkpoint '%s': checksum mismatch (the file is corrupt)", path);
        if (rc == 0 && !header_only) {
            int ok = andrea_ckpt_rcheck(r);
            if (ok != 1)
                rc = andrea_set_error(ok < 0 ? "checkpoint '%s': read error"
                                             : "checkpoint '%s': checksum mismatch (the file is corrupt)",
                                      path);
        }
    }
    free(r);
    fclose(f);
    if (rc == 0) rc = andrea_ckpt_check_state(path, &w.cfg, st);
    if (rc == 0 && w.m) rc = check_tensors(path, w.m, w.adam_m, w.adam_v);
    if (rc) {
        walk_free(&w);
        return -1;
    }
    *cfg = w.cfg;
    if (model) *model = w.m; else andrea_model_free(w.m);
    if (adam_m) *adam_m = w.adam_m; else free(w.adam_m);
    if (adam_v) *adam_v = w.adam_v; else free(w.adam_v);
    if (blob) *blob = w.blob; else free(w.blob);
    if (blob_len) *blob_len = w.blob_len;
    return 0;
}

andrea_model *andrea_checkpoint_load(const char *path, float **adam_m, float **adam_v,
                                     andrea_ckpt_state *st, void **blob, uint64_t *blob_len) {
    if (adam_m) *adam_m = NULL;
    if (adam_v) *adam_v = NULL;
    if (blob) *blob = NULL;
    if (blob_len) *blob_len = 0;
    andrea_ckpt_state *s = malloc(sizeof *s);
    if (!s) return andrea_set_error("out of memory"), NULL;
    andrea_config cfg;
    andrea_model *m = NULL;
    int rc = read_any(path, 0, &cfg, s, &m, adam_m, adam_v, blob, blob_len, NULL);
    if (rc == 0 && st) *st = *s;
    free(s);
    return rc ? NULL : m;
}

andrea_model *andrea_checkpoint_load_model(const char *path) {
    return andrea_checkpoint_load(path, NULL, NULL, NULL, NULL, NULL);
}

int andrea_checkpoint_peek_size(const char *path, andrea_config *cfg, andrea_ckpt_state *st,
                                uint64_t *file_size) {
    andrea_ckpt_state *s = malloc(sizeof *s);
    if (!s) return andrea_set_error("out of memory");
    int rc = read_any(path, 1, cfg, s, NULL, NULL, NULL, NULL, NULL, file_size);
    if (rc == 0 && st) *st = *s;
    free(s);
    return rc;
}

int andrea_checkpoint_peek(const char *path, andrea_config *cfg, andrea_ckpt_state *st) {
    return andrea_checkpoint_peek_size(path, cfg, st, NULL);
}

andrea_tokenizer *andrea_checkpoint_tokenizer(const char *path, const andrea_ckpt_state *st,
                                              const void *blob, uint64_t blen) {
    char what[600];
    snprintf(what, sizeof what, "checkpoint '%s'", path);
    andrea_tokenizer *tok = blen ? andrea_tokenizer_deserialize(blob, (size_t)blen, what)
                                 : andrea_tokenizer_byte();
    if (!tok) return NULL;
    /* A file without a blob means the byte tokenizer; such files (weights written by tests
     * and tools) may leave kind and checksum 0. */
    uint32_t kind = (uint32_t)andrea_tokenizer_kind(tok);
    uint64_t sum = andrea_tokenizer_checksum(tok);
    int kind_ok = kind == st->tokenizer_kind || (!blen && st->tokenizer_kind == 0);
    int sum_ok = sum == st->tokenizer_checksum || (!blen && st->tokenizer_checksum == 0);
    if (!kind_ok || !sum_ok) {
        andrea_set_error("checkpoint '%s': its tokenizer (%s, checksum %016llx) is not the one "
                         "it records (kind %u, checksum %016llx); corrupt file?", path,
                         andrea_tokenizer_kind_name((int)kind), (unsigned long long)sum,
                         st->tokenizer_kind, (unsigned long long)st->tokenizer_checksum);
        andrea_tokenizer_free(tok);
        return NULL;
    }
    return tok;
}

andrea_model *andrea_checkpoint_load_with_tokenizer(const char *path, andrea_tokenizer **tok) {
    void *blob = NULL;
    uint64_t blen = 0;
    *tok = NULL;
    andrea_ckpt_state *st = malloc(sizeof *st);
    if (!st) return andrea_set_error("out of memory"), NULL;
    andrea_model *m = andrea_checkpoint_load(path, NULL, NULL, st, &blob, &blen);
    if (m) *tok = andrea_checkpoint_tokenizer(path, st, blob, blen);
    free(blob);
    free(st);
    if (!m) return NULL;
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
