/* test_tok_basic.c - byte, char, harris and trained BPE tokenizers, blobs and
 * token files: known answers, exact round trips, a plain-loop reference for
 * the BPE trainer, and rejection of corrupt inputs. Needs no corpus. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "andrea_tokenizer.h"
#include "test_util.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static char tmpdir[4096];
static const char *tmp_path(const char *name) {
    static char buf[8192];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    return buf;
}

static int roundtrip(const andrea_tokenizer *t, const void *s, size_t n) {
    andrea_ids ids = {0};
    andrea_bytes back = {0};
    int ok = andrea_tokenizer_encode(t, s, n, 0, &ids) == 0 &&
             andrea_tokenizer_decode(t, ids.data, ids.len, &back) == 0 && back.len == n &&
             (n == 0 || memcmp(back.data, s, n) == 0);
    for (size_t i = 0; ok && i < ids.len; i++)
        ok = ids.data[i] >= 0 && ids.data[i] < andrea_tokenizer_vocab_size(t) &&
             ids.data[i] != andrea_tokenizer_bos(t);
    andrea_ids_free(&ids);
    andrea_bytes_free(&back);
    return ok;
}

/* blob round trip keeps the checksum and the encoding */
static void check_blob(const andrea_tokenizer *t, const char *sample) {
    andrea_bytes blob = {0};
    CHECK(andrea_tokenizer_serialize(t, &blob) == 0);
    andrea_tokenizer *u = andrea_tokenizer_deserialize(blob.data, blob.len, "blob");
    CHECK(u != NULL);
    if (!u) {
        fprintf(stderr, "deserialize: %s\n", andrea_error());
        andrea_bytes_free(&blob);
        return;
    }
    CHECK(andrea_tokenizer_checksum(u) == andrea_tokenizer_checksum(t));
    CHECK(andrea_tokenizer_vocab_size(u) == andrea_tokenizer_vocab_size(t));
    andrea_ids a = {0}, b = {0};
    CHECK(andrea_tokenizer_encode(t, sample, strlen(sample), 0, &a) == 0);
    CHECK(andrea_tokenizer_encode(u, sample, strlen(sample), 0, &b) == 0);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len * sizeof *a.data) == 0);
    /* every truncation and a flipped header byte are rejected */
    for (size_t cut = 0; cut < blob.len; cut += 1 + blob.len / 97) {
        andrea_tokenizer *bad = andrea_tokenizer_deserialize(blob.data, cut, "truncated");
        CHECK(bad == NULL);
        andrea_tokenizer_free(bad);
    }
    for (size_t k = 0; k < 24; k++) {
        if (k >= 12 && k < 16 && andrea_tokenizer_kind(t) == ANDREA_TOK_BPE) continue; /* bpe<->gpt2 share a layout */
        blob.data[k] ^= 0x40;
        andrea_tokenizer *bad = andrea_tokenizer_deserialize(blob.data, blob.len, "flipped");
        if (bad) fprintf(stderr, "flipping header byte %zu was accepted\n", k);
        CHECK(bad == NULL);
        andrea_tokenizer_free(bad);
        blob.data[k] ^= 0x40;
    }
    andrea_ids_free(&a);
    andrea_ids_free(&b);
    andrea_tokenizer_free(u);
    andrea_bytes_free(&blob);
}

static void random_roundtrips(const andrea_tokenizer *t, const char *what) {
    uint8_t buf[2048];
    for (int trial = 0; trial < 16; trial++) {
        size_t n = rnd() % sizeof buf;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rnd();
            buf[i] = trial % 2 ? (uint8_t)r : (uint8_t)"aeiou tnsrlh\n.,'ingedunre"[r % 25];
        }
        if (!roundtrip(t, buf, n)) {
            fprintf(stderr, "%s: random round trip %d failed\n", what, trial);
            tu_failures++;
        }
    }
}

