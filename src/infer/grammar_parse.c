/*
 * grammar_parse.c - GBNF text (grammar.h) to the compiled grammar of grammar_int.h: rules
 * of alternatives of elements; literals become one byte set per byte, classes and `.` byte
 * sets or rules of their UTF-8 sequences, groups and repeats rules of their own.
 */
#include <stdlib.h>
#include <string.h>

#include "infer/grammar_int.h"
#include "util/error.h"

enum { MAX_REPEAT = 1000 };

typedef struct {
    gel *e;
    int n, cap;
} galt;

typedef struct {
    char *name; /* NULL: made by the parser for a group, a class or a repeat */
    galt *alts;
    int n_alts, cap, defined;
} grule;

/* ---- parsing ------------------------------------------------------------------------ */

typedef struct {
    const char *s, *end, *text;
    grule *rules;
    int n_rules, cap;
    int failed;
} parser;

static int perr(parser *p, const char *what) {
    if (p->failed) return -1;
    int line = 1, col = 1;
    for (const char *c = p->text; c < p->s && c < p->end; c++)
        if (*c == '\n') line++, col = 1;
        else col++;
    p->failed = 1;
    return andrea_set_error("grammar: line %d, column %d: %s", line, col, what);
}

static int alt_push(galt *a, gel e) {
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 8;
        gel *x = realloc(a->e, sizeof *x * (size_t)cap);
        if (!x) return -1;
        a->e = x;
        a->cap = cap;
    }
    a->e[a->n++] = e;
    return 0;
}

static gel ref_el(int r) {
    gel e = {G_REF, r, {0}};
    return e;
}

static gel byte_el(uint8_t b) {
    gel e = {G_BYTES, 0, {0}};
    e.mask[b >> 5] |= 1u << (b & 31);
    return e;
}

/* A new rule (named or not); its id, or -1. */
static int rule_new(parser *p, const char *name, size_t n) {
    if (p->n_rules == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        grule *r = realloc(p->rules, sizeof *r * (size_t)cap);
        if (!r) return perr(p, "out of memory");
        p->rules = r;
        p->cap = cap;
    }
    grule *r = &p->rules[p->n_rules];
    memset(r, 0, sizeof *r);
    if (name) {
        if (!(r->name = malloc(n + 1))) return perr(p, "out of memory");
        memcpy(r->name, name, n);
        r->name[n] = '\0';
    }
    return p->n_rules++;
}

static int rule_find(parser *p, const char *name, size_t n) {
    for (int i = 0; i < p->n_rules; i++)
        if (p->rules[i].name && strlen(p->rules[i].name) == n && memcmp(p->rules[i].name, name, n) == 0)
            return i;
    return rule_new(p, name, n);
}

/* A new, empty alternative of rule r. */
static galt *rule_alt(parser *p, int r) {
    grule *g = &p->rules[r];
    if (g->n_alts == g->cap) {
        int cap = g->cap ? 2 * g->cap : 4;
        galt *a = realloc(g->alts, sizeof *a * (size_t)cap);
        if (!a) return perr(p, "out of memory"), NULL;
        g->alts = a;
        g->cap = cap;
    }
    galt *a = &g->alts[g->n_alts++];
    memset(a, 0, sizeof *a);
    return a;
}

