/* cmd_score.c - `andrea score FILE|-...`: the coherence gate's score of text samples, by
 * the honest gate (default) or the course's formula (--gate course); both gates' parts
 * are printed, the verdict is the chosen gate's. The word list and the reference text
 * are loaded once for all the files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea.h"
#include "andrea_gate.h"
#include "args.h"
#include "commands.h"
#include "util/file.h"
#include "util/json.h"

static void json_string_out(const char *s) { andrea_json_write_string(stdout, s, strlen(s)); }

/* Reads all of f into a malloc'd buffer. */
static char *read_all(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *b = realloc(buf, cap * 2);
        if (!b) {
            free(buf);
            return NULL;
        }
        buf = b;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* Scores one file (- : standard input) and prints its table or JSON line; *total set.
 * 0, or 1 after printing why. */
static int score_file(const char *path, const andrea_gate *g, int kind, int json, double *total) {
    int from_stdin = strcmp(path, "-") == 0;
    uint64_t size;
    FILE *f = from_stdin ? stdin : andrea_file_fopen_regular(path, NULL, 0, &size);
    if (!f) {
        fprintf(stderr, "andrea score: %s\n", andrea_error());
        return 1;
    }
    size_t len = 0;
    char *text = read_all(f, &len);
    if (!from_stdin) fclose(f);
    if (!text) {
        fprintf(stderr, "andrea score: cannot read '%s' (I/O error or out of memory)\n", path);
        return 1;
    }
    andrea_gate_result res;
    if (andrea_gate_evaluate(text, len, g, kind, &res)) {
        fprintf(stderr, "andrea score: %s\n", andrea_error());
        free(text);
        return 1;
    }
    if (json) {
        printf("{\"file\":");
        json_string_out(path);
        printf(",\"gate\":\"%s\",\"dict\":%.6f,\"repeat\":%.6f,\"charset\":%.6f,"
               "\"letters\":%lld,\"english_letters\":%lld,\"chars\":%lld,\"bad_chars\":%lld,"
               "\"byte_ngrams\":%lld,\"distinct_byte_ngrams\":%lld,", andrea_gate_kind_name(kind),
               res.dict, res.repeat, res.charset, (long long)res.letters,
               (long long)res.english_letters, (long long)res.chars, (long long)res.bad_chars,
               (long long)res.byte_ngrams, (long long)res.distinct_byte_ngrams);
        printf("\"norm_bytes\":%lld,\"repeat_bytes\":%lld,\"common\":%.6f,\"order\":%.6f,"
               "\"word_logp\":%.6f,\"order_gain\":%.6f,\"listed_words\":%lld,"
               "\"listed_pairs\":%lld,", (long long)res.norm_bytes, (long long)res.repeat_bytes,
               res.common, res.order, res.word_logp, res.order_gain,
               (long long)res.listed_words, (long long)res.listed_pairs);
        printf("\"bigram\":%.6f,\"trigram\":%.6f,\"english\":%.6f,\"chardiv\":%.6f,"
               "\"total\":%.6f,\"threshold\":%g,\"pass\":%s,\"words\":%lld,\"bigrams\":%lld,"
               "\"distinct_bigrams\":%lld,\"trigrams\":%lld,\"distinct_trigrams\":%lld,"
               "\"candidates\":%lld,\"english_words\":%lld,\"distinct_chars\":%lld}\n",
               res.bigram, res.trigram, res.english, res.chardiv, res.total,
               ANDREA_GATE_THRESHOLD, res.pass ? "true" : "false", (long long)res.words,
               (long long)res.bigrams, (long long)res.distinct_bigrams, (long long)res.trigrams,
               (long long)res.distinct_trigrams, (long long)res.candidates,
               (long long)res.english_words, (long long)res.distinct_chars);
    } else {
        printf("coherence gate: '%s' (%zu bytes, %lld words; word list '%s', %zu words)\n",
               path, len, (long long)res.words, andrea_gate_words_path(g),
               andrea_gate_num_words(g));
        double course = res.bigram + res.trigram + res.english + res.chardiv;
        double honest = 100.0 * res.dict * res.repeat * res.charset * res.common * res.order;
        printf(" the course's formula (a sum):\n");
        printf("  bigram diversity   %6.2f / 35   (%lld distinct of %lld word bigrams)\n",
               res.bigram, (long long)res.distinct_bigrams, (long long)res.bigrams);
        printf("  trigram diversity  %6.2f / 35   (%lld distinct of %lld word trigrams)\n",
               res.trigram, (long long)res.distinct_trigrams, (long long)res.trigrams);
        printf("  English words      %6.2f / 20   (%lld of %lld words in the list)\n",
               res.english, (long long)res.english_words, (long long)res.candidates);
        printf("  character variety  %6.2f / 10   (%lld distinct characters; 20 or more = full)\n",
               res.chardiv, (long long)res.distinct_chars);
        printf("  course             %6.2f / 100\n", course);
        printf(" the honest gate (a product):\n");
        printf("  dictionary words   %6.3f        (%lld of %lld letters in listed words)\n",
               res.dict, (long long)res.english_letters, (long long)res.letters);
        printf("  no repetition      %6.3f        (%lld of %lld word trigrams, %lld of %lld "
               "byte 8-grams distinct)\n", res.repeat, (long long)res.distinct_trigrams,
               (long long)res.trigrams, (long long)res.distinct_byte_ngrams,
               (long long)res.byte_ngrams);
        printf("                                   (%lld of %lld bytes repeat an earlier 32-byte "
               "window)\n", (long long)res.repeat_bytes, (long long)res.norm_bytes);
        printf("  clean characters   %6.3f        (%lld of %lld characters are garbage)\n",
               res.charset, (long long)res.bad_chars, (long long)res.chars);
        printf("  common words       %6.3f        (log p of %lld listed words %+.2f nats from "
               "real text's)\n", res.common, (long long)res.listed_words, res.word_logp);
        printf("  word order         %6.3f        (%lld word pairs: %.2f of real text's gain "
               "over shuffled)\n", res.order, (long long)res.listed_pairs, res.order_gain);
        printf("                                   (reference '%s', %lld words)\n",
               andrea_gate_reference_path(g), (long long)andrea_gate_reference_words(g));
        printf("  honest             %6.2f / 100\n", honest);
        printf("  total              %6.2f / 100  %s (%s gate, threshold %g)\n", res.total,
               res.pass ? "PASS" : "FAIL", andrea_gate_kind_name(kind), ANDREA_GATE_THRESHOLD);
    }
    *total = res.total;
    free(text);
    return 0;
}

int cmd_score(int argc, char **argv) {
    const char *words = NULL, *gate = "honest", *reference = NULL;
    float fail_below = -1.0f;
    int json = 0;
    arg_spec specs[] = {
        {"words", 0, ARG_STR, &words,
         "English word list, one per line (default: $ANDREA_WORDS, /usr/share/dict/american-english)", 0},
        {"fail-below", 0, ARG_FLOAT, &fail_below,
         "exit 1 when a total is below this (e.g. 30, the gate's threshold)", 0},
        {"json", 0, ARG_FLAG, &json, "print one JSON object per file instead of the table", 0},
        {"gate", 0, ARG_STR, &gate, "honest | course: which gate's total decides (honest)", 0},
        {"reference", 0, ARG_STR, &reference,
         "real text for the honest gate's word model, a file or a folder of them (default: "
         "$ANDREA_REFERENCE, /usr/share/games/fortunes)", 0},
    };
    int n_specs = (int)(sizeof specs / sizeof specs[0]);
    enum { MAX_FILES = 4096 };
    static const char *pos[MAX_FILES];
    int n_pos = 0;
    int r = args_parse("score", argc, argv, specs, n_specs, pos, MAX_FILES, &n_pos);
    if (r == 1) {
        args_usage("score", "FILE|-... [--gate honest|course] [--fail-below 30] [--words FILE] "
                   "[--reference FILE|DIR] [--json]", specs, n_specs);
        return 0;
    }
    if (r) return 2;
    if (n_pos < 1) {
        fprintf(stderr, "andrea score: give the text files to score, or - for standard input\n");
        return 2;
    }
    if (args_seen(specs, n_specs, "fail-below") && !(fail_below >= 0 && fail_below <= 100)) {
        fprintf(stderr, "andrea score: --fail-below must be between 0 and 100, got %g\n",
                (double)fail_below);
        return 2;
    }
    int kind;
    if (andrea_gate_kind_parse(gate, &kind)) {
        fprintf(stderr, "andrea score: --gate: %s\n", andrea_error());
        return 2;
    }
    /* loaded once: the reference's word model is most of the time of one score */
    andrea_gate *g = andrea_gate_load(words);
    if (!g || andrea_gate_load_reference(g, reference)) {
        fprintf(stderr, "andrea score: %s\n", andrea_error());
        andrea_gate_free(g);
        return 1;
    }
    int rc = 0;
    for (int k = 0; k < n_pos && rc != 1; k++) {
        double total;
        if (score_file(pos[k], g, kind, json, &total)) rc = 1;
        else if (args_seen(specs, n_specs, "fail-below") && total < fail_below) rc = 3;
    }
    andrea_gate_free(g);
    return rc == 3 ? 1 : rc;
}
