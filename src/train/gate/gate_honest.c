/*
 * gate_honest.c - the honest coherence gate (andrea_gate.h, docs/coherence-gate.md):
 * five factors in [0, 1] from coherence.c's counts and gate_reference.c's word model,
 * multiplied, so a sample must be made of dictionary words AND not loop AND be text AND
 * use the words real text uses AND put them in an order real text does, where the
 * course's sum lets any two of its parts carry a sample that fails the others.
 */
#include <string.h>

#include "andrea_gate.h"
#include "train/gate/gate_internal.h"
#include "util/error.h"

/* The mappings' ends: below lo a factor is 0, above hi it is 1, linear between.
 * Measured reasons for each (docs/coherence-gate.md, bench/gate_scores.sh):
 *   dict   English prose and chat answers: 0.89-0.99 of letters in wamerican words; a
 *          byte model (baby, tinyshakespeare) 0.11-0.19 at step 100, 0.31 at 200-400,
 *          0.40-0.72 from step 500 on; random letters under 0.05. The score crosses 30
 *          at 0.38.
 *   repeat distinct word trigrams / byte 8-grams: prose 0.9 and over, loops near 0.
 *   charset: a share of garbage code points of 10% or more is not text. */
#define DICT_LO 0.20
#define DICT_HI 0.80
#define REPEAT_LO 0.30
#define REPEAT_HI 0.70
#define GARBAGE_MAX 0.10
/* The repeat coverage (bytes in a 32-byte window seen earlier): prose, chat and
 * dictionary text 0-0.05 at 1500 bytes, fortunes' held-out pieces up to 0.17 (quoted
 * refrains); a paragraph said twice 0.50, a phrase x 20 0.95. */
#define COVER_OK 0.15
#define COVER_BAD 0.40
#define MIN_COVER_BYTES 64
/* The reference factors, measured with fortunes as the reference (1500-byte pieces):
 *   common: listed words' log p minus real text's: prose, chat, Shakespeare -0.9 to
 *          +0.7, dictionary definitions -1.4 to -2.1; salads of random wamerican words
 *          -5.6 to -5.8.
 *   order: a sample's pair gain over its shuffles, over held-out fortunes': prose,
 *          chat, Shakespeare 0.5-1.2, dictionary definitions 0.24-0.55; shuffled prose
 *          and salads 0 +- 0.13 (tests/test_gate_table.sh, bench/gate_scores.sh). */
#define COMMON_LO -4.0
#define COMMON_HI -2.5
#define ORDER_LO 0.10
#define ORDER_HI 0.30
#define MIN_LISTED 5
#define MIN_PAIRS 10
/* Below this many word trigrams (byte 8-grams) the ratio is no evidence of a loop. */
#define MIN_TRIGRAMS 8
#define MIN_BYTE_NGRAMS 32

static double ramp(double x, double lo, double hi) {
    double t = (x - lo) / (hi - lo);
    return t < 0 ? 0 : t > 1 ? 1 : t;
}

static void honest_factors(andrea_gate_result *r) {
    /* no letters at all ("''''''", digits, empty): not text a reader could judge */
    r->dict = r->letters ? ramp((double)r->english_letters / (double)r->letters, DICT_LO, DICT_HI)
                         : 0.0;
    double rep = 1.0;
    if (r->trigrams >= MIN_TRIGRAMS) {
        double d3 = (double)r->distinct_trigrams / (double)r->trigrams;
        rep = ramp(d3, REPEAT_LO, REPEAT_HI);
    }
    if (r->byte_ngrams >= MIN_BYTE_NGRAMS) {
        double d8 = (double)r->distinct_byte_ngrams / (double)r->byte_ngrams;
        double c = ramp(d8, REPEAT_LO, REPEAT_HI);
        if (c < rep) rep = c;
    }
    if (r->norm_bytes >= MIN_COVER_BYTES) {
        double cover = (double)r->repeat_bytes / (double)r->norm_bytes;
        double c = 1.0 - ramp(cover, COVER_OK, COVER_BAD);
        if (c < rep) rep = c;
    }
    r->repeat = rep;
    double garbage = r->chars ? (double)r->bad_chars / (double)r->chars : 0.0;
    r->charset = 1.0 - garbage / GARBAGE_MAX;
    if (r->charset < 0) r->charset = 0;
    /* too few words of evidence, or no reference: the other factors decide */
    r->common = r->has_reference && r->listed_words >= MIN_LISTED
                    ? ramp(r->word_logp, COMMON_LO, COMMON_HI) : 1.0;
    r->order = r->has_reference && r->listed_pairs >= MIN_PAIRS
                   ? ramp(r->order_gain, ORDER_LO, ORDER_HI) : 1.0;
}

int andrea_gate_evaluate(const char *text, size_t len, const andrea_gate *g, int kind,
                         andrea_gate_result *out) {
    if (kind != ANDREA_GATE_HONEST && kind != ANDREA_GATE_COURSE) {
        memset(out, 0, sizeof *out);
        return andrea_set_error("coherence gate: unknown gate kind %d", kind);
    }
    if (andrea_gate_measure(text, len, g, out) || andrea_gate_ref_measure(g, text, len, out))
        return -1;
    honest_factors(out);
    if (kind == ANDREA_GATE_HONEST) {
        out->kind = kind;
        out->total = 100.0 * out->dict * out->repeat * out->charset * out->common * out->order;
        out->pass = out->total >= ANDREA_GATE_THRESHOLD;
    }
    return 0;
}

int andrea_gate_score(const char *text, size_t len, const andrea_gate *g, andrea_gate_result *out) {
    return andrea_gate_evaluate(text, len, g, ANDREA_GATE_COURSE, out);
}

int andrea_gate_kind_parse(const char *name, int *kind) {
    if (name && strcmp(name, "honest") == 0) return *kind = ANDREA_GATE_HONEST, 0;
    if (name && strcmp(name, "course") == 0) return *kind = ANDREA_GATE_COURSE, 0;
    return andrea_set_error("unknown gate '%s' (expected honest or course)", name ? name : "");
}

const char *andrea_gate_kind_name(int kind) {
    return kind == ANDREA_GATE_HONEST ? "honest" : kind == ANDREA_GATE_COURSE ? "course" : "?";
}