static void skip_space(parser *p) {
    while (p->s < p->end) {
        if (*p->s == '#')
            while (p->s < p->end && *p->s != '\n') p->s++;
        else if (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')
            p->s++;
        else
            break;
    }
}

static int is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static size_t name_len(const parser *p) {
    size_t n = 0;
    while (p->s + n < p->end && is_name_char(p->s[n])) n++;
    return n;
}

/* Is a rule definition ("name ::=") next? */
static int at_definition(const parser *p) {
    size_t n = name_len(p);
    if (!n) return 0;
    const char *c = p->s + n;
    while (c < p->end && (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r')) c++;
    return p->end - c >= 3 && memcmp(c, "::=", 3) == 0;
}

static int hex_digits(parser *p, int n, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < n; i++, p->s++) {
        char c = p->s < p->end ? *p->s : 0;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return perr(p, "a hexadecimal escape needs hex digits");
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return 0;
}

/* One character of a literal or class (escapes included) as a code point. */
static int parse_char(parser *p, uint32_t *cp) {
    if (p->s >= p->end) return perr(p, "unexpected end of the grammar");
    unsigned char c = (unsigned char)*p->s;
    if (c == '\\') {
        p->s++;
        char e = p->s < p->end ? *p->s++ : 0;
        switch (e) {
        case 'n': *cp = '\n'; return 0;
        case 'r': *cp = '\r'; return 0;
        case 't': *cp = '\t'; return 0;
        case 'x': return hex_digits(p, 2, cp);
        case 'u': return hex_digits(p, 4, cp);
        case 'U': return hex_digits(p, 8, cp);
        case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'':
            *cp = (uint32_t)e;
            return 0;
        default: return perr(p, "unknown escape");
        }
    }
    /* UTF-8 in the grammar's text */
    int n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (!n || p->end - p->s < n) return perr(p, "invalid UTF-8 in the grammar");
    uint32_t v = n == 1 ? c : c & (0x7F >> n);
    for (int i = 1; i < n; i++) v = v << 6 | ((unsigned char)p->s[i] & 0x3F);
    p->s += n;
    *cp = v;
    return 0;
}

static int utf8_encode(uint32_t cp, uint8_t *b) {
    if (cp < 0x80) return b[0] = (uint8_t)cp, 1;
    if (cp < 0x800) return b[0] = (uint8_t)(0xC0 | cp >> 6), b[1] = (uint8_t)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | cp >> 12);
        b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (uint8_t)(0xF0 | cp >> 18);
    b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    b[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Code points [lo, hi] of one UTF-8 length n as alternatives of byte ranges, each a
 * product of one range per byte (regex engines' UTF-8 range split). */
static int utf8_split(parser *p, int r, uint32_t lo, uint32_t hi, int n) {
    for (int i = 1; i < n; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if (lo & m) return utf8_split(p, r, lo, lo | m, n) || utf8_split(p, r, (lo | m) + 1, hi, n) ? -1 : 0;
            if ((hi & m) != m) return utf8_split(p, r, lo, (hi & ~m) - 1, n) || utf8_split(p, r, hi & ~m, hi, n) ? -1 : 0;
        }
    }
    uint8_t a[4], b[4];
    utf8_encode(lo, a);
    utf8_encode(hi, b);
    galt *alt = rule_alt(p, r);
    if (!alt) return -1;
    for (int k = 0; k < n; k++) {
        gel e = {G_BYTES, 0, {0}};
        for (int v = a[k]; v <= b[k]; v++) e.mask[v >> 5] |= 1u << (v & 31);
        if (alt_push(alt, e)) return perr(p, "out of memory");
    }
    return 0;
}

typedef struct {
    uint32_t lo, hi;
} cprange;

static int by_lo(const void *a, const void *b) {
    const cprange *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* A set of code point ranges as one element: a byte set when it is ASCII only, else a
 * reference to a new rule of its UTF-8 sequences. */
static int class_element(parser *p, cprange *rg, int n, int negate, gel *out) {
    qsort(rg, (size_t)n, sizeof *rg, by_lo);
    cprange set[260]; /* merged, then complemented: at most n + 1 ranges, then surrogates */
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k && rg[i].lo <= set[k - 1].hi + 1) {
            if (rg[i].hi > set[k - 1].hi) set[k - 1].hi = rg[i].hi;
        } else {
            set[k++] = rg[i];
        }
    if (negate) {
        cprange inv[260];
        int m = 0;
        uint32_t next = 0;
        for (int i = 0; i < k; i++) {
            if (set[i].lo > next) inv[m++] = (cprange){next, set[i].lo - 1};
            next = set[i].hi + 1;
        }
        if (next <= 0x10FFFF) inv[m++] = (cprange){next, 0x10FFFF};
        memcpy(set, inv, sizeof *inv * (size_t)m);
        k = m;
    }
    gel ascii = {G_BYTES, 0, {0}};
    int any_ascii = 0, wide = 0;
    for (int i = 0; i < k; i++) {
        for (uint32_t c = set[i].lo; c <= set[i].hi && c < 0x80; c++) ascii.mask[c >> 5] |= 1u << (c & 31), any_ascii = 1;
        wide |= set[i].hi >= 0x80;
    }
    if (!wide) {
        if (!any_ascii) return perr(p, "an empty character class");
        *out = ascii;
        return 0;
    }
    int r = rule_new(p, NULL, 0);
    if (r < 0) return -1;
    if (any_ascii) {
        galt *a = rule_alt(p, r);
        if (!a || alt_push(a, ascii)) return perr(p, "out of memory");
    }
    static const uint32_t LEN_HI[4] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
    for (int i = 0; i < k; i++)
        for (int len = 2; len <= 4; len++) {
            uint32_t lo = set[i].lo > LEN_HI[len - 2] + 1 ? set[i].lo : LEN_HI[len - 2] + 1;
            uint32_t hi = set[i].hi < LEN_HI[len - 1] ? set[i].hi : LEN_HI[len - 1];
            for (uint32_t a = lo; a <= hi;) { /* without the surrogates D800-DFFF */
                uint32_t b = a < 0xD800 && hi >= 0xD800 ? 0xD7FF : hi;
                if (a >= 0xD800 && a <= 0xDFFF) {
                    a = 0xE000;
                    continue;
                }
                if (utf8_split(p, r, a, b, len)) return -1;
                a = b + 1;
            }
        }
    *out = ref_el(r);
    return 0;
}

static int parse_class(parser *p, gel *out) {
    p->s++; /* [ */
    int negate = p->s < p->end && *p->s == '^';
    if (negate) p->s++;
    cprange rg[256];
    int n = 0;
    while (p->s < p->end && *p->s != ']') {
        uint32_t lo, hi;
        if (parse_char(p, &lo)) return -1;
        hi = lo;
        if (p->end - p->s >= 2 && *p->s == '-' && p->s[1] != ']') {
            p->s++;
            if (parse_char(p, &hi)) return -1;
        }
        if (hi < lo || hi > 0x10FFFF) return perr(p, "a character range runs backwards or past U+10FFFF");
        if (n == 256) return perr(p, "a character class has at most 256 ranges");
        rg[n++] = (cprange){lo, hi};
    }
    if (p->s >= p->end) return perr(p, "a character class is not closed with ]");
    p->s++;
    return class_element(p, rg, n, negate, out);
}

static int parse_alternatives(parser *p, int r, int depth);

/* One primary (literal, class, ., name or group) into unit. */
static int parse_primary(parser *p, galt *unit, int depth) {
    char c = *p->s;
    gel e;
    if (c == '"') {
        p->s++;
        while (p->s < p->end && *p->s != '"') {
            uint32_t cp;
            uint8_t b[4];
            if (parse_char(p, &cp)) return -1;
            int n = utf8_encode(cp, b);
            for (int i = 0; i < n; i++)
                if (alt_push(unit, byte_el(b[i]))) return perr(p, "out of memory");
        }
        if (p->s >= p->end) return perr(p, "a string is not closed with \"");
        p->s++;
        return 0;
    }
    if (c == '[') return parse_class(p, &e) || alt_push(unit, e) ? -1 : 0;
    if (c == '.') {
        p->s++;
        cprange all = {0, 0x10FFFF};
        return class_element(p, &all, 1, 0, &e) || alt_push(unit, e) ? -1 : 0;
    }
    if (c == '(') {
        p->s++;
        int r = rule_new(p, NULL, 0);
        if (r < 0 || parse_alternatives(p, r, depth + 1)) return -1;
        skip_space(p);
        if (p->s >= p->end || *p->s != ')') return perr(p, "a group is not closed with )");
        p->s++;
        return alt_push(unit, ref_el(r)) ? perr(p, "out of memory") : 0;
    }
    size_t n = name_len(p);
    if (!n) return perr(p, "expected a string, a class, a rule name or a group");
    int r = rule_find(p, p->s, n);
    p->s += n;
    return r < 0 || alt_push(unit, ref_el(r)) ? -1 : 0;
}

/* unit as one rule reference (a rule of its own unless it already is one). */
static int unit_rule(parser *p, galt *unit) {
    if (unit->n == 1 && unit->e[0].kind == G_REF) return unit->e[0].ref;
    int r = rule_new(p, NULL, 0);
    galt *a = r < 0 ? NULL : rule_alt(p, r);
    if (!a) return -1;
    *a = *unit;
    unit->e = NULL;
    unit->n = unit->cap = 0;
    return r;
}

/* X repeated [lo, hi] times (hi < 0: no bound) into a. */
static int repeat(parser *p, galt *a, int x, int lo, int hi) {
    for (int i = 0; i < lo; i++)
        if (alt_push(a, ref_el(x))) return perr(p, "out of memory");
    if (hi >= 0 && hi == lo) return 0;
    /* R ::= X R | empty (unbounded), or the nest R_k ::= X R_{k-1} | empty */
    int prev = -1;
    for (int k = 0; k < (hi < 0 ? 1 : hi - lo); k++) {
        int r = rule_new(p, NULL, 0);
        galt *one = r < 0 ? NULL : rule_alt(p, r);
        if (!one || alt_push(one, ref_el(x))) return -1;
        int tail = hi < 0 ? r : prev;
        if (tail >= 0 && alt_push(&p->rules[r].alts[0], ref_el(tail))) return perr(p, "out of memory");
        if (!rule_alt(p, r)) return -1; /* the empty alternative */
        prev = r;
    }
    return alt_push(a, ref_el(prev)) ? perr(p, "out of memory") : 0;
}

static int parse_count(parser *p, int *v) {
    if (p->s >= p->end || *p->s < '0' || *p->s > '9') return perr(p, "expected a number in { }");
    long x = 0;
    while (p->s < p->end && *p->s >= '0' && *p->s <= '9' && x <= MAX_REPEAT) x = x * 10 + (*p->s++ - '0');
    if (x > MAX_REPEAT) return perr(p, "a repeat count is at most 1000");
    *v = (int)x;
    return 0;
}

static int parse_sequence(parser *p, galt *a, int depth) {
    for (;;) {
        skip_space(p);
        if (p->s >= p->end || *p->s == '|' || *p->s == ')' || at_definition(p)) return 0;
        galt unit = {0};
        if (parse_primary(p, &unit, depth)) return free(unit.e), -1;
        char op = p->s < p->end ? *p->s : 0;
        if (op != '*' && op != '+' && op != '?' && op != '{') {
            for (int i = 0; i < unit.n; i++)
                if (alt_push(a, unit.e[i])) return free(unit.e), perr(p, "out of memory");
            free(unit.e);
            continue;
        }
        p->s++;
        int x = unit_rule(p, &unit), lo = 0, hi = -1;
        free(unit.e);
        if (x < 0) return -1;
        if (op == '+') lo = 1;
        else if (op == '?') hi = 1;
        else if (op == '{') {
            if (parse_count(p, &lo)) return -1;
            hi = lo;
            if (p->s < p->end && *p->s == ',') {
                p->s++;
                hi = -1;
                if (p->s < p->end && *p->s != '}' && parse_count(p, &hi)) return -1;
            }
            if (p->s >= p->end || *p->s != '}') return perr(p, "a repeat is not closed with }");
            p->s++;
            if (hi >= 0 && hi < lo) return perr(p, "a repeat {m,n} needs m <= n");
        }
        if (repeat(p, a, x, lo, hi)) return -1;
    }
}

static int parse_alternatives(parser *p, int r, int depth) {
    if (depth > GRAMMAR_MAX_DEPTH) return perr(p, "groups nested too deep");
    for (;;) {
        galt *a = rule_alt(p, r);
        if (!a) return -1;
        /* a may move when a nested group adds alternatives to r: fill a copy */
        galt seq = {0};
        int rc = parse_sequence(p, &seq, depth);
        p->rules[r].alts[p->rules[r].n_alts - 1] = seq;
        if (rc) return -1;
        skip_space(p);
        if (p->s >= p->end || *p->s != '|') return 0;
        p->s++;
    }
}

/* ---- compiling -------------------------------------------------------------------------- */

static andrea_grammar *compile(parser *p) {
    andrea_grammar *g = calloc(1, sizeof *g);
    int n_alts = 0, n_el = 0;
    for (int r = 0; r < p->n_rules; r++)
        for (int a = 0; a < p->rules[r].n_alts; a++) n_alts++, n_el += p->rules[r].alts[a].n + 1;
    if (!g || !(g->el = malloc(sizeof *g->el * (size_t)(n_el + 1))) ||
        !(g->alt_start = malloc(sizeof(int) * (size_t)(n_alts + 1))) ||
        !(g->rule_first = malloc(sizeof(int) * (size_t)p->n_rules)) ||
        !(g->rule_nalts = malloc(sizeof(int) * (size_t)p->n_rules))) {
        andrea_grammar_free(g);
        return andrea_set_error("grammar: out of memory"), NULL;
    }
    int ai = 0, ei = 0;
    for (int r = 0; r < p->n_rules; r++) {
        g->rule_first[r] = ai;
        g->rule_nalts[r] = p->rules[r].n_alts;
        for (int a = 0; a < p->rules[r].n_alts; a++) {
            g->alt_start[ai++] = ei;
            for (int i = 0; i < p->rules[r].alts[a].n; i++) g->el[ei++] = p->rules[r].alts[a].e[i];
            g->el[ei++] = (gel){G_END, 0, {0}};
        }
    }
    g->n_el = ei;
    g->n_rules = p->n_rules;
    return g;
}

static void parser_free(parser *p) {
    for (int r = 0; r < p->n_rules; r++) {
        for (int a = 0; a < p->rules[r].n_alts; a++) free(p->rules[r].alts[a].e);
        free(p->rules[r].alts);
        free(p->rules[r].name);
    }
    free(p->rules);
}

andrea_grammar *andrea_grammar_parse(const char *text, size_t n) {
    parser p = {text, text + n, text, NULL, 0, 0, 0};
    int rc = 0;
    for (;;) {
        skip_space(&p);
        if (p.s >= p.end) break;
        size_t k = name_len(&p);
        if (!k || !at_definition(&p)) {
            rc = perr(&p, "expected a rule: name ::= ...");
            break;
        }
        int r = rule_find(&p, p.s, k);
        if (r < 0) break;
        if (p.rules[r].defined) {
            rc = perr(&p, "a rule is defined twice");
            break;
        }
        p.rules[r].defined = 1;
        p.s += k;
        skip_space(&p);
        p.s += 3; /* ::= */
        if ((rc = parse_alternatives(&p, r, 0))) break;
    }
    int root = -1;
    for (int r = 0; !rc && !p.failed && r < p.n_rules; r++) {
        if (p.rules[r].name && !p.rules[r].defined) {
            andrea_set_error("grammar: rule '%s' is used but not defined", p.rules[r].name);
            rc = -1;
        }
        if (p.rules[r].name && strcmp(p.rules[r].name, "root") == 0) root = r;
    }
    if (!rc && !p.failed && root < 0) rc = andrea_set_error("grammar: no rule 'root'");
    andrea_grammar *g = rc || p.failed ? NULL : compile(&p);
    if (g) g->root = root;
    parser_free(&p);
    /* a grammar whose root recurses on its left cannot start */
    andrea_grammar_state *s = g ? andrea_grammar_start(g) : NULL;
    if (g && !s) {
        andrea_grammar_free(g);
        return NULL;
    }
    andrea_grammar_state_free(s);
    return g;
}

void andrea_grammar_free(andrea_grammar *g) {
    if (!g) return;
    free(g->el);
    free(g->alt_start);
    free(g->rule_first);
    free(g->rule_nalts);
    free(g);
}

