/*
 * ckpt_stream.h - buffered, hashing reads and writes for checkpoint files: every byte
 * before the trailing checksum goes through andrea_hash (FNV-1a over little-endian 64-bit
 * words) in 8-byte-aligned chunks, and floats are converted to and from little-endian.
 */
#ifndef ANDREA_TRAIN_CKPT_STREAM_H
#define ANDREA_TRAIN_CKPT_STREAM_H

#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"

#define ANDREA_CKPT_CHUNK 65536 /* a multiple of 8: hashing needs whole words */

typedef struct {
    FILE *f;
    uint64_t hash, pos; /* pos: bytes written (or consumed) so far */
    uint8_t buf[ANDREA_CKPT_CHUNK];
    size_t fill;        /* writer: bytes waiting; reader: bytes available */
    size_t at;          /* reader: next byte in buf */
    uint64_t end;       /* reader: hashed bytes end here (the checksum follows) */
    int err;
} andrea_ckpt_stream;

void andrea_ckpt_wopen(andrea_ckpt_stream *s, FILE *f);
void andrea_ckpt_write(andrea_ckpt_stream *s, const void *p, size_t n);
void andrea_ckpt_write_f32(andrea_ckpt_stream *s, const float *x, uint64_t n);
/* n floats of backend memory x, staged through host memory in bounded chunks */
void andrea_ckpt_write_tensor(andrea_ckpt_stream *s, be_t be, const float *x, uint64_t n);
/* Writes the buffer out, then the checksum of everything; 0 or -1. */
int andrea_ckpt_wclose(andrea_ckpt_stream *s);

void andrea_ckpt_ropen(andrea_ckpt_stream *s, FILE *f, uint64_t hashed_end);
int andrea_ckpt_read(andrea_ckpt_stream *s, void *p, size_t n);
int andrea_ckpt_read_f32(andrea_ckpt_stream *s, float *x, uint64_t n);
int andrea_ckpt_read_tensor(andrea_ckpt_stream *s, be_t be, float *x, uint64_t n);
int andrea_ckpt_skip(andrea_ckpt_stream *s, uint64_t n);
/* After the last section: reads the stored checksum; 1 if it matches, 0 if not, -1 on a
 * read error. */
int andrea_ckpt_rcheck(andrea_ckpt_stream *s);

#endif
