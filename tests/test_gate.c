/*
 * test_gate.c - the coherence gate's formulas (docs/coherence-gate.md) on crafted
 * inputs with a small word list, so every expected value is worked out by hand;
 * then the lesson's failure modes and a healthy paragraph with the system word
 * list (skipped parts when /usr/share/dict/american-english is absent).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_gate.h"
#include "test_util.h"

static andrea_gate_result score(const andrea_gate *g, const char *text) {
    andrea_gate_result r;
    CHECK(andrea_gate_score(text, strlen(text), g, &r) == 0);
    return r;
}

static void test_formulas(void) {
    static const char *const words[] = {"the", "cat", "sat", "on", "mat", "King's", "well", "known"};
    andrea_gate *g = andrea_gate_from_words(words, sizeof words / sizeof words[0]);
    CHECK(g != NULL && andrea_gate_num_words(g) == 8);
    if (!g) return;

    /* 6 words, 5 bigrams all distinct except none; "the" twice but (the cat) != (the mat) */
    andrea_gate_result r = score(g, "The cat sat on the mat.");
    CHECK(r.words == 6 && r.bigrams == 5 && r.distinct_bigrams == 5);
    CHECK(r.trigrams == 4 && r.distinct_trigrams == 4);
    CHECK_CLOSE(r.bigram, 35, 1e-12, 0);
    CHECK_CLOSE(r.trigram, 35, 1e-12, 0);
    CHECK(r.candidates == 6 && r.english_words == 6); /* case and the final '.' are ignored */
    CHECK_CLOSE(r.english, 20, 1e-12, 0);
    /* distinct non-space characters: T h e c a t s o n m . = 11 */
    CHECK(r.distinct_chars == 11);
    CHECK_CLOSE(r.chardiv, 10.0 * 11 / 20, 1e-12, 0);
    CHECK_CLOSE(r.total, 35 + 35 + 20 + 5.5, 1e-9, 0);
    CHECK(r.pass);

    /* a b a b a b: bigrams ab ba ab ba ab -> 2 of 5; trigrams aba bab aba bab -> 2 of 4 */
    r = score(g, "cat mat cat mat cat mat");
    CHECK(r.distinct_bigrams == 2 && r.bigrams == 5);
    CHECK_CLOSE(r.bigram, 35.0 * 2 / 5, 1e-12, 0);
    CHECK_CLOSE(r.trigram, 35.0 * 2 / 4, 1e-12, 0);

    /* n-gram words are lower-cased and stripped of punctuation: one distinct bigram */
    r = score(g, "Region, region; REGION! \"region\"");
    CHECK(r.words == 4 && r.distinct_bigrams == 1 && r.distinct_trigrams == 1);
    CHECK(r.english_words == 0 && r.candidates == 4);
    CHECK_CLOSE(r.english, 0, 0, 0);

    /* English: numbers and bare punctuation are not candidates; other scripts are and fail;
     * hyphenated words count when every part is a word; a typographic apostrophe is one */
    r = score(g, "the 1999 -- cat \xd0\xba\xd0\xbe\xd1\x82 well-known king\xe2\x80\x99s xyzzy");
    /* candidates: the cat кот well-known king’s xyzzy = 6; English: the cat well-known king's */
    CHECK(r.candidates == 6);
    CHECK(r.english_words == 4);
    CHECK_CLOSE(r.english, 20.0 * 4 / 6, 1e-12, 0);

    /* character variety: whitespace does not count, 20 or more distinct is full marks,
     * code points not bytes (кот is 3 characters in 6 bytes) */
    r = score(g, "a b\tc\nd");
    CHECK(r.distinct_chars == 4);
    CHECK_CLOSE(r.chardiv, 2, 1e-12, 0);
    r = score(g, "\xd0\xba\xd0\xbe\xd1\x82");
    CHECK(r.distinct_chars == 3);
    r = score(g, "abcdefghijklmnopqrstuvwxyz");
    CHECK(r.distinct_chars == 26);
    CHECK_CLOSE(r.chardiv, 10, 0, 0);
    r = score(g, "\xff\xfe\xff"); /* invalid UTF-8: each byte value is its own character */
    CHECK(r.distinct_chars == 2);

    /* degenerate inputs: empty, one word, two words */
    r = score(g, "");
    CHECK(r.words == 0 && r.total == 0 && !r.pass);
    r = score(g, "cat");
    CHECK(r.bigrams == 0 && r.bigram == 0 && r.trigram == 0);
    CHECK_CLOSE(r.english, 20, 0, 0);
    r = score(g, "cat sat");
    CHECK(r.bigrams == 1 && r.trigrams == 0);
    CHECK_CLOSE(r.bigram, 35, 0, 0);

    /* the text need not be NUL-terminated, and len is respected */
    const char buf[] = {'c', 'a', 't', ' ', 'x', 'y'};
    andrea_gate_result r2;
    CHECK(andrea_gate_score(buf, 3, g, &r2) == 0 && r2.words == 1 && r2.english_words == 1);

    /* no gate: an error, not a crash */
    CHECK(andrea_gate_score("x", 1, NULL, &r2) != 0);

    /* the halting rule: ANDREA_GATE_PATIENCE failures in a row, reset by a pass */
    andrea_gate_watch w = {0};
    andrea_gate_result bad = {0}, good = {0};
    good.pass = 1;
    for (int i = 0; i < ANDREA_GATE_PATIENCE - 1; i++) CHECK(andrea_gate_watch_update(&w, &bad) == 0);
    CHECK(andrea_gate_watch_update(&w, &good) == 0);
    for (int i = 0; i < ANDREA_GATE_PATIENCE - 1; i++) CHECK(andrea_gate_watch_update(&w, &bad) == 0);
    CHECK(andrea_gate_watch_update(&w, &bad) == 1);
    CHECK(w.samples == 2 * ANDREA_GATE_PATIENCE);
    andrea_gate_free(g);
}

