/*
 * andrea_tokenizer.h - text <-> token ids, and token files on disk.
 *
 * Usage (error handling elided; calls that can fail return non-zero or NULL
 * and leave a one-line message in andrea_error()):
 *
 *     andrea_tokenizer *tok = andrea_tokenizer_open("gpt2:../shared/data/gpt2");
 *     andrea_ids ids = {0};
 *     andrea_tokenizer_encode(tok, "Hello world", 11, 0, &ids);   // appends
 *     andrea_bytes text = {0};
 *     andrea_tokenizer_decode(tok, ids.data, ids.len, &text);     // appends
 *     andrea_ids_free(&ids); andrea_bytes_free(&text);
 *     andrea_tokenizer_free(tok);
 *
 * Kinds (docs/tokenizers.md explains each with a worked example):
 *   byte    256 byte tokens + BOS 256 (V = 257), the default
 *   char    the sorted distinct characters of a training text, then BOS
 *   bpe     byte-level BPE trained here: bytes 0..255, BOS 256, merges 257..
 *   gpt2    OpenAI's GPT-2 BPE (encoder.json + vocab.bpe), BOS = <|endoftext|>
 *   harris  Harris morpheme segments: bytes 0..255, BOS 256, segments 257..
 *
 * Every tokenizer is lossless: decode(encode(x)) == x for every byte string x
 * it accepts (all of them except for char, which rejects characters it has
 * never seen). Every tokenizer serializes to a self-checking byte blob (the
 * .tok file format) so a checkpoint can embed it; andrea_tokenizer_checksum()
 * is the 64-bit identity of that blob.
 *
 * Threads: a tokenizer object may be read by many threads, but encode() uses
 * a per-object cache, so give each encoding thread its own object.
 */
#ifndef ANDREA_TOKENIZER_H
#define ANDREA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "andrea.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds beyond ANDREA_TOK_BYTE (declared in andrea.h). Stored in files: never renumber. */
enum {
    ANDREA_TOK_CHAR = 2,
    ANDREA_TOK_BPE = 3,
    ANDREA_TOK_GPT2 = 4,
    ANDREA_TOK_HARRIS = 5,
};

/* Growable arrays that encode/decode append to. Zero-initialise, free with *_free. */
typedef struct {
    int32_t *data;
    size_t len, cap;
} andrea_ids;
typedef struct {
    uint8_t *data;
    size_t len, cap;
} andrea_bytes;
void andrea_ids_free(andrea_ids *v);
void andrea_bytes_free(andrea_bytes *b);
int andrea_ids_push(andrea_ids *v, int32_t id);
int andrea_bytes_append(andrea_bytes *b, const void *p, size_t n);

typedef struct andrea_tokenizer andrea_tokenizer;

/* ---- making one ------------------------------------------------------------- */

/* "byte" | "gpt2" (files from $ANDREA_DATA_DIR/gpt2 or ../shared/data/gpt2) |
 * "gpt2:DIR" | a .tok file | a harris_segments.json file. */
andrea_tokenizer *andrea_tokenizer_open(const char *spec);
andrea_tokenizer *andrea_tokenizer_byte(void);
/* GPT-2 from OpenAI's two files. Needs PCRE2 and jansson at build time. */
andrea_tokenizer *andrea_tokenizer_gpt2_load(const char *encoder_json, const char *vocab_bpe);
/* Sorted distinct code points of a UTF-8 text (invalid UTF-8 is an error). */
andrea_tokenizer *andrea_tokenizer_char_train(const void *text, size_t n);

/* Progress of a long job, one line of text without a newline; the library never
 * prints, so a front end that wants progress passes a function that does. */
typedef void (*andrea_tokenizer_progress_fn)(void *user, const char *line);

typedef struct {
    int32_t vocab_size;    /* total V including 256 bytes and BOS; >= 257 */
    int64_t min_frequency; /* stop when the best pair occurs fewer times (2) */
    size_t max_pieces;     /* cap on distinct pre-tokenized pieces kept (bounded memory) */
    andrea_tokenizer_progress_fn progress; /* NULL (the default): quiet */
    void *progress_user;
} andrea_bpe_train_options;
void andrea_bpe_train_options_default(andrea_bpe_train_options *o);
/* Byte-level BPE with GPT-2's pre-tokenization. Needs PCRE2. */
andrea_tokenizer *andrea_tokenizer_bpe_train(const void *text, size_t n,
                                             const andrea_bpe_train_options *o);

typedef struct {
    int32_t n_segments;   /* N: V = N + 256 + 1 */
    int32_t min_variety;  /* a spike must reach this successor/predecessor variety (20) */
    int64_t min_count;    /* keep segments seen at least this often (2) */
    int32_t max_len;      /* longest segment in bytes, leading space included (16) */
    andrea_tokenizer_progress_fn progress; /* NULL (the default): quiet */
    void *progress_user;
} andrea_harris_train_options;
void andrea_harris_train_options_default(andrea_harris_train_options *o);
andrea_tokenizer *andrea_tokenizer_harris_train(const void *text, size_t n,
                                                const andrea_harris_train_options *o);
/* harris_segments.json: {"format":"andrea-harris-segments","version":1,
 * "first_segment_id":257,"bos_id":256,"segments":[...]}; a plain JSON array of
 * strings is accepted on import too. Segment i gets id 257 + i. */
