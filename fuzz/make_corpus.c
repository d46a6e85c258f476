/* make_corpus.c - writes the fuzzers' seed files, so the fuzzers start from inputs that
 * parse all the way through: micro models (L 1, C 8 or 32 for q8_0's and q4_0's blocks, T 4, byte
 * tokenizer) in every format and tensor type; checkpoints (version 2, with and without
 * AdamW state and a char tokenizer); tokenizer blobs of every kind; token files; a
 * harris JSON; chat JSONL and text. Then the hostile inputs of issue 10 as regression
 * seeds (the BPE blob whose merges double a token's length, the harris blob that asked
 * for 8 GB, a checkpoint holding NaN). usage: make_corpus DIR (DIR/NAME must exist) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_formats.h"
#include "andrea_tokenizer.h"
#include "model/model.h"
#include "tokenizer/tok_internal.h"
#include "train/checkpoint/checkpoint.h"
#include "train/run_options.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/le.h"

static const char *dir;

static const char *out(const char *name) {
    static char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static int put(const char *name, const void *data, size_t n) {
    FILE *f = fopen(out(name), "wb");
    int rc = !f || fwrite(data, 1, n, f) != n;
    if (f) rc |= fclose(f) != 0;
    if (rc) fprintf(stderr, "make_corpus: cannot write %s\n", out(name));
    return rc ? -1 : 0;
}

static int put_tok(const char *name, const andrea_tokenizer *t) {
    andrea_bytes b = {0};
    int rc = !t || andrea_tokenizer_serialize(t, &b);
    char n1[256], n2[256];
    snprintf(n1, sizeof n1, "tok_blob/%s", name);
    snprintf(n2, sizeof n2, "tok_file/%s", name);
    if (!rc) rc = put(n1, b.data, b.len) || put(n2, b.data, b.len);
    andrea_bytes_free(&b);
    return rc;
}

static const char TEXT[] = "First Citizen:\nBefore we proceed any further, hear me speak.\n\n"
                           "All:\nSpeak, speak.\n\ncaf\xc3\xa9 na\xc3\xafve \xe2\x82\xac 42\n";

/* The BPE blob of the heap overflow: 32 merges, each doubling the last token, so the
 * 32nd token has 2^32 bytes and its uint32 length wrapped to 0 (1448 bytes). */
static int put_doubling_bpe(void) {
    uint8_t b[32 + 4 + 1024 + 32 * 12 + 4] = {0};
    memcpy(b, "ANDRTOK", 8);
    put_u32(b + 8, 1);
    put_u32(b + 12, ANDREA_TOK_BPE);
    put_u32(b + 16, 256 + 32 + 1);
    put_u32(b + 20, 256 + 32);
    put_u64(b + 24, sizeof b - 32);
    uint8_t *p = b + 32;
    put_u32(p, 32);
    for (int i = 0; i < 256; i++) put_u32(p + 4 + 4 * i, (uint32_t)i);
    for (int r = 0; r < 32; r++) {
        uint32_t a = r == 0 ? 'a' : 256 + (uint32_t)r - 1;
        put_u32(p + 1028 + 12 * r, a);
        put_u32(p + 1028 + 12 * r + 4, a);
        put_u32(p + 1028 + 12 * r + 8, 256 + (uint32_t)r);
    }
    return put("tok_blob/repro_bpe_doubling.tok", b, sizeof b) ||
           put("tok_file/repro_bpe_doubling.tok", b, sizeof b);
}

/* The 36-byte harris blob: vocab 2^30 and a payload of one count, which made the loader
 * allocate 8 GB of segment pointers before looking at the payload. */
static int put_harris_36(void) {
    uint8_t b[36] = {0};
    memcpy(b, "ANDRTOK", 8);
    put_u32(b + 8, 1);
    put_u32(b + 12, ANDREA_TOK_HARRIS);
    put_u32(b + 16, 1u << 30);
    put_u32(b + 20, 256);
    put_u64(b + 24, 4);
    put_u32(b + 32, (1u << 30) - 257);
    return put("tok_blob/repro_harris_36.tok", b, sizeof b) ||
           put("tok_file/repro_harris_36.tok", b, sizeof b);
}