static void test_byte(void) {
    andrea_tokenizer *t = andrea_tokenizer_open("byte");
    CHECK(t && andrea_tokenizer_vocab_size(t) == ANDREA_BYTE_VOCAB && andrea_tokenizer_bos(t) == ANDREA_BYTE_BOS);
    andrea_ids ids = {0};
    CHECK(andrea_tokenizer_encode(t, "a\xff\0", 3, 0, &ids) == 0);
    CHECK(ids.len == 3 && ids.data[0] == 97 && ids.data[1] == 255 && ids.data[2] == 0);
    andrea_ids_push(&ids, ANDREA_BYTE_BOS);
    andrea_bytes out = {0};
    CHECK(andrea_tokenizer_decode(t, ids.data, ids.len, &out) == 0);
    CHECK(out.len == 3 && memcmp(out.data, "a\xff\0", 3) == 0); /* BOS decodes to nothing */
    int32_t bad = 257;
    CHECK(andrea_tokenizer_decode(t, &bad, 1, &out) != 0 && strstr(andrea_error(), "257"));
    /* the special token is GPT-2's: asking a byte tokenizer for it is an error, not ignored */
    size_t before = ids.len;
    CHECK(andrea_tokenizer_encode(t, "a", 1, ANDREA_ENCODE_SPECIAL, &ids) != 0 &&
          strstr(andrea_error(), "no special token") && ids.len == before);
    random_roundtrips(t, "byte");
    check_blob(t, "hello");
    andrea_ids_free(&ids);
    andrea_bytes_free(&out);
    andrea_tokenizer_free(t);
}

static void test_char(void) {
    const char *text = "hello world\nh\xc3\xa9llo \xe2\x82\xac\xf0\x9f\x98\x80";
    andrea_tokenizer *t = andrea_tokenizer_char_train(text, strlen(text));
    CHECK(t != NULL);
    if (!t) return;
    /* distinct: \n ' ' d e h l o r w U+00E9 U+20AC U+1F600 -> 12, BOS 12 */
    CHECK(andrea_tokenizer_vocab_size(t) == 13 && andrea_tokenizer_bos(t) == 12);
    andrea_ids ids = {0};
    CHECK(andrea_tokenizer_encode(t, "\n wh\xc3\xa9\xf0\x9f\x98\x80", 10, 0, &ids) == 0);
    int32_t want[] = {0, 1, 8, 4, 9, 11};
    CHECK(ids.len == 6 && memcmp(ids.data, want, sizeof want) == 0);
    CHECK(roundtrip(t, text, strlen(text)));
    CHECK(andrea_tokenizer_encode(t, "hex", 3, 0, &ids) != 0 && strstr(andrea_error(), "offset 2"));
    /* a part of a longer text: the offset is counted in the whole text */
    CHECK(andrea_tokenizer_encode_part(t, "hex", 3, 5000000, 0, &ids) != 0 &&
          strstr(andrea_error(), "offset 5000002 "));
    CHECK(andrea_tokenizer_encode_part(t, "h\xff", 2, 7, 0, &ids) != 0 &&
          strstr(andrea_error(), "offset 8 "));
    CHECK(andrea_tokenizer_encode(t, "h\xff", 2, 0, &ids) != 0 && strstr(andrea_error(), "invalid UTF-8"));
    CHECK(andrea_tokenizer_char_train("ab\xc3", 3) == NULL);
    check_blob(t, "hello");
    andrea_ids_free(&ids);
    andrea_tokenizer_free(t);
}

/* synthetic morphology: prefixes x roots x suffixes */
static void make_corpus(andrea_bytes *out, int words) {
    static const char *pre[] = {"", "", "", "un", "re", "pre", "dis"};
    static const char *root[] = {"walk", "talk", "play", "jump", "call", "paint", "load", "form",
                                 "turn", "mark", "help", "cook", "kick", "lock", "look", "pack"};
    static const char *suf[] = {"", "", "ing", "ed", "s", "er", "able", "ers"};
    for (int i = 0; i < words; i++) {
        const char *p = pre[rnd() % 7], *r = root[rnd() % 16], *s = suf[rnd() % 8];
        if (i) andrea_bytes_append(out, rnd() % 9 ? " " : ".\n", rnd() % 9 ? 1 : 2);
        andrea_bytes_append(out, p, strlen(p));
        andrea_bytes_append(out, r, strlen(r));
        andrea_bytes_append(out, s, strlen(s));
    }
}

static int has_token(const andrea_tokenizer *t, const char *s) {
    for (int32_t id = 0; id < andrea_tokenizer_vocab_size(t); id++) {
        size_t len;
        const uint8_t *p = andrea_tokenizer_token_bytes(t, id, &len);
        if (id != andrea_tokenizer_bos(t) && len == strlen(s) && memcmp(p, s, len) == 0) return 1;
    }
    return 0;
}

