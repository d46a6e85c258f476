/* formats.c - which format a file is (magic first, extension for files not yet
 * written), and one load / one save that dispatch on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fmt.h"
#include "train/checkpoint/checkpoint.h"
#include "util/error.h"
#include "util/file.h"
#include "util/le.h"

static const char *const FORMAT_NAMES[] = {"unknown", "andrea", "safetensors", "gguf", "llmc"};
static const char *const DTYPE_NAMES[] = {"f32", "f16", "q8_0", "q4_0"};

const char *andrea_format_name(int f) { return f >= 0 && f <= 4 ? FORMAT_NAMES[f] : "unknown"; }
const char *andrea_dtype_name(int d) { return d >= 0 && d <= 3 ? DTYPE_NAMES[d] : "?"; }

int andrea_format_parse(const char *s, int *out) {
    for (int i = 1; i <= 4; i++)
        if (strcmp(s, FORMAT_NAMES[i]) == 0) return *out = i, 0;
    return andrea_set_error("unknown format '%s' (expected safetensors, gguf, llmc or andrea)", s);
}

int andrea_dtype_parse(const char *s, int *out) {
    for (int i = 0; i < 4; i++)
        if (strcmp(s, DTYPE_NAMES[i]) == 0) return *out = i, 0;
    return andrea_set_error("unknown tensor type '%s' (expected f32, f16, q8_0 or q4_0)", s);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int andrea_format_from_extension(const char *path) {
    if (ends_with(path, ".safetensors")) return ANDREA_FORMAT_SAFETENSORS;
    if (ends_with(path, ".gguf")) return ANDREA_FORMAT_GGUF;
    /* .bin is both llm.c's and andrea's (ckpt.bin): ambiguous, the caller must say */
    if (ends_with(path, ".ckpt") || ends_with(path, ".andrea")) return ANDREA_FORMAT_ANDREA;
    return ANDREA_FORMAT_UNKNOWN;
}

int andrea_format_sniff(const char *path) {
    uint64_t size;
    FILE *f = andrea_file_fopen_regular(path, "model file", 0, &size);
    if (!f) return ANDREA_FORMAT_UNKNOWN;
    uint8_t h[16] = {0};
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    if (n >= 8 && memcmp(h, ANDREA_CKPT_MAGIC, 8) == 0) return ANDREA_FORMAT_ANDREA;
    if (n >= 4 && memcmp(h, "GGUF", 4) == 0) return ANDREA_FORMAT_GGUF;
    if (n >= 4 && get_u32(h) == 20240326) return ANDREA_FORMAT_LLMC;
    /* safetensors: a u64 header length, then the JSON object's '{' */
    if (n >= 9 && h[8] == '{' && get_u64(h) >= 2) return ANDREA_FORMAT_SAFETENSORS;
    andrea_set_error("'%s': not a format andrea reads (andrea checkpoint, safetensors, GGUF, llm.c)",
                     path);
    return ANDREA_FORMAT_UNKNOWN;
}

andrea_model *andrea_model_load_any(const char *path, andrea_tokenizer **tok) {
    if (tok) *tok = NULL;
    switch (andrea_format_sniff(path)) {
    case ANDREA_FORMAT_ANDREA: {
        andrea_tokenizer *t = NULL;
        andrea_model *m = andrea_checkpoint_load_with_tokenizer(path, &t);
        if (tok) *tok = t;
        else andrea_tokenizer_free(t);
        return m;
    }
    case ANDREA_FORMAT_SAFETENSORS: return andrea_safetensors_load(path, tok);
    case ANDREA_FORMAT_GGUF: return andrea_gguf_load(path, tok);
    case ANDREA_FORMAT_LLMC: return andrea_llmc_load(path);
    default: {
        /* not one of the others: let the checkpoint reader say what is wrong in its words
         * (missing file, bad magic), then name the other formats tried */
        andrea_tokenizer *t = NULL;
        andrea_model *m = andrea_checkpoint_load_with_tokenizer(path, &t);
        if (m) {
            if (tok) *tok = t;
            else andrea_tokenizer_free(t);
            return m;
        }
        andrea_set_error("%s (nor safetensors, GGUF or llm.c)", andrea_error());
        return NULL;
    }
    }
}

int andrea_model_save_as(const char *path, int format, const andrea_model *m,
                         const andrea_tokenizer *tok, int dtype, int names) {
    if (dtype != ANDREA_DTYPE_F32 && format != ANDREA_FORMAT_GGUF)
        return andrea_set_error("'%s': tensor type %s is for GGUF; %s stores f32", path,
                                andrea_dtype_name(dtype), andrea_format_name(format));
    switch (format) {
    case ANDREA_FORMAT_ANDREA: return andrea_checkpoint_save_model(path, m, tok);
    case ANDREA_FORMAT_SAFETENSORS: return andrea_safetensors_save(path, m, tok, names);
    case ANDREA_FORMAT_GGUF: return andrea_gguf_save(path, m, tok, dtype);
    case ANDREA_FORMAT_LLMC: return andrea_llmc_save(path, m);
    default: return andrea_set_error("'%s': unknown output format", path);
    }
}

/* A weights-only andrea checkpoint: the tokenizer embedded, no optimizer moments, a
 * training state of zeros (resuming from it starts a fresh schedule). */
int andrea_checkpoint_save_model(const char *path, const andrea_model *m,
                                 const andrea_tokenizer *tok) {
    andrea_ckpt_state st;
    memset(&st, 0, sizeof st);
    andrea_bytes blob = {0};
    if (tok) {
        if (andrea_tokenizer_serialize(tok, &blob)) return -1;
        st.tokenizer_kind = (uint32_t)andrea_tokenizer_kind(tok);
        st.tokenizer_checksum = andrea_tokenizer_checksum(tok);
    }
    int rc = andrea_checkpoint_save(path, m, NULL, NULL, &st, blob.data, blob.len);
    andrea_bytes_free(&blob);
    return rc;
}
