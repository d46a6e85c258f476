/*
 * andrea_gate.h - the coherence gate: a 0-100 score of a generated text sample
 * that falls when a model collapses into repetition, gibberish or a single
 * character. Training samples regularly and stops after ANDREA_GATE_PATIENCE
 * consecutive samples score below ANDREA_GATE_THRESHOLD.
 *
 * Usage (error handling elided):
 *
 *     andrea_gate *g = andrea_gate_load(NULL);   // the system's English word list
 *     andrea_gate_result r;
 *     andrea_gate_score(text, len, g, &r);       // r.total in [0, 100]
 *     andrea_gate_watch w = {0};
 *     if (andrea_gate_watch_update(&w, &r)) stop_training();
 *     andrea_gate_free(g);
 *
 * Two gates (exact formulas and their reasons: docs/coherence-gate.md):
 *
 * course (ANDREA_GATE_COURSE, andrea_gate_score): the course's four parts, summed.
 *   bigram   0-35  35 * distinct word bigrams / word bigrams
 *   trigram  0-35  35 * distinct word trigrams / word trigrams
 *   english  0-20  20 * words found in the word list / candidate words
 *   chardiv  0-10  10 * min(1, distinct non-space characters / 20)
 * Any text that never repeats a word pair scores 80 or more on it: random letters,
 * random bytes and a 100-step model's gibberish pass. Kept exactly, for comparison.
 *
 * honest (ANDREA_GATE_HONEST, the default of andrea_gate_evaluate): five factors in
 * [0, 1], multiplied, times 100, so any one failure fails the sample.
 *   dict     letters in dictionary words / letters in words, mapped 0.20 -> 0, 0.80 -> 1
 *   repeat   the worst of: distinct word trigrams and byte 8-grams (0.30 -> 0, 0.70 -> 1),
 *            and the share of bytes inside a 32-byte window seen earlier (0.15 -> 1,
 *            0.40 -> 0): loops of any length, a paragraph said twice
 *   charset  1 - 10 * (share of control bytes, invalid UTF-8 and U+FFFD), floored at 0
 *   common   mean log unigram probability of the listed words under a reference text,
 *            minus real text's: -4.0 -> 0, -2.5 -> 1 (a salad of dictionary words)
 *   order    the word pairs' bigram gain over the same words shuffled, over real text's:
 *            0.05 -> 0, 0.25 -> 1 (words in no order: shuffled prose, salads)
 * The last two need a reference text (andrea_gate_load_reference: Debian's fortunes by
 * default); without one they are 1 and has_reference is 0.
 */
#ifndef ANDREA_GATE_H
#define ANDREA_GATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ANDREA_GATE_THRESHOLD 30.0 /* a sample below this fails */
#define ANDREA_GATE_PATIENCE 5     /* consecutive failing samples that halt training */

typedef struct andrea_gate andrea_gate;

enum { ANDREA_GATE_HONEST = 0, ANDREA_GATE_COURSE = 1 };
/* "honest" | "course" -> ANDREA_GATE_*; -1 with andrea_error() otherwise. */
int andrea_gate_kind_parse(const char *name, int *kind);
const char *andrea_gate_kind_name(int kind);

/* Loads an English word list, one word per line (lower-cased on load). path NULL:
 * $ANDREA_WORDS, else /usr/share/dict/american-english (Debian's wamerican), else
 * /usr/share/dict/words. NULL with andrea_error() if none can be read. */
andrea_gate *andrea_gate_load(const char *path);
/* The honest gate's reference text: its word model (fitted on its first 90% of words,
 * real text's level measured on the rest). path: a text file, or a directory whose files
 * (but *.dat, *.u8 and dot files) are read in name order; NULL: $ANDREA_REFERENCE, else
 * /usr/share/games/fortunes (Debian's fortunes). It needs 50,000 words or more. 0, or
 * -1 with andrea_error() (the gate keeps any reference it had). */
int andrea_gate_load_reference(andrea_gate *g, const char *path);
/* The same from text in memory (tests, embedders). */
int andrea_gate_set_reference(andrea_gate *g, const char *text, size_t len);
const char *andrea_gate_reference_path(const andrea_gate *g); /* NULL: none, "" from memory */
int64_t andrea_gate_reference_words(const andrea_gate *g);

/* A gate over the given words (copied), for tests and embedders. */
andrea_gate *andrea_gate_from_words(const char *const *words, size_t n);
void andrea_gate_free(andrea_gate *g);
size_t andrea_gate_num_words(const andrea_gate *g);
const char *andrea_gate_words_path(const andrea_gate *g); /* "" for from_words */

typedef struct {
    double bigram, trigram, english, chardiv; /* the four parts */
    double total;                             /* their sum, 0..100 */
    int pass;                                 /* total >= ANDREA_GATE_THRESHOLD */
    /* the counts behind them */
    int64_t words;                            /* whitespace-separated words */
    int64_t bigrams, distinct_bigrams;
    int64_t trigrams, distinct_trigrams;
    int64_t candidates, english_words;        /* words with a letter; of those, in the list */
    int64_t distinct_chars;                   /* distinct non-whitespace code points */
    /* the honest gate: its three factors in [0, 1] and the counts behind them (always
     * filled, whichever gate decides total) */
    int kind;                                 /* ANDREA_GATE_*: the gate total is from */
    double dict, repeat, charset;
    int64_t letters, english_letters;         /* letters of candidate words; of English ones */
    int64_t chars, bad_chars;                 /* non-whitespace code points; of them garbage */
    int64_t byte_ngrams, distinct_byte_ngrams; /* 8-byte windows, whitespace runs as one space */
    int64_t norm_bytes, repeat_bytes;         /* bytes (whitespace runs as one); of them inside
                                                 a 32-byte window seen earlier */
    double common, order;                     /* the reference factors (1 without one) */
    int has_reference;
    double word_logp;                         /* mean log p(listed word) - real text's */
    double order_gain;                        /* pair gain over shuffled / real text's */
    int64_t listed_words, listed_pairs;       /* their evidence: listed words; adjacent pairs */
} andrea_gate_result;

/* Scores text[0..len) (UTF-8 expected, any bytes accepted) with the gate `kind`: total
 * and pass are that gate's, every part of both gates is filled. 0, or -1 with
 * andrea_error() (out of memory, g NULL, unknown kind). */
int andrea_gate_evaluate(const char *text, size_t len, const andrea_gate *g, int kind,
                         andrea_gate_result *out);
/* The course's formula: andrea_gate_evaluate(..., ANDREA_GATE_COURSE, out). */
int andrea_gate_score(const char *text, size_t len, const andrea_gate *g, andrea_gate_result *out);

/* The halting rule: counts consecutive failing samples. Zero-initialise. */
typedef struct {
    int consecutive_fails;
    int64_t samples;
} andrea_gate_watch;
/* Records one sample; returns 1 when training should stop (ANDREA_GATE_PATIENCE
 * failures in a row), else 0. */
int andrea_gate_watch_update(andrea_gate_watch *w, const andrea_gate_result *r);

#ifdef __cplusplus
}
#endif
#endif /* ANDREA_GATE_H */