static void test_harris(void) {
    andrea_bytes corpus = {0};
    make_corpus(&corpus, 20000);
    andrea_harris_train_options o;
    andrea_harris_train_options_default(&o);
    o.n_segments = 64; /* more than this corpus offers: V is what it offers */
    o.min_variety = 3; /* 16 roots: varieties here are small */
    andrea_tokenizer *t = andrea_tokenizer_harris_train(corpus.data, corpus.len, &o);
    CHECK(t != NULL);
    if (!t) {
        fprintf(stderr, "harris: %s\n", andrea_error());
        andrea_bytes_free(&corpus);
        return;
    }
    CHECK(andrea_tokenizer_vocab_size(t) > 257 + 30 && andrea_tokenizer_vocab_size(t) <= 257 + 64);
    CHECK(andrea_tokenizer_bos(t) == 256);
    /* morphemes found without labels */
    CHECK(has_token(t, "ing"));
    CHECK(has_token(t, "able"));
    CHECK(has_token(t, " un") || has_token(t, " re"));
    CHECK(roundtrip(t, corpus.data, corpus.len));
    random_roundtrips(t, "harris");
    check_blob(t, "unwalkable repainting");
    /* longest match with byte fallback, known answer from the segment list */
    const char *json = "{\"segments\": [\"walk\", \"ing\", \" un\", \"wal\", \"\xc3\xa9t\xc3\xa9\"]}";
    FILE *f = fopen(tmp_path("segs.json"), "w");
    fputs(json, f);
    fclose(f);
    andrea_tokenizer *h = andrea_tokenizer_open(tmp_path("segs.json"));
    if (!h && strstr(andrea_error(), "jansson")) { /* built without JSON support */
        printf("harris JSON: skipped (%s)\n", andrea_error());
        andrea_tokenizer_free(t);
        andrea_bytes_free(&corpus);
        return;
    }
    CHECK(h && andrea_tokenizer_vocab_size(h) == 262);
    if (h) {
        andrea_ids ids = {0};
        CHECK(andrea_tokenizer_encode(h, "walking unwalx \xc3\xa9t\xc3\xa9", 20, 0, &ids) == 0);
        int32_t want[] = {257, 258, 259, 260, 'x', ' ', 261};
        CHECK(ids.len == 7 && memcmp(ids.data, want, sizeof want) == 0);
        andrea_ids_free(&ids);
        /* export -> import keeps the identity */
        CHECK(andrea_tokenizer_harris_export(h, tmp_path("segs2.json")) == 0);
        andrea_tokenizer *h2 = andrea_tokenizer_harris_import(tmp_path("segs2.json"));
        CHECK(h2 && andrea_tokenizer_checksum(h2) == andrea_tokenizer_checksum(h));
        andrea_tokenizer_free(h2);
        andrea_tokenizer_free(h);
    }
    CHECK(andrea_tokenizer_harris_export(t, tmp_path("trained.json")) == 0);
    andrea_tokenizer *t2 = andrea_tokenizer_open(tmp_path("trained.json"));
    CHECK(t2 && andrea_tokenizer_checksum(t2) == andrea_tokenizer_checksum(t));
    andrea_tokenizer_free(t2);
    /* bad JSON names the file and the line */
    f = fopen(tmp_path("bad.json"), "w");
    fputs("[\"ok\",\n \"dup\", \"dup\"]", f);
    fclose(f);
    CHECK(andrea_tokenizer_open(tmp_path("bad.json")) == NULL && strstr(andrea_error(), "bad.json") &&
          strstr(andrea_error(), "repeats"));
    f = fopen(tmp_path("bad2.json"), "w");
    fputs("[\"ok\",\n 3]", f);
    fclose(f);
    CHECK(andrea_tokenizer_open(tmp_path("bad2.json")) == NULL && strstr(andrea_error(), "segment 1"));
    andrea_tokenizer_free(t);
    andrea_bytes_free(&corpus);
}

/* ---- reference BPE trainer: full recount of every pair for every merge ---------------- */

typedef struct { uint8_t b[64]; int len; } tokstr;