/* The NaN guard's reproducer: a copy of a checkpoint with one parameter NaN and the
 * checksum recomputed (FNV is integrity, not authentication; the writer refuses NaN). */
static int put_nan_copy(const char *from, const char *to) {
    andrea_bytes b = {0};
    if (andrea_file_read(out(from), &b) || b.len < 40) return -1;
    size_t at = 24;
    while (at + 16 <= b.len - 8 && memcmp(b.data + at, "PARM", 4) != 0)
        at += 16 + (size_t)(get_u64(b.data + at + 8) + 7) / 8 * 8;
    int rc = -1;
    if (at + 16 + 24 <= b.len - 8) {
        put_f32(b.data + at + 16 + 4 * 5, NAN);
        put_u64(b.data + b.len - 8, andrea_hash(ANDREA_HASH_INIT, b.data, b.len - 8));
        rc = put(to, b.data, b.len);
    }
    andrea_bytes_free(&b);
    return rc;
}

static int put_checkpoints(void) {
    andrea_config c = {1, 1, 8, 4, 0, ANDREA_NORM_LAYER, ANDREA_ACT_GELU, 1, 1, 1e-5f, 0.02f};
    andrea_tokenizer *ch = andrea_tokenizer_char_train(TEXT, sizeof TEXT - 1);
    andrea_bytes blob = {0};
    if (!ch || andrea_tokenizer_serialize(ch, &blob)) return -1;
    c.vocab = andrea_tokenizer_vocab_size(ch);
    andrea_model *m = andrea_model_create(&c, 1);
    if (!m) return -1;
    int64_t n = andrea_config_param_counts(&c).total;
    float *mm = calloc((size_t)n, 4), *vv = calloc((size_t)n, 4);
    static andrea_ckpt_state st;
    andrea_train_options o;
    andrea_train_options_default(&o);
    o.seq = 4;
    o.data_path = "/data/text.txt";
    andrea_train_options_to_state(&o, &st);
    st.step = 3;
    st.data_checksum = 0x1234;
    st.data_rng[0] = 1;
    st.data_rng[1] = 2;
    st.best_val_loss = 2.5f;
    st.tokenizer_kind = (uint32_t)andrea_tokenizer_kind(ch);
    st.tokenizer_checksum = andrea_tokenizer_checksum(ch);
    for (int64_t i = 0; i < n; i++) {
        mm[i] = 1e-3f * (float)(i % 7);
        vv[i] = 1e-6f * (float)(i % 5);
    }
    int rc = andrea_checkpoint_save(out("checkpoint/full.bin"), m, mm, vv, &st, blob.data, blob.len);
    rc |= andrea_checkpoint_save(out("checkpoint/weights.bin"), m, NULL, NULL, &st, blob.data,
                                 blob.len);
    rc |= put_nan_copy("checkpoint/weights.bin", "checkpoint/repro_nan.bin");
    andrea_model_free(m);
    andrea_tokenizer_free(ch);
    andrea_bytes_free(&blob);
    free(mm);
    free(vv);
    return rc;
}

static int put_token_files(void) {
    andrea_tokenizer *byte = andrea_tokenizer_byte();
    andrea_token_writer *w = andrea_token_writer_create(out("token_file/byte.tokens"), byte);
    int32_t ids[64];
    for (int i = 0; i < 64; i++) ids[i] = i == 0 || i == 63 ? 256 : (uint8_t)TEXT[i];
    int rc = !w || andrea_token_writer_write(w, ids, 64) || andrea_token_writer_close(w);
    andrea_tokenizer_free(byte);
    return rc ? -1 : 0;
}

