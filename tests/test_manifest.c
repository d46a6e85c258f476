/*
 * test_manifest.c - run manifests and documents: the three example manifests of the
 * course's configurations parse with their floors and warmup; bad manifests are refused
 * with the field named; a text source cut by each split (line, paragraph, book,
 * separator, min_bytes, a byte range) gives the documents counted by hand; a chat line
 * renders as ANDREA's "> " / "< " turns; validation holds out the last documents (the
 * tail of a one-document source); the policy hash moves with a floor, not with a path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_tokenizer.h"
#include "test_util.h"
#include "train/curriculum/docset.h"
#include "train/curriculum/manifest.h"

static char g_dir[1024];

static const char *write_file(const char *name, const char *text) {
    const char *p = tu_path(g_dir, name);
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return p;
}

static const andrea_manifest_source *find(const andrea_manifest *m, const char *name) {
    for (int k = 0; k < m->n; k++)
        if (strcmp(m->src[k].name, name) == 0) return &m->src[k];
    return NULL;
}

static void test_examples(void) {
    char path[1200];
    const char *here = __FILE__, *slash = strrchr(here, '/');
    int dl = slash ? (int)(slash - here) : 1;
    const char *cfgs[3] = {"chatbot", "tool-caller", "bash-commander"};
    uint64_t h[3];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%.*s/../examples/curriculum/%s.json", dl, slash ? here : ".", cfgs[i]);
        andrea_manifest m;
        int rc = andrea_manifest_read(path, &m);
        CHECK(rc == 0);
        if (rc) {
            fprintf(stderr, "%s\n", andrea_error());
            andrea_manifest_free(&m);
            continue;
        }
        CHECK(m.n == 15 && m.cur.policy == ANDREA_POLICY_UCB1 && m.cur.warmup_steps == 20000);
        CHECK(m.cur.dice_min == 7 && m.cur.dice_max == 42 && m.cur.ema_alpha == 0.1);
        CHECK(find(&m, "hermes3-general")->floor == 0.8 && find(&m, "gutenberg")->floor == 0.7);
        CHECK(find(&m, "gutenberg")->warmup && !find(&m, "dictionary")->warmup);
        CHECK(find(&m, "chat")->format == ANDREA_SRC_CHAT && find(&m, "gutenberg")->split == ANDREA_SPLIT_BOOK);
        h[i] = andrea_manifest_policy_hash(&m);
        if (i == 1) CHECK(find(&m, "repo-docstrings")->floor > find(&m, "repo-commits")->floor);
        if (i == 2) CHECK(find(&m, "repo-commits")->floor > find(&m, "repo-docstrings")->floor);
        andrea_manifest_free(&m);
    }
    CHECK(h[0] != h[1] && h[1] != h[2]);
}

static void test_bad(void) {
    const char *cases[][2] = {
        {"{\"sources\": []}", "non-empty \"sources\""},
        {"{\"sources\": [{\"name\": \"a\"}]}", "needs a \"name\""},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\", \"cap\": -1}]}", "'cap'"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\"}, {\"name\": \"a\", \"path\": \"y\"}]}", "two sources"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\"}], \"curriculum\": {\"policy\": \"greedy\"}}", "ucb1, uniform or fixed"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\"}], \"curriculum\": {\"dice\": [9, 3]}}", "'dice'"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\"}], \"curriculum\": {\"warmup_sources\": [\"b\"]}}", "names 'b'"},
        {"{\"sources\": [", "line 1"},
        {"{\"sources\": [{\"name\": \"a\\u001b[2J\", \"path\": \"x\"}]}", "control characters (byte 0x1b)"},
        {"{\"sources\": [{\"name\": \"../a\", \"path\": \"x\"}]}", "may not hold '/'"},
        /* numbers that become integers are range-checked before any cast (issue 22) */
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\"}], \"curriculum\": {\"warmup_steps\": 4294967295}}", "'warmup_steps' must be a whole number in [0, 2147483647]"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\"}], \"curriculum\": {\"focus\": 1e300}}", "'focus' must be"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\"}], \"curriculum\": {\"focus\": 2.5}}", "'focus' must be"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\", \"min_bytes\": 9.3e18}]}", "'min_bytes' must be"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\", \"min_bytes\": 9223372036854775807}]}", "'min_bytes' must be"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\"}], \"curriculum\": {\"dice\": [1, 1e12]}}", "'dice'"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\", \"range\": [0, 1e30]}]}", "'range'"},
        {"{\"sources\": [{\"name\": \"a\", \"path\": \"x\", \"floor\": 0.6, \"cap\": 0.5}]}", "'floor' 0.6 is above its 'cap' 0.5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        andrea_manifest m;
        int rc = andrea_manifest_read(write_file("bad.json", cases[i][0]), &m);
        CHECK(rc == -1 && strstr(andrea_error(), cases[i][1]) != NULL);
        if (rc != -1 || !strstr(andrea_error(), cases[i][1]))
            fprintf(stderr, "case %zu: '%s'\n", i, andrea_error());
        andrea_manifest_free(&m);
    }
}