static void reference_bpe(const char *text, int n_merges, tokstr *out, int *n_out) {
    /* pieces: first word, then " word" (GPT-2's regex on lowercase words + single spaces) */
    enum { MAXW = 4096, MAXL = 32 };
    static int32_t sym[MAXW][MAXL];
    static int len[MAXW];
    static long cnt[MAXW];
    static tokstr tok[4096];
    int nw = 0;
    for (int i = 0; i < 256; i++) { tok[i].b[0] = (uint8_t)i; tok[i].len = 1; }
    const char *p = text;
    while (*p) {
        const char *q = p + 1;
        while (*q && *q != ' ') q++;
        int L = (int)(q - p), w;
        for (w = 0; w < nw; w++) {
            int same = len[w] == L;
            for (int k = 0; same && k < L; k++) same = sym[w][k] == (uint8_t)p[k];
            if (same) break;
        }
        if (w == nw) {
            len[nw] = L;
            for (int k = 0; k < L; k++) sym[nw][k] = (uint8_t)p[k];
            cnt[nw++] = 0;
        }
        cnt[w]++;
        p = q;
    }
    *n_out = 0;
    for (int m = 0; m < n_merges; m++) {
        static long pc[320][320];
        memset(pc, 0, sizeof pc);
        for (int w = 0; w < nw; w++) /* recount every pair from scratch */
            for (int k = 0; k + 1 < len[w]; k++) pc[sym[w][k]][sym[w][k + 1]] += cnt[w];
        long best = 0;
        int32_t ba = 0, bb = 0;
        for (int32_t a = 0; a < 257 + m; a++) /* (a, b) order: ties go to the smaller pair */
            for (int32_t b = 0; b < 257 + m; b++)
                if (pc[a][b] > best) { best = pc[a][b]; ba = a; bb = b; }
        if (best < 2) break;
        int32_t r = 257 + m;
        memcpy(tok[r].b, tok[ba].b, (size_t)tok[ba].len);
        memcpy(tok[r].b + tok[ba].len, tok[bb].b, (size_t)tok[bb].len);
        tok[r].len = tok[ba].len + tok[bb].len;
        for (int w = 0; w < nw; w++) {
            int j = 0;
            for (int k = 0; k < len[w];) {
                if (k + 1 < len[w] && sym[w][k] == ba && sym[w][k + 1] == bb) { sym[w][j++] = r; k += 2; }
                else sym[w][j++] = sym[w][k++];
            }
            len[w] = j;
        }
        out[(*n_out)++] = tok[r];
    }
}

static void test_bpe(void) {
    /* random words over a tiny alphabet: many ties and overlapping pairs ("aaa") */
    char text[6000];
    size_t n = 0;
    for (int w = 0; w < 700; w++) {
        if (w) text[n++] = ' ';
        int L = 1 + (int)(rnd() % 6);
        for (int k = 0; k < L; k++) text[n++] = "aabc"[rnd() % 4];
    }
    text[n] = '\0';
    andrea_bpe_train_options o;
    andrea_bpe_train_options_default(&o);
    o.vocab_size = 257 + 40;
    andrea_tokenizer *t = andrea_tokenizer_bpe_train(text, n, &o);
    if (!t && strstr(andrea_error(), "PCRE2")) {
        printf("bpe: skipped (%s)\n", andrea_error());
        return;
    }
    CHECK(t != NULL);
    if (!t) return;
    static tokstr ref[64];
    int nref = 0;
    reference_bpe(text, 40, ref, &nref);
    CHECK(andrea_tokenizer_vocab_size(t) == 257 + nref);
    for (int m = 0; m < nref && m + 257 < andrea_tokenizer_vocab_size(t); m++) {
        size_t len;
        const uint8_t *p = andrea_tokenizer_token_bytes(t, 257 + m, &len);
        if (len != (size_t)ref[m].len || memcmp(p, ref[m].b, len) != 0) {
            fprintf(stderr, "bpe merge %d: '%.*s', reference '%.*s'\n", m, (int)len, (const char *)p,
                    ref[m].len, (const char *)ref[m].b);
            tu_failures++;
            break;
        }
    }
    CHECK(roundtrip(t, text, n));
    random_roundtrips(t, "bpe");
    check_blob(t, "aab caa ba");
    /* same input, same tokenizer */
    andrea_tokenizer *t2 = andrea_tokenizer_bpe_train(text, n, &o);
    CHECK(t2 && andrea_tokenizer_checksum(t2) == andrea_tokenizer_checksum(t));
    andrea_tokenizer_free(t2);
    andrea_tokenizer_free(t);

    /* the morphology corpus: a larger vocabulary, a bounded piece table */
    andrea_bytes corpus = {0};
    make_corpus(&corpus, 20000);
    o.vocab_size = 600;
    o.max_pieces = 1024;
    t = andrea_tokenizer_bpe_train(corpus.data, corpus.len, &o);
    CHECK(t != NULL);
    if (t) {
        CHECK(andrea_tokenizer_vocab_size(t) <= 600);
        CHECK(has_token(t, " walking") || has_token(t, "walking") || has_token(t, "ing"));
        CHECK(roundtrip(t, corpus.data, corpus.len));
        andrea_tokenizer_free(t);
    }
    andrea_bytes_free(&corpus);
}