static int put_text(void) {
    static const char chat[] =
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", "
        "\"content\": \"Hello! \\u00e9\\n\"}]}\n"
        "{\"messages\": [{\"role\": \"user\", \"content\": \"2+2?\"}, {\"role\": \"assistant\", "
        "\"content\": \"4\"}]}\n";
    static const char harris[] =
        "{\"format\": \"andrea-harris-segments\", \"bos_id\": 256, \"first_segment_id\": 257, "
        "\"segments\": [\"the\", \"ing\", \"and\", \" of\", \"caf\\u00e9\"]}\n";
    return put("chat_jsonl/two.jsonl", chat, sizeof chat - 1) ||
           put("corpus/text.txt", TEXT, sizeof TEXT - 1) ||
           put("harris_json/segments.json", harris, sizeof harris - 1);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    dir = argv[1];
    andrea_config c = {1, 1, 8, 4, ANDREA_BYTE_VOCAB, ANDREA_NORM_LAYER, ANDREA_ACT_GELU, 1, 1, 1e-5f, 0.02f};
    andrea_config q = {1, 1, 32, 2, ANDREA_BYTE_VOCAB, ANDREA_NORM_LAYER, ANDREA_ACT_GELU, 0, 0, 1e-5f, 0.02f};
    andrea_config a = {1, 1, 8, 4, ANDREA_BYTE_VOCAB, ANDREA_NORM_RMS, ANDREA_ACT_RELU2, 0, 0, 1e-5f, 0.02f};
    andrea_model *m = andrea_model_create(&c, 1), *ma = andrea_model_create(&a, 1);
    andrea_model *mq = andrea_model_create(&q, 1);
    andrea_tokenizer *tok = andrea_tokenizer_byte();
    int rc = 0;
    rc |= andrea_safetensors_save(out("safetensors/hf.safetensors"), m, NULL, ANDREA_NAMES_HF);
    rc |= andrea_safetensors_save(out("safetensors/andrea.safetensors"), ma, NULL, ANDREA_NAMES_ANDREA);
    rc |= andrea_gguf_save(out("gguf/f32.gguf"), m, tok, ANDREA_DTYPE_F32);
    rc |= andrea_gguf_save(out("gguf/f16.gguf"), m, tok, ANDREA_DTYPE_F16);
    rc |= andrea_gguf_save(out("gguf/q8_0.gguf"), mq, tok, ANDREA_DTYPE_Q8_0);
    rc |= andrea_gguf_save(out("gguf/q4_0.gguf"), mq, tok, ANDREA_DTYPE_Q4_0);
    rc |= andrea_llmc_save(out("llmc/gpt2.bin"), m);
    /* tokenizers: every kind that fits in a small seed (GPT-2's is 0.5 MB) */
    andrea_tokenizer *ch = andrea_tokenizer_char_train(TEXT, sizeof TEXT - 1);
    andrea_bpe_train_options bo;
    andrea_bpe_train_options_default(&bo);
    bo.vocab_size = 280;
    andrea_tokenizer *bpe = andrea_tokenizer_bpe_train(TEXT, sizeof TEXT - 1, &bo);
    static const char *segs[] = {"the", "ing", "and", " of"};
    uint32_t lens[] = {3, 3, 3, 3};
    andrea_tokenizer *har = andrea_harris_build((const uint8_t *const *)segs, lens, 4);
    rc |= put_tok("byte.tok", tok) | put_tok("char.tok", ch);
    rc |= put_tok("harris.tok", har);
    if (bpe) rc |= put_tok("bpe.tok", bpe); /* needs PCRE2 */
    rc |= put_doubling_bpe() | put_harris_36();
    rc |= put_checkpoints() | put_token_files() | put_text();
    if (rc) fprintf(stderr, "make_corpus: %s\n", andrea_error());
    andrea_tokenizer_free(ch);
    andrea_tokenizer_free(bpe);
    andrea_tokenizer_free(har);
    andrea_tokenizer_free(tok);
    andrea_model_free(m);
    andrea_model_free(ma);
    andrea_model_free(mq);
    return rc ? 1 : 0;
}
