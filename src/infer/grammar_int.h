/* grammar_int.h - what the GBNF parser (grammar_parse.c) hands the matcher (grammar.c):
 * the compiled grammar, one array of elements (grammar.c's comment says how it matches). */
#ifndef ANDREA_INFER_GRAMMAR_INT_H
#define ANDREA_INFER_GRAMMAR_INT_H

#include <stdint.h>

#include "infer/grammar.h"

enum { G_END, G_BYTES, G_REF };
enum { GRAMMAR_MAX_DEPTH = 200 }; /* nesting of rules (and groups) a text may reach */

typedef struct {
    int kind;
    int ref;          /* G_REF: the rule */
    uint32_t mask[8]; /* G_BYTES: byte b is allowed when bit b is set */
} gel;

struct andrea_grammar {
    gel *el;
    int n_el;
    int *alt_start, *rule_first, *rule_nalts;
    int n_rules, root;
};

#endif