static void test_token_file(void) {
    andrea_tokenizer *t = andrea_tokenizer_byte();
    const char *path = tmp_path("bytes.tokens");
    andrea_token_writer *w = andrea_token_writer_create(path, t);
    CHECK(w != NULL);
    int32_t ids[1000];
    for (int i = 0; i < 1000; i++) ids[i] = i % 257;
    CHECK(andrea_token_writer_write(w, ids, 1000) == 0);
    int32_t bad = 300;
    CHECK(andrea_token_writer_write(w, &bad, 1) != 0);
    CHECK(andrea_token_writer_close(w) == 0);
    andrea_token_file *f = andrea_token_file_open(path, 1);
    CHECK(f != NULL);
    if (f) {
        CHECK(andrea_token_file_count(f) == 1000 && andrea_token_file_vocab(f) == 257 &&
              andrea_token_file_bos(f) == 256 && andrea_token_file_checksum(f) == andrea_tokenizer_checksum(t));
        int32_t back[1000];
        CHECK(andrea_token_file_read(f, 0, 1000, back) == 0 && memcmp(back, ids, sizeof ids) == 0);
        CHECK(andrea_token_file_read(f, 990, 11, back) != 0);
        andrea_token_file_close(f);
    }
    /* truncation is caught by the length check */
    FILE *fp = fopen(path, "r+b");
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fclose(fp);
    CHECK(size == 64 + 2000);
    CHECK(truncate(path, size - 1) == 0);
    CHECK(andrea_token_file_open(path, 0) == NULL && strstr(andrea_error(), "truncated"));
    andrea_tokenizer_free(t);

    /* V > 65536 gives 4-byte tokens: a char tokenizer of 70000 characters */
    andrea_bytes text = {0};
    for (uint32_t cp = 0x10000; cp < 0x10000 + 70000; cp++) {
        uint8_t u[4] = {(uint8_t)(0xf0 | cp >> 18), (uint8_t)(0x80 | ((cp >> 12) & 0x3f)),
                        (uint8_t)(0x80 | ((cp >> 6) & 0x3f)), (uint8_t)(0x80 | (cp & 0x3f))};
        andrea_bytes_append(&text, u, 4);
    }
    t = andrea_tokenizer_char_train(text.data, text.len);
    CHECK(t && andrea_tokenizer_vocab_size(t) == 70001);
    if (t) {
        andrea_ids all = {0};
        CHECK(andrea_tokenizer_encode(t, text.data, text.len, 0, &all) == 0 && all.len == 70000);
        w = andrea_token_writer_create(path, t);
        CHECK(w && andrea_token_writer_write(w, all.data, all.len) == 0 && andrea_token_writer_close(w) == 0);
        f = andrea_token_file_open(path, 1);
        CHECK(f && andrea_token_file_count(f) == 70000);
        int32_t last;
        CHECK(f && andrea_token_file_read(f, 69999, 1, &last) == 0 && last == 69999);
        andrea_token_file_close(f);
        andrea_ids_free(&all);
        andrea_tokenizer_free(t);
    }
    andrea_bytes_free(&text);
    CHECK(andrea_token_file_open(tmp_path("missing.tokens"), 0) == NULL && strstr(andrea_error(), "missing.tokens"));
}

static void test_safe_cut(void) {
    CHECK(andrea_tokenizer_safe_cut("abc\ndef", 7) == 3);
    CHECK(andrea_tokenizer_safe_cut("abc\n def", 8) == 0); /* a space after '\n' is not safe */
    CHECK(andrea_tokenizer_safe_cut("a\n\nb\n", 5) == 2);
    CHECK(andrea_tokenizer_safe_cut("", 0) == 0);
    /* with special tokens no cut falls before '<' ("\n\n<|endoftext|>" is one piece) */
    CHECK(andrea_tokenizer_safe_cut("ab\n\n<|e", 7) == 3);
    CHECK(andrea_tokenizer_safe_cut_flags("ab\n\n<|e", 7, ANDREA_ENCODE_SPECIAL) == 0);
    CHECK(andrea_tokenizer_safe_cut_flags("x\nab\n\n<|e", 9, ANDREA_ENCODE_SPECIAL) == 1);
}

int main(void) {
    const char *tmp = getenv("ANDREA_TMP");
    snprintf(tmpdir, sizeof tmpdir, "%s", tmp && *tmp ? tmp : "/tmp");
    char cmd[8300];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", tmpdir);
    if (system(cmd) != 0) return 1;
    test_byte();
    test_char();
    test_harris();
    test_bpe();
    test_token_file();
    test_safe_cut();
    return tu_finish("test_tok_basic");
}
