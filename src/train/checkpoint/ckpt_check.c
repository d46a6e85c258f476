/*
 * ckpt_check.c - the checks a checkpoint must pass beyond its structure, shared by the
 * version-1 and version-2 readers: the run state a resume continues from (every number
 * finite and in range), the tensors (finite: a loaded model never holds NaN or Inf), and,
 * for a file with holes, its checksum before anything is allocated for it.
 */
#define _GNU_SOURCE /* SEEK_DATA, SEEK_HOLE */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/tensor_io.h"
#include "train/data/batch_source.h"
#include "train/checkpoint/ckpt_format.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/le.h"

int andrea_ckpt_check_state(const char *path, const andrea_config *cfg,
                            const andrea_ckpt_state *s) {
    if (!isfinite(cfg->norm_eps) || !isfinite(cfg->init_std))
        return andrea_set_error("checkpoint '%s': norm_eps %g and init_std %g must be finite "
                                "(corrupt file?)", path, cfg->norm_eps, cfg->init_std);
    /* best: +Inf until the first validation, then a loss; smooth: NaN until the first
     * applied step (the one sentinel a STAT field may hold), then a loss. A NaN best would
     * make every later comparison false, and best.bin would never be written again. */
    if (isnan(s->best_val_loss) || s->best_val_loss < 0)
        return andrea_set_error("checkpoint '%s': its best validation loss is %g; it must be a "
                                "loss >= 0 or +inf (none yet) (corrupt file?)", path,
                                (double)s->best_val_loss);
    if (isinf(s->smooth_loss) || s->smooth_loss < 0)
        return andrea_set_error("checkpoint '%s': its smoothed training loss is %g; it must be a "
                                "finite loss >= 0, or NaN before the first step (corrupt file?)",
                                path, (double)s->smooth_loss);
    if (s->step < 0)
        return andrea_set_error("checkpoint '%s': negative step %lld (corrupt file?)", path,
                                (long long)s->step);
    /* The options a resume restores. 0 is what weights-only files written by tools hold;
     * the trainer validates the ranges of the options it then runs with. */
    const struct { const char *name; float v; } fl[] = {
        {"lr", s->lr},        {"lr-min", s->lr_min}, {"beta1", s->beta1},
        {"beta2", s->beta2},  {"eps", s->eps},       {"weight-decay", s->weight_decay},
        {"grad-clip", s->grad_clip}, {"val-fraction", s->val_fraction},
        {"gate-threshold", s->gate_threshold},
    };
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++)
        if (!(isfinite(fl[i].v) && fl[i].v >= 0))
            return andrea_set_error("checkpoint '%s': option %s is %g; it must be finite and >= 0 "
                                    "(corrupt file?)", path, fl[i].name, fl[i].v);
    const struct { const char *name; int32_t v; } in[] = {
        {"batch", s->batch},           {"seq", s->seq},
        {"grad-accum", s->grad_accum}, {"max-steps", s->max_steps},
        {"warmup", s->warmup},         {"eval-every", s->eval_every},
        {"eval-batches", s->eval_batches}, {"ckpt-every", s->ckpt_every},
        {"log-every", s->log_every},   {"max-bad-steps", s->max_bad_steps},
        {"sample-every", s->sample_every}, {"sample-tokens", s->sample_tokens},
        {"gate-patience", s->gate_patience}, {"gate fails", s->gate_fails},
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        if (in[i].v < 0)
            return andrea_set_error("checkpoint '%s': option %s is %d; it must be >= 0 (corrupt "
                                    "file?)", path, in[i].name, in[i].v);
    if (s->seq > cfg->ctx)
        return andrea_set_error("checkpoint '%s': seq %d is longer than its context %d (corrupt "
                                "file?)", path, s->seq, cfg->ctx);
    uint64_t sum, rng[2];
    /* xoroshiro128+ never leaves the all-zero state: a position on real data (its checksum
     * set; files written by tools hold no position, all zero) cannot have it */
    if (s->batch_pos_len &&
        andrea_corpus_position_decode(s->batch_pos, s->batch_pos_len, &sum, rng) == 0 &&
        sum != 0 && rng[0] == 0 && rng[1] == 0)
        return andrea_set_error("checkpoint '%s': its batch sampler state is all zero (corrupt "
                                "file?)", path);
    return 0;
}

