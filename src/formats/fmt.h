/* fmt.h - what the format readers and writers share: a bounds-checked cursor over
 * an in-memory file, a growable output buffer written atomically, tensor names of
 * the three foreign schemes, f16/bf16/q8_0 codecs and GPT-2's byte <-> character
 * table for tokenizers. Internal to src/formats. */
#ifndef ANDREA_FORMATS_FMT_H
#define ANDREA_FORMATS_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "andrea_formats.h"
#include "model/model.h"

/* ---- reading: every access checked against the end --------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t n, pos;
    const char *what; /* the file's name in messages */
} andrea_rd;

/* Each returns 0, or -1 with "WHAT: truncated at byte POS reading FIELD". */
int andrea_rd_bytes(andrea_rd *r, size_t n, const uint8_t **out, const char *field);
int andrea_rd_u32(andrea_rd *r, uint32_t *v, const char *field);
int andrea_rd_u64(andrea_rd *r, uint64_t *v, const char *field);

/* The whole file into memory (malloc'd). Refuses files above 64 GiB. */
int andrea_fmt_slurp(const char *path, uint8_t **data, size_t *n);

/* ---- writing: build in memory, then temp file + rename ------------------------------ */

typedef struct {
    uint8_t *p;
    size_t n, cap;
    int oom;         /* sticky: set by the first failed growth */
} andrea_wbuf;
void andrea_wb_put(andrea_wbuf *w, const void *p, size_t n);
void andrea_wb_u32(andrea_wbuf *w, uint32_t v);
void andrea_wb_u64(andrea_wbuf *w, uint64_t v);
void andrea_wb_f32(andrea_wbuf *w, float v);
void andrea_wb_str(andrea_wbuf *w, const char *s); /* the bytes, no terminator */
void andrea_wb_zeros(andrea_wbuf *w, size_t n);
void andrea_wb_free(andrea_wbuf *w);
/* Writes w to path atomically (path.tmp, then rename); frees nothing. */
int andrea_wb_save(const andrea_wbuf *w, const char *path);

/* ---- tensor names -------------------------------------------------------------------- */

enum { ANDREA_SCHEME_HF = 1, ANDREA_SCHEME_GGUF = 2 };
/* The foreign name of andrea's tensor `name` ("h.3.attn.wqkv") in a scheme, and whether
 * the foreign tensor is stored transposed ((in, out): HF's Conv1D). 0, or -1 if the
 * scheme has no such tensor. */
int andrea_fmt_foreign_name(const char *name, int scheme, char *out, size_t n, int *transposed);
/* 1 if cfg is exactly GPT-2's architecture (LayerNorm, GELU, biases, tied head). */
int andrea_fmt_is_gpt2(const andrea_config *c);

/* ---- number formats -------------------------------------------------------------------- */

/* A file decodes at its own precision (andrea_model_native_quant) only if every matrix is
 * in it: so_far (-1 before the first matrix) merged with the next matrix's kind. */
static inline int andrea_fmt_native_merge(int so_far, int kind) {
    return so_far < 0 || so_far == kind ? kind : ANDREA_QUANT_NONE;
}
uint16_t andrea_f32_to_f16(float f); /* round to nearest even, overflow to inf */
float andrea_f16_to_f32(uint16_t h);
float andrea_bf16_to_f32(uint16_t h);
/* q8_0: blocks of 32 values, an f16 scale d = max|x| / 127 and 32 int8 (ggml's rule). */
#define ANDREA_Q8_0_BLOCK 32
#define ANDREA_Q8_0_BYTES 34
void andrea_q8_0_quantize(const float *x, uint8_t *out, int64_t n); /* n % 32 == 0 */
void andrea_q8_0_dequantize(const uint8_t *q, float *out, int64_t n);
/* q4_0: blocks of 32 values, an f16 scale d = (the value of largest |x|) / -8, then 16
 * bytes whose low nibbles hold q[0..15] and high nibbles q[16..31], x = (q - 8) d. */
#define ANDREA_Q4_0_BLOCK 32
#define ANDREA_Q4_0_BYTES 18
void andrea_q4_0_quantize(const float *x, uint8_t *out, int64_t n); /* n % 32 == 0 */
void andrea_q4_0_dequantize(const uint8_t *q, float *out, int64_t n);

/* ---- tokenizers as byte-level BPE strings (GGUF's gpt2 model, HF vocab.json) ---------- */

/* GPT-2's bytes_to_unicode(): the UTF-8 of the character standing for byte b (1-2 bytes). */
int andrea_fmt_byte_char(uint8_t b, char out[3]);
/* The token's bytes as those characters, NUL-terminated, in out (cap bytes); BOS
 * becomes "<|endoftext|>". -1 if it does not fit. */
int andrea_fmt_token_string(const andrea_tokenizer *t, int32_t id, char *out, size_t cap);
/* The merges of a bpe/gpt2 tokenizer (a, b, result), from its serialized blob. malloc'd. */
int andrea_fmt_tok_merges(const andrea_tokenizer *t, int32_t **merges, int32_t *n_merges);
/* 1 if the tokenizer is byte-level BPE (byte, bpe, gpt2): expressible as strings + merges. */
int andrea_fmt_tok_is_bpe(const andrea_tokenizer *t);
/* Rebuilds a tokenizer of `kind` from token strings and "A B" merge strings
 * (strings[i] has lens[i] bytes; merges likewise). */
andrea_tokenizer *andrea_fmt_tok_from_strings(int kind, int32_t vocab, int32_t bos,
                                              const uint8_t *const *strs, const uint64_t *lens,
                                              const uint8_t *const *merges,
                                              const uint64_t *mlens, int64_t n_merges,
                                              const char *what);

/* safetensors_files.c: tokenizer.tok (+ vocab.json, merges.txt) beside a model file. */
int andrea_st_write_tokenizer_files(const char *path, const andrea_tokenizer *tok);

/* ---- helpers --------------------------------------------------------------------------- */

/* The andrea_model of cfg with every tensor filled by fill(ctx, tensor, dst);
 * NULL (message from fill) when fill fails. Refuses configs with more parameters
 * than file_bytes (the file could not hold them). */
typedef int (*andrea_fill_fn)(void *ctx, const andrea_tensor_info *t, float *dst);
andrea_model *andrea_fmt_build(const andrea_config *cfg, andrea_fill_fn fill, void *ctx,
                               const char *what, size_t file_bytes);
/* Up to 80 bytes of s for an error message: bytes outside printable ASCII become '?',
 * so a hostile name can never break the message's one line. Returns out. */
const char *andrea_fmt_printable(const void *s, size_t n, char out[84]);
/* path's directory + "/" + name into out. */
void andrea_fmt_sibling(const char *path, const char *name, char *out, size_t n);

#endif