static void test_system_words(void) {
    andrea_gate *g = andrea_gate_load(NULL);
    if (!g) {
        fprintf(stderr, "note: %s (system word list checks skipped)\n", andrea_error());
        return;
    }
    CHECK(andrea_gate_num_words(g) > 50000);
    /* the lesson's failure modes */
    char rep[4096] = "";
    for (int i = 0; i < 100; i++) strcat(rep, "region ");
    andrea_gate_result r = score(g, rep);
    CHECK(r.total < ANDREA_GATE_THRESHOLD && !r.pass);
    r = score(g, "''''''''");
    CHECK(r.total < ANDREA_GATE_THRESHOLD);
    rep[0] = '\0';
    for (int i = 0; i < 100; i++) strcat(rep, "... ");
    r = score(g, rep);
    CHECK(r.total < ANDREA_GATE_THRESHOLD);
    rep[0] = '\0';
    for (int i = 0; i < 60; i++) strcat(rep, "the king ");
    r = score(g, rep);
    CHECK(r.total < ANDREA_GATE_THRESHOLD); /* English but looping */
    /* healthy prose */
    r = score(g, "It is a truth universally acknowledged, that a single man in possession of a "
                 "good fortune, must be in want of a wife. However little known the feelings or "
                 "views of such a man may be on his first entering a neighbourhood, this truth is "
                 "so well fixed in the minds of the surrounding families, that he is considered "
                 "the rightful property of some one or other of their daughters.");
    CHECK(r.total > 60 && r.pass);
    /* an explicit missing file is an error that names it */
    CHECK(andrea_gate_load("/nonexistent/words.txt") == NULL);
    CHECK(strstr(andrea_error(), "/nonexistent/words.txt") != NULL);
    andrea_gate_free(g);
}

static andrea_gate_result honest(const andrea_gate *g, const char *text, size_t n) {
    andrea_gate_result r;
    CHECK(andrea_gate_evaluate(text, n, g, ANDREA_GATE_HONEST, &r) == 0);
    CHECK(r.kind == ANDREA_GATE_HONEST);
    return r;
}
#define HONEST(g, lit) honest(g, lit, sizeof lit - 1)

