/* ckpt_format.h - constants and helpers shared by the checkpoint writer and readers. */
#ifndef ANDREA_TRAIN_CKPT_FORMAT_H
#define ANDREA_TRAIN_CKPT_FORMAT_H

#include <stdint.h>
#include <stdio.h>

#include "andrea.h"
#include "andrea_tokenizer.h"
#include "train/checkpoint/checkpoint.h"

#define ANDREA_CKPT_PREAMBLE 24       /* magic, version, preamble size, file size */
#define ANDREA_CKPT_SECTION_HEADER 16 /* tag[4], u32 0, u64 payload length */
#define ANDREA_CKPT_CONF_BYTES 44

/* The preamble and every section before the tensors (CONF TOKN STAT OPTS BATC). */
int andrea_ckpt_encode_meta(andrea_bytes *b, const andrea_config *c, const andrea_ckpt_state *s,
                            const void *blob, uint64_t blob_len);

/* Version 1 (legacy, native byte order = little-endian on every host we build for):
 * reads a version-1 file of fsize bytes from its start. With model == NULL only the
 * header is read (peek); else *model, the moments (if adam_m/adam_v) and the blob (if
 * blob) are loaded. st is filled (options, position as a corpus position). 0 or -1. */
int andrea_ckpt_v1_read(FILE *f, const char *path, uint64_t fsize, andrea_config *cfg,
                        andrea_ckpt_state *st, andrea_model **model, float **adam_m,
                        float **adam_v, void **blob, uint64_t *blob_len);

/* ckpt_check.c. The run state a resume continues from: config floats finite, step >= 0,
 * every option finite and >= 0, seq <= ctx, a corpus position's RNG state not all zero.
 * 0, or -1 with a one-line error naming path. */
int andrea_ckpt_check_state(const char *path, const andrea_config *cfg,
                            const andrea_ckpt_state *s);
/* x[0..n) finite (and >= 0 if nonneg); -1 naming path, what and the first bad index. */
int andrea_ckpt_check_finite(const char *path, const char *what, const float *x, uint64_t n,
                             int nonneg);
/* The same for x in backend memory (a model's tensors, its moments): counted there. */
int andrea_ckpt_check_finite_be(const char *path, const char *what, const andrea_backend *be,
                                const float *x, uint64_t n, int nonneg);
/* A file with holes (SEEK_HOLE): checks the trailing checksum of [0, fsize - 8) reading
 * only its data, before anything is allocated. 0 when it matches or the file has no
 * holes (the normal read checks it then), -1 on a mismatch. */
int andrea_ckpt_check_holes(FILE *f, const char *path, uint64_t fsize);
#endif
