/* ckpt_stream.c - see ckpt_stream.h. */
#include "train/checkpoint/ckpt_stream.h"

#include "backend/tensor_io.h"

#include <string.h>

#include "util/hash.h"
#include "util/le.h"

void andrea_ckpt_wopen(andrea_ckpt_stream *s, FILE *f) {
    s->f = f;
    s->hash = ANDREA_HASH_INIT;
    s->pos = 0;
    s->fill = 0;
    s->err = 0;
}

static void wflush(andrea_ckpt_stream *s) {
    if (!s->fill) return;
    s->hash = andrea_hash(s->hash, s->buf, s->fill);
    if (!s->err && fwrite(s->buf, 1, s->fill, s->f) != s->fill) s->err = 1;
    s->fill = 0;
}

void andrea_ckpt_write(andrea_ckpt_stream *s, const void *p, size_t n) {
    const uint8_t *b = p;
    s->pos += n;
    while (n) {
        size_t k = sizeof s->buf - s->fill < n ? sizeof s->buf - s->fill : n;
        memcpy(s->buf + s->fill, b, k);
        s->fill += k;
        b += k;
        n -= k;
        if (s->fill == sizeof s->buf) wflush(s);
    }
}

void andrea_ckpt_write_f32(andrea_ckpt_stream *s, const float *x, uint64_t n) {
    uint8_t tmp[4096];
    while (n) {
        size_t k = n < sizeof tmp / 4 ? (size_t)n : sizeof tmp / 4;
        for (size_t i = 0; i < k; i++) put_f32(tmp + 4 * i, x[i]);
        andrea_ckpt_write(s, tmp, 4 * k);
        x += k;
        n -= k;
    }
}

int andrea_ckpt_wclose(andrea_ckpt_stream *s) {
    wflush(s); /* the file is 8-aligned here, so every hashed chunk was whole words */
    uint8_t h[8];
    put_u64(h, s->hash);
    if (!s->err && fwrite(h, 1, 8, s->f) != 8) s->err = 1;
    return s->err ? -1 : 0;
}

void andrea_ckpt_ropen(andrea_ckpt_stream *s, FILE *f, uint64_t hashed_end) {
    andrea_ckpt_wopen(s, f);
    s->at = 0;
    s->end = hashed_end;
}

/* Refills from the file, never past the hashed region; chunks stay 8-byte aligned. */
static int refill(andrea_ckpt_stream *s) {
    uint64_t file_pos = s->pos + (s->fill - s->at);
    uint64_t left = s->end - file_pos;
    if (left == 0) return -1;
    size_t k = left < sizeof s->buf ? (size_t)left : sizeof s->buf;
    if (fread(s->buf, 1, k, s->f) != k) return -1;
    s->hash = andrea_hash(s->hash, s->buf, k);
    s->fill = k;
    s->at = 0;
    return 0;
}

int andrea_ckpt_read(andrea_ckpt_stream *s, void *p, size_t n) {
    uint8_t *b = p;
    while (n) {
        if (s->at == s->fill && refill(s)) return -1;
        size_t k = s->fill - s->at < n ? s->fill - s->at : n;
        if (b) {
            memcpy(b, s->buf + s->at, k);
            b += k;
        }
        s->at += k;
        s->pos += k;
        n -= k;
    }
    return 0;
}

int andrea_ckpt_skip(andrea_ckpt_stream *s, uint64_t n) {
    while (n) {
        size_t k = n < (1u << 30) ? (size_t)n : (1u << 30);
        if (andrea_ckpt_read(s, NULL, k)) return -1;
        n -= k;
    }
    return 0;
}

int andrea_ckpt_read_f32(andrea_ckpt_stream *s, float *x, uint64_t n) {
    uint8_t tmp[4096];
    while (n) {
        size_t k = n < sizeof tmp / 4 ? (size_t)n : sizeof tmp / 4;
        if (andrea_ckpt_read(s, tmp, 4 * k)) return -1;
        for (size_t i = 0; i < k; i++) x[i] = get_f32(tmp + 4 * i);
        x += k;
        n -= k;
    }
    return 0;
}

int andrea_ckpt_rcheck(andrea_ckpt_stream *s) {
    uint8_t h[8];
    if (s->pos != s->end || fread(h, 1, 8, s->f) != 8) return -1;
    return get_u64(h) == s->hash;
}

static int write_chunk(void *user, const float *chunk, size_t k, size_t at) {
    (void)at;
    andrea_ckpt_write_f32(user, chunk, k);
    return 0;
}
void andrea_ckpt_write_tensor(andrea_ckpt_stream *s, be_t be, const float *x, uint64_t n) {
    if (andrea_tio_each(be, x, (size_t)n, write_chunk, s)) s->err = 1;
}

static int read_chunk(void *user, float *chunk, size_t k, size_t at) {
    (void)at;
    return andrea_ckpt_read_f32(user, chunk, k);
}
int andrea_ckpt_read_tensor(andrea_ckpt_stream *s, be_t be, float *x, uint64_t n) {
    return andrea_tio_fill(be, x, (size_t)n, read_chunk, s);
}