andrea_tokenizer *andrea_tokenizer_harris_import(const char *json_path);
int andrea_tokenizer_harris_export(const andrea_tokenizer *t, const char *json_path);

void andrea_tokenizer_free(andrea_tokenizer *t);

/* ---- files and blobs ---------------------------------------------------------- */

/* The .tok format: magic "ANDRTOK\0", u32 version, u32 kind, u32 vocab, u32 bos,
 * u64 payload bytes, payload (little-endian). Every field is checked on load. */
int andrea_tokenizer_save(const andrea_tokenizer *t, const char *path);
andrea_tokenizer *andrea_tokenizer_load(const char *path);
int andrea_tokenizer_serialize(const andrea_tokenizer *t, andrea_bytes *out); /* appends */
/* `what` names the blob in error messages (a path, "checkpoint ..."). */
andrea_tokenizer *andrea_tokenizer_deserialize(const void *blob, size_t n, const char *what);

/* ---- using one ----------------------------------------------------------------- */

int andrea_tokenizer_kind(const andrea_tokenizer *t);
const char *andrea_tokenizer_kind_name(int kind); /* "byte", "char", ... */
int32_t andrea_tokenizer_vocab_size(const andrea_tokenizer *t);
int32_t andrea_tokenizer_bos(const andrea_tokenizer *t);
/* FNV-1a 64 of the serialized blob: equal checksums mean identical tokenizers. */
uint64_t andrea_tokenizer_checksum(const andrea_tokenizer *t);

/* Encode flag: GPT-2 only (an error for the other kinds); the text "<|endoftext|>"
 * becomes token 50256 instead of being encoded as ordinary characters. */
#define ANDREA_ENCODE_SPECIAL 1

/* Appends the ids of text[0..n) to out. Returns 0, or -1 with andrea_error(). */
int andrea_tokenizer_encode(const andrea_tokenizer *t, const void *text, size_t n, int flags,
                            andrea_ids *out);
/* The same, for a part of a longer text that starts at byte `base` of the whole
 * (a file read in blocks cut at andrea_tokenizer_safe_cut): error messages name
 * offsets in the whole text ("character U+00E9 at byte offset 5000000"). */
int andrea_tokenizer_encode_part(const andrea_tokenizer *t, const void *text, size_t n,
                                 uint64_t base, int flags, andrea_ids *out);
/* Appends the bytes of ids to out. BOS decodes to "<|endoftext|>" for gpt2 and to
 * nothing for the other kinds. Returns -1 on an id outside [0, V). */
int andrea_tokenizer_decode(const andrea_tokenizer *t, const int32_t *ids, size_t n,
                            andrea_bytes *out);
/* Where a long text may be split so that encoding the parts gives the same ids
 * as encoding the whole: the largest k < n such that text[k] == '\n' and
 * text[k + 1] is a visible ASCII character (GPT-2's regex never joins pieces
 * across that point, and no trained segment contains '\n'). 0 if there is none.
 * Reads text[0 .. n), so pass one byte more than the part you want to cut.
 * The promise holds for encoding with the same flags: andrea_tokenizer_safe_cut is for
 * flags 0; for GPT-2 with ANDREA_ENCODE_SPECIAL use andrea_tokenizer_safe_cut_flags,
 * which also skips a '\n' followed by '<' ("\n\n<|endoftext|>" is one piece then). */
size_t andrea_tokenizer_safe_cut(const void *text, size_t n);
size_t andrea_tokenizer_safe_cut_flags(const void *text, size_t n, int flags);
/* The bytes of one token (owned by t), for streaming output; NULL if id is out of range. */
const uint8_t *andrea_tokenizer_token_bytes(const andrea_tokenizer *t, int32_t id, size_t *len);

/* ---- token files ------------------------------------------------------------------ */

/* Layout (little-endian): magic "ANDRTOKS", u32 version (1), u32 header bytes (64),
 * u32 vocab size, u32 bytes per token (2 when V <= 65536, else 4), u64 token count,
 * u64 tokenizer checksum, u32 bos, 20 zero bytes; then the tokens. */
typedef struct andrea_token_writer andrea_token_writer;
andrea_token_writer *andrea_token_writer_create(const char *path, const andrea_tokenizer *t);
int andrea_token_writer_write(andrea_token_writer *w, const int32_t *ids, size_t n);
uint64_t andrea_token_writer_count(const andrea_token_writer *w);
/* Patches the token count into the header and closes; frees w even on error. */
int andrea_token_writer_close(andrea_token_writer *w);

typedef struct andrea_token_file andrea_token_file;
/* Maps the file read-only and checks magic, version, sizes and file length; with
 * check_ids every token is also checked to be < vocab size. */
andrea_token_file *andrea_token_file_open(const char *path, int check_ids);
void andrea_token_file_close(andrea_token_file *f);
uint64_t andrea_token_file_count(const andrea_token_file *f);
int32_t andrea_token_file_vocab(const andrea_token_file *f);
int32_t andrea_token_file_bos(const andrea_token_file *f);
uint64_t andrea_token_file_checksum(const andrea_token_file *f);
/* Copies tokens [start, start + n) into out (int32). Returns -1 when out of range. */
int andrea_token_file_read(const andrea_token_file *f, uint64_t start, size_t n, int32_t *out);

#ifdef __cplusplus
}
#endif
#endif /* ANDREA_TOKENIZER_H */
