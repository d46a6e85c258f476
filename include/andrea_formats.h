/*
 * andrea_formats.h - models in other programs' files: Hugging Face safetensors,
 * GGUF (what llama.cpp runs) and llm.c checkpoints, read and written.
 *
 * Usage (error handling elided; calls that can fail return non-zero or NULL
 * and leave a one-line message in andrea_error()):
 *
 *     andrea_tokenizer *tok;
 *     andrea_model *m = andrea_model_load_any("gpt2.safetensors", &tok);
 *     andrea_gguf_save("gpt2.gguf", m, tok, ANDREA_DTYPE_Q8_0);
 *     andrea_model_free(m); andrea_tokenizer_free(tok);
 *
 * What each format carries (docs/formats.md has the details and the tolerances):
 *   safetensors  every architecture. GPT-2-style models (LayerNorm, GELU, biases,
 *                tied head) under Hugging Face's GPT-2 names by default (Conv1D
 *                weights stored (in, out)), any model under andrea's own names;
 *                the config in __metadata__. The tokenizer goes beside the file:
 *                vocab.json + merges.txt (byte-level BPE kinds) and tokenizer.tok.
 *   gguf         llama.cpp's `gpt2` architecture (LayerNorm, GELU, learned
 *                positions; a missing bias is written as zeros, an untied head as
 *                output.weight), f32, f16 or q8_0, with the tokenizer inside.
 *                ANDREA's own architecture is refused: no llama.cpp architecture
 *                computes it (see docs/formats.md for the survey).
 *   llmc         llm.c's gpt2_124M.bin layout (version 3 f32; version 5 bf16 read):
 *                GPT-2 architecture only, no tokenizer.
 *   andrea       andrea's own checkpoint (weights and tokenizer, no optimizer state).
 *
 * Readers check every size and offset against the file before trusting it; the
 * *_parse functions read from memory (what the fuzz harnesses drive).
 */
#ifndef ANDREA_FORMATS_H
#define ANDREA_FORMATS_H

#include <stddef.h>
#include <stdint.h>

#include "andrea.h"
#include "andrea_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    ANDREA_FORMAT_UNKNOWN = 0,
    ANDREA_FORMAT_ANDREA = 1,
    ANDREA_FORMAT_SAFETENSORS = 2,
    ANDREA_FORMAT_GGUF = 3,
    ANDREA_FORMAT_LLMC = 4,
};
/* Tensor storage types of the writers (GGUF: all three; others: f32). */
enum { ANDREA_DTYPE_F32 = 0, ANDREA_DTYPE_F16 = 1, ANDREA_DTYPE_Q8_0 = 2, ANDREA_DTYPE_Q4_0 = 3 };
/* safetensors tensor names: HF's GPT-2 names when the architecture allows, else andrea's. */
enum { ANDREA_NAMES_AUTO = 0, ANDREA_NAMES_HF = 1, ANDREA_NAMES_ANDREA = 2 };

/* "andrea", "safetensors", "gguf", "llmc" -> ANDREA_FORMAT_*; -1 with a message otherwise. */
int andrea_format_parse(const char *s, int *out);
const char *andrea_format_name(int format);
/* The format of an existing file from its first bytes (magic numbers), else
 * ANDREA_FORMAT_UNKNOWN with a message. */
int andrea_format_sniff(const char *path);
/* The format a new file gets from its extension (.safetensors, .gguf, .ckpt/.andrea =
 * andrea); ANDREA_FORMAT_UNKNOWN if the extension says nothing (.bin is both llm.c's
 * and andrea's checkpoint extension: the caller must say which). */
int andrea_format_from_extension(const char *path);
int andrea_dtype_parse(const char *s, int *out); /* "f32", "f16", "q8_0", "q4_0" */
const char *andrea_dtype_name(int dtype);

/* Any of the four formats, told apart by magic. tok may be NULL; otherwise it
 * receives the tokenizer that travels with the model (NULL when none does). */
andrea_model *andrea_model_load_any(const char *path, andrea_tokenizer **tok);
/* Writes m (and tok where the format carries one; may be NULL) as `format`. */
int andrea_model_save_as(const char *path, int format, const andrea_model *m,
                         const andrea_tokenizer *tok, int dtype, int names);

