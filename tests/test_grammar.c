/* test_grammar.c - the GBNF matcher (src/infer/grammar.c): whole texts accepted or refused
 * byte by byte and token by token, UTF-8 classes, bounded and unbounded repeats, the
 * first-byte filter agreeing with a full run, and parse errors naming their place. */
#include <string.h>

#include "andrea.h"
#include "infer/grammar.h"
#include "test_util.h"

static const char *JSON =
    "root ::= object\n"
    "value ::= object | array | string | number | \"true\" | \"false\" | \"null\"\n"
    "object ::= \"{\" ws ( string ws \":\" ws value ws ( \",\" ws string ws \":\" ws value ws )* )? \"}\"\n"
    "array ::= \"[\" ws ( value ws ( \",\" ws value ws )* )? \"]\"\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x00-\\x1f] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} ) )* \"\\\"\"\n"
    "number ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]{1,15} )?  # bounded digits\n"
    "ws ::= \" \"?\n";

/* 1 when the whole text is a sentence: fed in pieces of `chunk` bytes */
static int accepts(const andrea_grammar *g, const char *text, size_t chunk) {
    andrea_grammar_state *s = andrea_grammar_start(g);
    size_t n = strlen(text);
    int ok = s != NULL;
    for (size_t i = 0; ok && i < n; i += chunk) {
        size_t k = n - i < chunk ? n - i : chunk;
        int allowed = andrea_grammar_allows(g, s, (const uint8_t *)text + i, k);
        ok = allowed == 1 && andrea_grammar_advance(g, s, (const uint8_t *)text + i, k) == 0;
        if (allowed == 0 && andrea_grammar_advance(g, s, (const uint8_t *)text + i, k) == 0) {
            fprintf(stderr, "allows said no but advance took '%.*s'\n", (int)k, text + i);
            tu_failures++;
        }
    }
    ok = ok && andrea_grammar_can_end(s);
    andrea_grammar_state_free(s);
    return ok;
}

int main(void) {
    andrea_grammar *g = andrea_grammar_parse(JSON, strlen(JSON));
    CHECK(g != NULL);
    if (!g) {
        fprintf(stderr, "%s\n", andrea_error());
        return 1;
    }
    const char *good[] = {"{}", "{\"a\":1}", "{ \"a\": [1, 2.5, \"x\", true, null, {}] }",
                          "{\"k\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}", "{\"q\":\"\\\"\\u00e9\"}",
                          "{\"n\":-0.125}"};
    const char *bad[] = {"", "{", "{a:1}", "{\"a\":01}", "{\"a\":1,}", "[1]", "{\"a\":\"\n\"}",
                         "{\"a\":\"\xff\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":1234567890123456789}",
                         "{\"a\":1}x", "{  }"};
    for (size_t chunk = 1; chunk <= 5; chunk += 2) {
        for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
            int ok = accepts(g, good[i], chunk);
            if (!ok) fprintf(stderr, "refused a valid text (chunk %zu): %s\n", chunk, good[i]);
            CHECK(ok);
        }
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            int ok = accepts(g, bad[i], chunk);
            if (ok) fprintf(stderr, "accepted an invalid text (chunk %zu): %s\n", chunk, bad[i]);
            CHECK(!ok);
        }
    }
    /* a complete object can end and can take nothing more */
    andrea_grammar_state *s = andrea_grammar_start(g);
    CHECK(s && !andrea_grammar_can_end(s) && andrea_grammar_can_continue(s));
    CHECK(andrea_grammar_advance(g, s, (const uint8_t *)"{}", 2) == 0);
    CHECK(andrea_grammar_can_end(s) && !andrea_grammar_can_continue(s));
    CHECK(andrea_grammar_allows(g, s, (const uint8_t *)" ", 1) == 0);
    CHECK(andrea_grammar_advance(g, s, (const uint8_t *)" ", 1) == -1 && andrea_grammar_can_end(s));
    andrea_grammar_state_free(s);
    andrea_grammar_free(g);

    /* repeats: exactly {3}, {2,4}, + and a dot that takes any character */
    const char *rep = "root ::= \"a\"{3} [0-9]{2,4} x+ .\nx ::= \"xy\" | \"z\"";
    g = andrea_grammar_parse(rep, strlen(rep));
    CHECK(g != NULL);
    if (g) {
        CHECK(accepts(g, "aaa12xy\xce\xbb", 1) && accepts(g, "aaa1234zxyz!", 2));
        CHECK(!accepts(g, "aa12z!", 1) && !accepts(g, "aaa12345z!", 1) && !accepts(g, "aaa12!", 1));
        andrea_grammar_free(g);
    }
    /* errors name the place; left recursion and undefined rules are refused */
    struct { const char *text, *msg; } errs[] = {
        {"root ::= \"a\n", "not closed"}, {"root ::= [a-\n", "runs backwards"}, {"root ::= x", "'x' is used but not defined"},
        {"x ::= \"a\"", "no rule 'root'"}, {"root ::= root \"a\" | \"b\"", "recurse"},
        {"root ::= \"a\"\n  ::= \"b\"", "line 2, column 3"}, {"root ::= \"a\"{5,2}", "m <= n"}};
    for (size_t i = 0; i < sizeof errs / sizeof *errs; i++) {
        andrea_grammar *bad_g = andrea_grammar_parse(errs[i].text, strlen(errs[i].text));
        CHECK(bad_g == NULL);
        if (!bad_g && !strstr(andrea_error(), errs[i].msg)) {
            fprintf(stderr, "error for '%s': '%s' lacks '%s'\n", errs[i].text, andrea_error(), errs[i].msg);
            tu_failures++;
        }
        andrea_grammar_free(bad_g);
    }
    if (tu_failures) return 1;
    printf("grammar: JSON, UTF-8 classes, repeats and errors ok\n");
    return 0;
}