/* The honest gate's three factors (docs/coherence-gate.md), by hand. */
static void test_honest(void) {
    static const char *const words[] = {"the", "cat", "sat", "on", "mat", "King's", "well", "known"};
    andrea_gate *g = andrea_gate_from_words(words, sizeof words / sizeof words[0]);
    CHECK(g != NULL);
    if (!g) return;
    /* letters 3+3+3+2+3+3 = 17, all in listed words: dict ramp(1) = 1; 4 trigrams and 16
     * byte 8-grams are too few to judge repetition; 18 characters, none garbage */
    andrea_gate_result r = HONEST(g, "The cat sat on the mat.");
    CHECK(r.letters == 17 && r.english_letters == 17 && r.chars == 18 && r.bad_chars == 0);
    CHECK(r.byte_ngrams == 16 && r.distinct_byte_ngrams == 16);
    CHECK_CLOSE(r.dict, 1, 0, 0);
    CHECK_CLOSE(r.repeat, 1, 0, 0);
    CHECK_CLOSE(r.charset, 1, 0, 0);
    CHECK_CLOSE(r.total, 100, 1e-9, 0);
    CHECK(r.pass);
    /* the course's parts are filled too, total is the honest one */
    CHECK_CLOSE(r.bigram, 35, 1e-12, 0);

    /* letters weigh: 9 of 15 letters are in listed words (0.6, where 3 of 4 words would be
     * 0.75): dict = (0.6 - 0.2) / 0.6 */
    r = HONEST(g, "the cat xyzzyq sat");
    CHECK(r.letters == 15 && r.english_letters == 9);
    CHECK_CLOSE(r.dict, 0.4 / 0.6, 1e-12, 0);
    CHECK_CLOSE(r.total, 100 * 0.4 / 0.6, 1e-9, 0);

    /* one control byte among 18 non-space characters: charset = 1 - (1/18) / 0.1 */
    r = HONEST(g, "the cat sat on the mat \x01");
    CHECK(r.chars == 18 && r.bad_chars == 1);
    CHECK_CLOSE(r.charset, 1 - (1.0 / 18) / 0.1, 1e-12, 0);
    CHECK_CLOSE(r.total, 100 * (1 - (1.0 / 18) / 0.1), 1e-9, 0);
    /* a byte that is not UTF-8 is garbage and weighs as a letter (it could be a script) */
    r = HONEST(g, "the cat \xff");
    CHECK(r.chars == 7 && r.bad_chars == 1 && r.letters == 7 && r.english_letters == 6);
    CHECK_CLOSE(r.charset, 0, 0, 0);
    CHECK(!r.pass);
    /* U+FFFD (a decoder's replacement) is garbage too */
    r = HONEST(g, "cat \xef\xbf\xbd");
    CHECK(r.chars == 4 && r.bad_chars == 1);

    /* a two-word loop: 20 words, 18 trigrams, 2 distinct (0.11 < 0.3): repeat 0 */
    r = HONEST(g, "cat mat cat mat cat mat cat mat cat mat cat mat cat mat cat mat cat mat cat mat");
    CHECK(r.trigrams == 18 && r.distinct_trigrams == 2);
    CHECK_CLOSE(r.repeat, 0, 0, 0);
    CHECK_CLOSE(r.total, 0, 0, 0);
    /* a loop without spaces shows in the byte 8-grams: 120 bytes, 113 windows, 6 distinct */
    char loop[121];
    for (int i = 0; i < 20; i++) memcpy(loop + 6 * i, "catmat", 6);
    r = honest(g, loop, 120);
    CHECK(r.byte_ngrams == 113 && r.distinct_byte_ngrams == 6);
    CHECK_CLOSE(r.repeat, 0, 0, 0);
    /* whitespace runs read as one space: "the cat sat" = 11 bytes, 4 windows */
    r = HONEST(g, "the   cat\n\n\tsat");
    CHECK(r.byte_ngrams == 4 && r.distinct_byte_ngrams == 4);
    /* partly repeated (22 words, 20 trigrams): repeat is the smaller of the two ramps,
     * (d - 0.3) / 0.4, of distinct word trigrams and distinct byte 8-grams */
    r = HONEST(g, "the cat sat on the mat well known king's on "
                  "the cat sat on the mat the cat sat on the mat");
    CHECK(r.trigrams == 20 && r.distinct_trigrams == 12);
    double d3 = (12.0 / 20 - 0.3) / 0.4;
    double d8 = ((double)r.distinct_byte_ngrams / (double)r.byte_ngrams - 0.3) / 0.4;
    CHECK(d8 > 0 && d8 < 1);
    CHECK_CLOSE(r.repeat, d3 < d8 ? d3 : d8, 1e-12, 0);
    /* no letters at all: nothing a reader could judge, 0 */
    r = HONEST(g, "1999 2000 2001 ...  !!!");
    CHECK(r.letters == 0 && r.dict == 0 && r.total == 0);
    r = HONEST(g, "");
    CHECK(r.total == 0 && !r.pass);

    /* the two gates by name; andrea_gate_score is the course's */
    int kind = -1;
    CHECK(andrea_gate_kind_parse("honest", &kind) == 0 && kind == ANDREA_GATE_HONEST);
    CHECK(andrea_gate_kind_parse("course", &kind) == 0 && kind == ANDREA_GATE_COURSE);
    CHECK(andrea_gate_kind_parse("fair", &kind) == -1 && strstr(andrea_error(), "expected honest or course"));
    CHECK(strcmp(andrea_gate_kind_name(ANDREA_GATE_COURSE), "course") == 0);
    andrea_gate_result c;
    CHECK(andrea_gate_score("cat mat", 7, g, &c) == 0 && c.kind == ANDREA_GATE_COURSE);
    CHECK(andrea_gate_evaluate("cat", 3, g, 7, &c) == -1);
    andrea_gate_free(g);
}