/* ---- safetensors ------------------------------------------------------------------ */
int andrea_safetensors_save(const char *path, const andrea_model *m, const andrea_tokenizer *tok,
                            int names);
/* Reads path; the tokenizer (if tok) from tokenizer.tok or vocab.json + merges.txt
 * beside it; a config.json beside a Hugging Face file gives n_head and the epsilon. */
andrea_model *andrea_safetensors_load(const char *path, andrea_tokenizer **tok);
/* n_head: used only when the file has no andrea metadata (0: d_model / 64). */
andrea_model *andrea_safetensors_parse(const void *buf, size_t n, const char *what, int n_head,
                                       float norm_eps);

/* ---- GGUF --------------------------------------------------------------------------- */
/* Refuses (with the reason) a model llama.cpp's gpt2 architecture cannot compute. */
int andrea_gguf_check_arch(const andrea_config *c);
int andrea_gguf_save(const char *path, const andrea_model *m, const andrea_tokenizer *tok,
                     int dtype);
andrea_model *andrea_gguf_load(const char *path, andrea_tokenizer **tok);
andrea_model *andrea_gguf_parse(const void *buf, size_t n, const char *what,
                                andrea_tokenizer **tok);

/* ---- llm.c --------------------------------------------------------------------------- */
int andrea_llmc_save(const char *path, const andrea_model *m);
andrea_model *andrea_llmc_load(const char *path);
andrea_model *andrea_llmc_parse(const void *buf, size_t n, const char *what);

/* ---- ANDREA's flat checkpoint ([int32 step][int32 n][f32 weights][m][v]) ---------------
 * ANDREA's parameter order (wte, wpe, per layer Wq Wk Wv Wo fc1 fc2, lm_head), no norm
 * gains: reading sets andrea's gains to 1, writing folds them into the matrices they feed
 * (docs/formats.md). The tokenizer is ANDREA's harris_segments.json, kept beside. */
typedef struct {
    int32_t step;
    int64_t n_params;
    int has_moments;     /* the file holds m and v (else weights only: moments read as 0) */
    float max_gain_dev;  /* written: the largest |gain - 1| folded (0 = exact, moments too) */
} andrea_flat_info;
/* Parameters of cfg in the flat file; -1 (with a message) if the architecture is not
 * ANDREA's (RMSNorm, no biases, untied head). */
int64_t andrea_flat_num_params(const andrea_config *cfg);
/* ANDREA's preset (12M, 120M, 480M) with vocabulary `vocab` that has n_params. */
int andrea_flat_guess_config(int64_t n_params, int32_t vocab, andrea_config *out);
/* The header, checked against the file's size (8 + 12 n, or 8 + 4 n for weights only). */
int andrea_flat_peek(const char *path, andrea_flat_info *info);
/* adam_m, adam_v may be NULL; otherwise malloc'd moments in andrea's layout. */
andrea_model *andrea_flat_load(const char *path, const andrea_config *cfg, float **adam_m,
                               float **adam_v, andrea_flat_info *info);
/* adam_m, adam_v NULL: written as zeros. */
int andrea_flat_save(const char *path, const andrea_model *m, const float *adam_m,
                     const float *adam_v, int32_t step, andrea_flat_info *info);
/* A flat file to a training checkpoint (weights, moments, step; default options; with
 * data_path, that data's batch position) that `andrea train --resume` continues. */
int andrea_flat_to_checkpoint(const char *flat, const char *out, const andrea_config *cfg,
                              const char *tok_spec, const char *data_path,
                              andrea_flat_info *info);
/* A training checkpoint (moments and step included) to a flat file. */
int andrea_checkpoint_to_flat(const char *ckpt, const char *out, andrea_flat_info *info);

/* ---- andrea checkpoints (weights + tokenizer, no optimizer state) ------------------- */
int andrea_checkpoint_save_model(const char *path, const andrea_model *m,
                                 const andrea_tokenizer *tok);

#ifdef __cplusplus
}
#endif
#endif /* ANDREA_FORMATS_H */
