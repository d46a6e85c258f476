/*
 * checkpoint_v1.c - the legacy reader of version-1 checkpoints: a fixed 512-byte header
 * written in the host's byte order (always little-endian here: util/hash.c refuses to
 * build elsewhere), the tensors, the tokenizer blob and a checksum. Nothing writes this
 * format any more; docs/checkpoint.md keeps its layout.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "train/data/batch_source.h"
#include "train/checkpoint/ckpt_format.h"
#include "util/bigalloc.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/le.h"

#define V1_HEADER 512

static void decode_header(const uint8_t *h, andrea_config *c, andrea_ckpt_state *s) {
    int32_t *cfg_ints[] = {&c->n_layer, &c->n_head, &c->d_model, &c->ctx, &c->vocab,
                           &c->norm,    &c->act,    &c->bias,    &c->tied};
    for (int i = 0; i < 9; i++) *cfg_ints[i] = (int32_t)get_u32(h + 16 + 4 * i);
    c->norm_eps = get_f32(h + 52);
    c->init_std = get_f32(h + 56);
    s->tokenizer_kind = get_u32(h + 72);
    s->tokenizer_checksum = get_u64(h + 80);
    s->step = (int64_t)get_u64(h + 96);
    s->data_rng[0] = get_u64(h + 104);
    s->data_rng[1] = get_u64(h + 112);
    s->seed = get_u64(h + 120);
    s->data_checksum = get_u64(h + 128);
    s->best_val_loss = get_f32(h + 136);
    s->smooth_loss = get_f32(h + 140);
    int32_t *ints[] = {&s->batch,      &s->seq,          &s->grad_accum, &s->max_steps,
                       &s->warmup,     &s->eval_every,   &s->eval_batches, &s->ckpt_every,
                       &s->log_every,  &s->max_bad_steps};
    for (int i = 0; i < 10; i++) *ints[i] = (int32_t)get_u32(h + 144 + 4 * i);
    float *fl[] = {&s->lr,  &s->lr_min,       &s->beta1,     &s->beta2,
                   &s->eps, &s->weight_decay, &s->grad_clip, &s->val_fraction};
    for (int i = 0; i < 8; i++) *fl[i] = get_f32(h + 184 + 4 * i);
    s->sample_every = (int32_t)get_u32(h + 216);
    s->sample_tokens = (int32_t)get_u32(h + 220);
    s->gate_patience = (int32_t)get_u32(h + 224);
    s->gate_threshold = get_f32(h + 228);
    s->gate_fails = (int32_t)get_u32(h + 232);
    andrea_corpus_position_encode(s->data_checksum, s->data_rng, s->batch_pos);
    s->batch_pos_len = ANDREA_CORPUS_POS_BYTES;
    s->data_path[0] = '\0'; /* version 1 did not record it */
    s->version = 1;
}

static int read_exact(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n ? 0 : -1; }

int andrea_ckpt_v1_read(FILE *f, const char *path, uint64_t fsize, andrea_config *cfg,
                        andrea_ckpt_state *st, andrea_model **model, float **adam_m,
                        float **adam_v, void **blob, uint64_t *blob_len) {
    uint8_t hdr[V1_HEADER];
    if (fsize < V1_HEADER || fseek(f, 0, SEEK_SET) != 0 || read_exact(f, hdr, sizeof hdr))
        return andrea_set_error("checkpoint '%s': truncated header (%llu of %d bytes)", path,
                                (unsigned long long)fsize, V1_HEADER);
    if (get_u32(hdr + 12) != V1_HEADER)
        return andrea_set_error("checkpoint '%s': version 1 with a header of %u bytes (corrupt?)",
                                path, get_u32(hdr + 12));
    memset(st, 0, sizeof *st);
    decode_header(hdr, cfg, st);
    if (andrea_config_validate(cfg)) {
        return andrea_set_error("checkpoint '%s': %s", path, andrea_error());
    }
    if ((get_u32(hdr + 60) & ~1u) != 0 || get_u32(hdr + 76) != 0)
        return andrea_set_error("checkpoint '%s': reserved header bits are set (flags %08x, "
                                "reserved %08x; corrupt file?)", path, get_u32(hdr + 60),
                                get_u32(hdr + 76));
    int has_moments = get_u32(hdr + 60) & 1u;
    st->has_moments = has_moments;
    st->tokenizer_blob = get_u64(hdr + 88);
    if (!model) return 0;
    int64_t n = (int64_t)get_u64(hdr + 64);
    uint64_t blen = get_u64(hdr + 88);
    andrea_param_counts pc = andrea_config_param_counts(cfg);
    if (n != pc.total)
        return andrea_set_error("checkpoint '%s': header says %lld parameters but its config has "
                                "%lld (corrupt file?)", path, (long long)n, (long long)pc.total);
    uint64_t bytes = (uint64_t)n * 4;
    uint64_t want = V1_HEADER + bytes * (has_moments ? 3 : 1) + blen + 8;
    if (blen > (1ull << 32) || fsize != want)
        return andrea_set_error("checkpoint '%s': %s (%llu of %llu bytes); was it being written "
                                "when the run stopped?", path, fsize < want ? "truncated" : "too long",
                                (unsigned long long)fsize, (unsigned long long)want);
    /* pieces of whole words hash as the file does in one pass (see ckpt_check.c) */
    if (bytes % 8 == 0 && andrea_ckpt_check_holes(f, path, fsize)) return -1;
    andrea_model *m = andrea_model_alloc_on(cfg, &andrea_backend_cpu); /* host: read in place */
    if (!m) return -1;
    float *mm = NULL, *vv = NULL;
    void *bb = NULL;
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
    uint8_t stored[8];
    if (!bad) bad = read_exact(f, stored, 8);
    if (bad || get_u64(stored) != h) {
        andrea_set_error(bad ? "checkpoint '%s': read error" :
                               "checkpoint '%s': checksum mismatch (the file is corrupt)", path);
        andrea_model_free(m);
        free(mm);
        free(vv);
        free(bb);
        return -1;
    }
    *model = m;
    if (adam_m) *adam_m = mm; else free(mm);
    if (adam_v) *adam_v = vv; else free(vv);
    if (blob) *blob = bb; else free(bb);
    if (blob_len) *blob_len = blen;
    return 0;
}