int andrea_ckpt_check_finite(const char *path, const char *what, const float *x, uint64_t n,
                             int nonneg) {
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || (nonneg && x[i] < 0))
            return andrea_set_error("checkpoint '%s': %s %llu is %g; a checkpoint holds only "
                                    "finite numbers (a diverged run or a corrupt file)", path,
                                    what, (unsigned long long)i, (double)x[i]);
    return 0;
}

int andrea_ckpt_check_finite_be(const char *path, const char *what, const andrea_backend *be,
                                const float *x, uint64_t n, int nonneg) {
    float v;
    int64_t i = andrea_tio_first_nonfinite(be, x, (size_t)n, nonneg, &v);
    if (i < 0) return 0;
    return andrea_set_error("checkpoint '%s': %s %lld is %g; a checkpoint holds only finite "
                            "numbers (a diverged run or a corrupt file)", path, what,
                            (long long)i, (double)v);
}

/* FNV-1a over k zero words: each step is h = (h ^ 0) * P, so h * P^k (mod 2^64). */
static uint64_t hash_zero_words(uint64_t h, uint64_t k) {
    uint64_t p = 0x100000001b3ull;
    for (; k; k >>= 1, p *= p)
        if (k & 1) h *= p;
    return h;
}

/* Hashes [from, to) of fd, which holds data (to - from a multiple of 8, except at the end). */
static int hash_data(int fd, uint64_t from, uint64_t to, uint64_t *h) {
    static const size_t chunk = 1 << 20;
    uint8_t *buf = malloc(chunk);
    if (!buf) return -1;
    int rc = 0;
    while (rc == 0 && from < to) {
        size_t k = to - from < chunk ? (size_t)(to - from) : chunk;
        if (pread(fd, buf, k, (off_t)from) != (ssize_t)k) rc = -1;
        else *h = andrea_hash(*h, buf, k);
        from += k;
    }
    free(buf);
    return rc;
}

/* The check itself; moves the descriptor's offset. */
static int check_holes(FILE *f, const char *path, uint64_t fsize) {
    int fd = fileno(f);
    uint64_t end = fsize - 8, pos = 0, h = ANDREA_HASH_INIT;
    off_t hole = lseek(fd, 0, SEEK_HOLE);
    if (hole < 0 || (uint64_t)hole >= fsize) return 0; /* no holes (or no way to tell) */
    /* A file with holes reads back zeros that nothing wrote: a legitimate copy can be
     * sparse, but so is `truncate -s 10G` of a forged header. Check the checksum first,
     * reading only the data and hashing the holes arithmetically, so that such a file is
     * refused before gigabytes are allocated and read for it. */
    while (pos < end) {
        off_t d = lseek(fd, (off_t)pos, SEEK_DATA);
        uint64_t data = d < 0 ? end : (uint64_t)d < end ? (uint64_t)d : end;
        if (data > pos) { /* a hole */
            if ((data - pos) % 8 && data != end) return 0; /* not word-aligned: do not judge */
            h = hash_zero_words(h, (data - pos + 7) / 8); /* a last partial word is padded */
            pos = data;
            continue;
        }
        off_t e = lseek(fd, (off_t)pos, SEEK_HOLE);
        uint64_t stop = e < 0 || (uint64_t)e > end ? end : (uint64_t)e;
        if (stop <= pos || ((stop - pos) % 8 && stop != end)) return 0;
        if (hash_data(fd, pos, stop, &h)) return 0; /* the normal read reports it */
        pos = stop;
    }
    uint8_t stored[8];
    if (pread(fd, stored, 8, (off_t)end) != 8) return 0;
    if (get_u64(stored) != h)
        return andrea_set_error("checkpoint '%s': checksum mismatch (the file is corrupt; a "
                                "sparse file, checked before loading)", path);
    return 0;
}

int andrea_ckpt_check_holes(FILE *f, const char *path, uint64_t fsize) {
    off_t at = ftello(f); /* lseek moves the descriptor under the stream: put it back */
    int rc = check_holes(f, path, fsize);
    if (at < 0 || fseeko(f, at, SEEK_SET) != 0)
        rc = andrea_set_error("checkpoint '%s': seek error", path);
    return rc;
}