/* Appends n sentences "the N V on the M ." (or, shuffled, their words in a random order)
 * drawn with rng to buf; returns the new length. */
static size_t sentences(char *buf, size_t len, size_t cap, int n, andrea_rng *rng, int shuffled) {
    static const char *const N[] = {"cat", "dog", "king", "man"}, *const V[] = {"sat", "ran", "slept"},
                             *const M[] = {"mat", "rug", "hill", "road"};
    const char *w[6 * 64];
    int k = 0;
    for (int i = 0; i < n && k + 6 <= 6 * 64; i++) {
        w[k++] = "the";
        w[k++] = N[andrea_rng_u64(rng) % 4];
        w[k++] = V[andrea_rng_u64(rng) % 3];
        w[k++] = "on";
        w[k++] = "the";
        w[k++] = M[andrea_rng_u64(rng) % 4];
    }
    for (int i = k; shuffled && i > 1; i--) {
        int j = (int)(andrea_rng_u64(rng) % (uint64_t)i);
        const char *t = w[i - 1];
        w[i - 1] = w[j];
        w[j] = t;
    }
    for (int i = 0; i < k; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", w[i], i % 6 == 5 ? ". " : " ");
    return len;
}

/* The reference factors on a reference made in memory: a toy grammar of 60,000 words. Its
 * sentences keep their word order (order 1), the same words shuffled lose it (order 0);
 * words the reference never uses are not common (common 0). */
static void test_reference(void) {
    static const char *const words[] = {"the", "cat", "dog", "king", "man", "sat", "ran", "slept", "on",
                                        "mat", "rug", "hill", "road", "zygote", "quark", "fjord"};
    andrea_gate *g = andrea_gate_from_words(words, sizeof words / sizeof words[0]);
    size_t cap = 1 << 20, len = 0;
    char *ref = malloc(cap), sample[4096];
    CHECK(g && ref);
    if (!g || !ref) return;
    andrea_rng rng;
    andrea_rng_seed(&rng, 28);
    for (int i = 0; i < 10000; i++) len = sentences(ref, len, cap, 1, &rng, 0);
    CHECK(andrea_gate_set_reference(g, ref, 100) == -1 && strstr(andrea_error(), "needs 50000"));
    CHECK(andrea_gate_set_reference(g, ref, len) == 0);
    CHECK(andrea_gate_reference_words(g) == 60000 && strcmp(andrea_gate_reference_path(g), "") == 0);
    andrea_gate_result r;
    size_t n = sentences(sample, 0, sizeof sample, 20, &rng, 0);
    CHECK(andrea_gate_evaluate(sample, n, g, ANDREA_GATE_HONEST, &r) == 0);
    CHECK(r.has_reference && r.listed_words == 120 && r.listed_pairs == 119);
    CHECK(r.order == 1.0 && r.common == 1.0 && r.order_gain > 0.8);
    n = sentences(sample, 0, sizeof sample, 20, &rng, 1);
    CHECK(andrea_gate_evaluate(sample, n, g, ANDREA_GATE_HONEST, &r) == 0);
    CHECK(r.order == 0.0 && r.common == 1.0 && r.total == 0.0);
    n = (size_t)snprintf(sample, sizeof sample, "zygote quark fjord quark zygote fjord fjord quark "
                         "zygote quark fjord zygote");
    CHECK(andrea_gate_evaluate(sample, n, g, ANDREA_GATE_HONEST, &r) == 0);
    CHECK(r.common == 0.0 && r.total == 0.0);
    free(ref);
    andrea_gate_free(g);
}

int main(void) {
    test_formulas();
    test_honest();
    test_reference();
    test_system_words();
    return tu_finish("test_gate");
}
