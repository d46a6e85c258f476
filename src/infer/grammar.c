/*
 * grammar.c - GBNF grammars (grammar.h) as a pushdown matcher over bytes (the parser is
 * grammar_parse.c).
 *
 * A grammar compiles to one array of elements: a set of bytes (a 256-bit mask), a
 * reference to a rule, or END (the end of an alternative). A rule is a list of
 * alternatives, each the position of its first element. The matcher's state is a set of
 * stacks; a stack holds, per nesting level, the position of the next element to match,
 * its top always a byte set (references are expanded into their alternatives at once,
 * finished alternatives popped). An empty stack means the text may end. A byte moves
 * every stack whose top set holds it; the others die. Repetition compiles to right
 * recursion (R ::= X R | empty), whose continuation is dropped when it is an END, so a
 * stack does not grow with the repeats; bounded repeats nest (X (X (X)?)?)? so that
 * there is one way to match a given text, not C(n, k).
 */
#include <stdlib.h>
#include <string.h>

#include "infer/grammar_int.h"
#include "util/error.h"

enum { MAX_STACKS = 4096 };

typedef struct {
    int *pos;
    int n;
} gstack;

struct andrea_grammar_state {
    gstack *st;
    int n, cap;
    int err;
    int have_first;
    uint32_t first[8]; /* the bytes some stack can take next */
};

/* ---- matching --------------------------------------------------------------------------- */

static int state_add(andrea_grammar_state *s, const int *pos, int n) {
    for (int i = 0; i < s->n; i++)
        if (s->st[i].n == n && memcmp(s->st[i].pos, pos, sizeof(int) * (size_t)n) == 0) return 0;
    if (s->n == MAX_STACKS) return andrea_set_error("grammar: too ambiguous (over %d parses at once)", MAX_STACKS);
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        gstack *x = realloc(s->st, sizeof *x * (size_t)cap);
        if (!x) return andrea_set_error("grammar: out of memory");
        s->st = x;
        s->cap = cap;
    }
    int *copy = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!copy) return andrea_set_error("grammar: out of memory");
    memcpy(copy, pos, sizeof(int) * (size_t)n);
    s->st[s->n++] = (gstack){copy, n};
    return 0;
}

/* Adds to s every stack that pos (n levels; buf has room for GRAMMAR_MAX_DEPTH + 2) expands to. */
static int expand(const andrea_grammar *g, andrea_grammar_state *s, int *pos, int n, int depth) {
    while (n > 0 && g->el[pos[n - 1]].kind == G_END) n--;
    if (n == 0 || g->el[pos[n - 1]].kind == G_BYTES) return state_add(s, pos, n);
    if (depth > GRAMMAR_MAX_DEPTH || n > GRAMMAR_MAX_DEPTH)
        return andrea_set_error("grammar: rules recurse without consuming a byte (left recursion?)");
    int r = g->el[pos[n - 1]].ref, cont = pos[n - 1] + 1;
    int base = g->el[cont].kind == G_END ? n - 1 : n; /* a tail reference leaves nothing behind */
    int saved = pos[n - 1];
    pos[n - 1] = cont;
    for (int a = 0; a < g->rule_nalts[r]; a++) {
        pos[base] = g->alt_start[g->rule_first[r] + a];
        if (expand(g, s, pos, base + 1, depth + 1)) return -1;
    }
    pos[n - 1] = saved;
    return 0;
}

static void state_clear(andrea_grammar_state *s) {
    for (int i = 0; i < s->n; i++) free(s->st[i].pos);
    s->n = 0;
    s->have_first = 0;
}

void andrea_grammar_state_free(andrea_grammar_state *s) {
    if (!s) return;
    state_clear(s);
    free(s->st);
    free(s);
}

andrea_grammar_state *andrea_grammar_start(const andrea_grammar *g) {
    andrea_grammar_state *s = calloc(1, sizeof *s);
    int pos[GRAMMAR_MAX_DEPTH + 2];
    if (!s) return andrea_set_error("grammar: out of memory"), NULL;
    for (int a = 0; a < g->rule_nalts[g->root]; a++) {
        pos[0] = g->alt_start[g->rule_first[g->root] + a];
        if (expand(g, s, pos, 1, 0)) {
            andrea_grammar_state_free(s);
            return NULL;
        }
    }
    return s;
}

static int has_byte(const uint32_t *mask, uint8_t b) { return (mask[b >> 5] >> (b & 31)) & 1; }

/* next = s moved past byte b; 0, or -1 on an error. */
static int step(const andrea_grammar *g, const andrea_grammar_state *s, uint8_t b, andrea_grammar_state *next) {
    int pos[GRAMMAR_MAX_DEPTH + 2];
    for (int i = 0; i < s->n; i++) {
        const gstack *st = &s->st[i];
        if (!st->n || !has_byte(g->el[st->pos[st->n - 1]].mask, b)) continue;
        memcpy(pos, st->pos, sizeof(int) * (size_t)st->n);
        pos[st->n - 1]++;
        if (expand(g, next, pos, st->n, 0)) return -1;
    }
    return 0;
}

static void first_bytes(const andrea_grammar *g, andrea_grammar_state *s) {
    memset(s->first, 0, sizeof s->first);
    for (int i = 0; i < s->n; i++)
        if (s->st[i].n)
            for (int k = 0; k < 8; k++) s->first[k] |= g->el[s->st[i].pos[s->st[i].n - 1]].mask[k];
    s->have_first = 1;
}

/* into = s moved past bytes (into empty when they break the grammar). */
static int run(const andrea_grammar *g, const andrea_grammar_state *s, const uint8_t *b, size_t n,
               andrea_grammar_state *into) {
    andrea_grammar_state tmp = {0};
    const andrea_grammar_state *cur = s;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        andrea_grammar_state *dst = (n - i) % 2 ? into : &tmp; /* the last byte lands in into */
        state_clear(dst);
        rc = step(g, cur, b[i], dst);
        cur = dst;
        if (!dst->n) break;
    }
    if (!rc && cur != into) { /* stopped early on an empty state */
        state_clear(into);
    }
    state_clear(&tmp);
    free(tmp.st);
    return rc;
}

int andrea_grammar_allows(const andrea_grammar *g, const andrea_grammar_state *s,
                          const uint8_t *bytes, size_t n) {
    if (!n) return 0;
    andrea_grammar_state *m = (andrea_grammar_state *)s; /* the first-byte cache only */
    if (!m->have_first) first_bytes(g, m);
    if (!has_byte(m->first, bytes[0])) return 0;
    if (n == 1) return 1; /* a stack that takes a byte always expands to one at least */
    andrea_grammar_state out = {0};
    int rc = run(g, s, bytes, n, &out);
    int ok = out.n > 0;
    state_clear(&out);
    free(out.st);
    return rc ? -1 : ok;
}

int andrea_grammar_advance(const andrea_grammar *g, andrea_grammar_state *s, const uint8_t *bytes,
                           size_t n) {
    andrea_grammar_state out = {0};
    if (run(g, s, bytes, n, &out) || !out.n) {
        state_clear(&out);
        free(out.st);
        return -1;
    }
    state_clear(s);
    free(s->st);
    *s = out;
    return 0;
}

int andrea_grammar_can_end(const andrea_grammar_state *s) {
    for (int i = 0; i < s->n; i++)
        if (s->st[i].n == 0) return 1;
    return 0;
}

int andrea_grammar_can_continue(const andrea_grammar_state *s) {
    for (int i = 0; i < s->n; i++)
        if (s->st[i].n) return 1;
    return 0;
}