/* Documents of text under a split, no validation: their count and first document. */
static int64_t docs_of(const andrea_tokenizer *tok, const char *text, int split, const char *sep,
                       int64_t min_bytes, int64_t off, int64_t len, char *first, size_t cap) {
    andrea_manifest_source s = {.path = (char *)write_file("t.txt", text), .format = ANDREA_SRC_TEXT,
                                .split = split, .separator = (char *)sep, .min_bytes = min_bytes,
                                .range_off = off, .range_len = len, .cap = 1};
    strcpy(s.name, "t");
    andrea_docset d;
    if (andrea_docset_load(&d, &s, tok, 0.0)) return -1;
    int64_t n0 = d.start[1] - d.start[0];
    snprintf(first, cap, "%.*s", (int)n0, "");
    for (int64_t i = 0; i < n0 && i + 1 < (int64_t)cap; i++) first[i] = (char)d.tok[i];
    first[n0 < (int64_t)cap ? n0 : (int64_t)cap - 1] = 0;
    int64_t n = d.n_docs;
    CHECK(d.n_train == n && d.n_val == 0);
    andrea_docset_free(&d);
    return n;
}

static void test_splits(const andrea_tokenizer *tok) {
    const char *t = "one\ntwo\n\nthree\n\n\nfour\nfive\n\n\n\nsix";
    char first[64];
    CHECK(docs_of(tok, t, ANDREA_SPLIT_NONE, NULL, 0, 0, -1, first, 64) == 1);
    CHECK(docs_of(tok, t, ANDREA_SPLIT_LINE, NULL, 0, 0, -1, first, 64) == 6 && strcmp(first, "one") == 0);
    CHECK(docs_of(tok, t, ANDREA_SPLIT_PARAGRAPH, NULL, 0, 0, -1, first, 64) == 4 && strcmp(first, "one\ntwo") == 0);
    CHECK(docs_of(tok, t, ANDREA_SPLIT_BOOK, NULL, 0, 0, -1, first, 64) == 3 &&
          strcmp(first, "one\ntwo\n\nthree") == 0);
    /* paragraphs merged to >= 9 bytes: "one\ntwo\n\nthree" (14), "four\nfive" (9), "six" */
    CHECK(docs_of(tok, t, ANDREA_SPLIT_PARAGRAPH, NULL, 9, 0, -1, first, 64) == 3 &&
          strcmp(first, "one\ntwo\n\nthree") == 0);
    CHECK(docs_of(tok, "a\n%\nbb\n%\n\n%\nccc", ANDREA_SPLIT_SEPARATOR, "\n%\n", 0, 0, -1, first, 64) == 3);
    CHECK(docs_of(tok, t, ANDREA_SPLIT_LINE, NULL, 0, 4, 9, first, 64) == 2 && strcmp(first, "two") == 0);
}

static void test_validation_chat(const andrea_tokenizer *tok) {
    andrea_manifest_source s = {.path = (char *)write_file("p.txt", "aa\n\nbbb\n\ncccc\n\ndd"),
                                .split = ANDREA_SPLIT_PARAGRAPH, .cap = 1, .range_len = -1};
    strcpy(s.name, "p");
    andrea_docset d;
    CHECK(andrea_docset_load(&d, &s, tok, 0.25) == 0); /* 4 docs: the last one held out */
    CHECK(d.n_docs == 4 && d.n_train == 3 && d.n_val == 4); /* BOS d d BOS */
    CHECK(d.val[0] == 256 && d.val[1] == 'd' && d.val[3] == 256);
    andrea_docset_free(&d);
    s.split = ANDREA_SPLIT_NONE; /* one document of 17 bytes: the tail 0.25 -> 12 + 5 */
    CHECK(andrea_docset_load(&d, &s, tok, 0.25) == 0);
    CHECK(d.n_docs == 2 && d.n_train == 1 && d.start[1] == 12 && d.n_val == 7);
    andrea_docset_free(&d);
    andrea_manifest_source c = {.format = ANDREA_SRC_CHAT, .cap = 1, .range_len = -1,
        .path = (char *)write_file("c.jsonl",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"define trust\"}, "
            "{\"role\": \"assistant\", \"content\": \"trust (verb): have faith.\"}]}\n\n"
            "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n")};
    strcpy(c.name, "c");
    CHECK(andrea_docset_load(&d, &c, tok, 0.0) == 0);
    const char *want = "> define trust\n< trust (verb): have faith.\n";
    int same = d.n_docs == 2 && d.start[1] == (int64_t)strlen(want);
    for (size_t i = 0; same && i < strlen(want); i++) same = d.tok[i] == (unsigned char)want[i];
    CHECK(same);
    andrea_docset_free(&d);
    write_file("c.jsonl", "{\"messages\": [{\"role\": \"system\", \"content\": \"x\"}]}\n");
    CHECK(andrea_docset_load(&d, &c, tok, 0.0) == -1 && strstr(andrea_error(), "line 1") != NULL);
}

int main(void) {
    if (tu_tmp_dir(g_dir, sizeof g_dir)) return 1;
#ifndef ANDREA_HAVE_JANSSON
    printf("skip: manifests need jansson\n");
    return 77;
#endif
    andrea_tokenizer *tok = andrea_tokenizer_byte();
    test_examples();
    test_bad();
    test_splits(tok);
    test_validation_chat(tok);
    andrea_tokenizer_free(tok);
    return tu_finish("test_manifest");
}
