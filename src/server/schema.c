/*
 * schema.c - JSON Schema and function calls compiled to GBNF (src/infer/grammar.h), so
 * that constrained decoding only ever writes text that parses and fits the schema.
 *
 * What the grammar enforces: type (and a list of types), properties (every property is
 * written, in the schema's order: valid whether or not it is required, and no other),
 * items with minItems/maxItems, strings with minLength/maxLength, enum, const,
 * anyOf/oneOf (as alternatives: oneOf's "exactly one" is not checked), $ref into $defs or
 * definitions, and `true`/{} for any value. Annotations (title, description, default,
 * examples, $schema, $id) and additionalProperties/required are accepted. Any other
 * keyword (pattern, format, minimum, ...) is refused by name rather than ignored.
 * Numbers have at most 16 integer and 15 fraction digits, whitespace is one optional
 * space, so a small model cannot stall the text on spaces or digits.
 */
#include "schema.h"

#include <stdio.h>
#include <string.h>

#define BAD(e, param, ...) serve_fail(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__)

static const char BASE[] =
    "ws ::= \" \"?\n"
    "string ::= \"\\\"\" char* \"\\\"\"\n"
    "char ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )\n"
    "integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n"
    "number ::= integer ( \".\" [0-9]{1,15} )? ( [eE] [-+]? [0-9]{1,3} )?\n"
    "boolean ::= \"true\" | \"false\"\n"
    "null ::= \"null\"\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" ws ( string ws \":\" ws value ws ( \",\" ws string ws \":\" ws value ws )* )? \"}\"\n"
    "array ::= \"[\" ws ( value ws ( \",\" ws value ws )* )? \"]\"\n";

void serve_gbnf_json_object(andrea_writer *w) {
    andrea_write_str(w, BASE);
    andrea_write_str(w, "root ::= object\n");
}

typedef struct {
    andrea_writer *w;   /* the rule being written */
    andrea_writer *out; /* the grammar: whole rules */
    json_t *root;
    int next;          /* rule counter */
    const char *param;
    serve_error *e;
} gen;

/* A JSON value's text as a GBNF literal ("..." with \ and " escaped). */
static int literal(gen *g, json_t *v) {
    char *js = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    if (!js) return serve_fail(g->e, 500, "server_error", NULL, NULL, "out of memory");
    andrea_write_str(g->w, "\"");
    for (const char *c = js; *c; c++) {
        if (*c == '\\' || *c == '"') andrea_write_str(g->w, "\\");
        andrea_write(g->w, c, 1);
    }
    andrea_write_str(g->w, "\"");
    free(js);
    return 0;
}

static int rule(gen *g, json_t *s, char *name, size_t cap);

static const char *const KNOWN[] = {
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
    "minLength", "maxLength", "enum", "const", "anyOf", "oneOf", "$ref", "$defs", "definitions",
    "title", "description", "default", "examples", "$schema", "$id", "strict", NULL};

static int check_keywords(gen *g, json_t *s) {
    const char *k;
    json_t *v;
    json_object_foreach(s, k, v) {
        int ok = 0;
        for (const char *const *q = KNOWN; *q && !ok; q++) ok = strcmp(*q, k) == 0;
        if (!ok)
            return BAD(g->e, g->param, "the JSON Schema keyword '%.40s' is not supported by constrained "
                       "decoding (docs/server.md lists those that are)", k);
    }
    return 0;
}

static long count(json_t *s, const char *key, long dflt) {
    json_t *v = json_object_get(s, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (long)json_integer_value(v) : dflt;
}

/* {m,n} with n < 0 unbounded */
static void bounds(andrea_writer *w, long lo, long hi) {
    if (hi < 0) andrea_writef(w, "{%ld,}", lo);
    else andrea_writef(w, "{%ld,%ld}", lo, hi);
}

/* The body of a rule for schema s of one type t. */
static int typed(gen *g, json_t *s, const char *t) {
    andrea_writer *w = g->w;
    if (!strcmp(t, "integer") || !strcmp(t, "number") || !strcmp(t, "boolean") || !strcmp(t, "null")) {
        andrea_write_str(w, t);
        return 0;
    }
    if (!strcmp(t, "string")) {
        long lo = count(s, "minLength", 0), hi = count(s, "maxLength", -1);
        if (lo > 1000 || hi > 1000) return BAD(g->e, g->param, "minLength/maxLength are at most 1000");
        if (hi >= 0 && hi < lo) return BAD(g->e, g->param, "maxLength is below minLength");
        andrea_write_str(w, "\"\\\"\" char");
        bounds(w, lo, hi);
        andrea_write_str(w, " \"\\\"\"");
        return 0;
    }
    if (!strcmp(t, "object")) {
        json_t *props = json_object_get(s, "properties");
        if (!json_is_object(props) || !json_object_size(props)) return andrea_write_str(w, "object"), 0;
        andrea_write_str(w, "\"{\" ws");
        const char *k;
        json_t *v;
        int first = 1;
        json_object_foreach(props, k, v) {
            char sub[32];
            json_t *key = json_string(k);
            if (!first) andrea_write_str(w, " \",\" ws");
            andrea_write_str(w, " ");
            if (!key || literal(g, key) || rule(g, v, sub, sizeof sub)) return json_decref(key), -1;
            json_decref(key);
            andrea_writef(w, " ws \":\" ws %s ws", sub);
            first = 0;
        }
        andrea_write_str(w, " \"}\"");
        return 0;
    }
    if (!strcmp(t, "array")) {
        char item[32] = "value";
        json_t *items = json_object_get(s, "items");
        if (items && rule(g, items, item, sizeof item)) return -1;
        long lo = count(s, "minItems", 0), hi = count(s, "maxItems", -1);
        if (lo > 1000 || hi > 1000) return BAD(g->e, g->param, "minItems/maxItems are at most 1000");
        if (hi >= 0 && hi < lo) return BAD(g->e, g->param, "maxItems is below minItems");
        if (hi == 0) return andrea_write_str(w, "\"[\" ws \"]\""), 0;
        andrea_writef(w, "\"[\" ws %s%s ws ( \",\" ws %s ws )", lo ? "" : "( ", item, item);
        bounds(w, lo ? lo - 1 : 0, hi < 0 ? -1 : hi - 1);
        andrea_writef(w, "%s \"]\"", lo ? "" : " )?");
        return 0;
    }
    return BAD(g->e, g->param, "unknown JSON Schema type '%.40s'", t);
}

/* Alternatives of the schemas in arr. */
static int alternatives(gen *g, json_t *arr) {
    if (!json_is_array(arr) || !json_array_size(arr))
        return BAD(g->e, g->param, "anyOf/oneOf/enum need a non-empty array");
    size_t i;
    json_t *v;
    char sub[32];
    json_array_foreach(arr, i, v) {
        if (rule(g, v, sub, sizeof sub)) return -1;
        andrea_writef(g->w, "%s%s", i ? " | " : "", sub);
    }
    return 0;
}

/* The body of the rule for s. */
static int body(gen *g, json_t *s) {
    andrea_writer *w = g->w;
    json_t *v;
    if ((v = json_object_get(s, "const"))) return literal(g, v);
    if ((v = json_object_get(s, "enum"))) {
        if (!json_is_array(v) || !json_array_size(v)) return BAD(g->e, g->param, "'enum' needs a non-empty array");
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if (i) andrea_write_str(w, " | ");
            if (literal(g, x)) return -1;
        }
        return 0;
    }
    if ((v = json_object_get(s, "anyOf")) || (v = json_object_get(s, "oneOf"))) return alternatives(g, v);
    if ((v = json_object_get(s, "$ref"))) {
        const char *ref = json_string_value(v), *name = NULL;
        if (ref && !strncmp(ref, "#/$defs/", 8)) name = ref + 8;
        else if (ref && !strncmp(ref, "#/definitions/", 14)) name = ref + 14;
        json_t *defs = json_object_get(g->root, ref && ref[2] == '$' ? "$defs" : "definitions");
        int k = 0;
        const char *key;
        json_t *d;
        json_object_foreach(defs, key, d) { /* refs name their definition's index */
            if (name && !strcmp(key, name)) return andrea_writef(w, "def%d", k), 0;
            k++;
        }
        return BAD(g->e, g->param, "'$ref' %.60s: only #/$defs/NAME and #/definitions/NAME of "
                   "this schema are supported", ref ? ref : "(not a string)");
    }
    v = json_object_get(s, "type");
    if (json_is_string(v)) return typed(g, s, json_string_value(v));
    if (json_is_array(v)) {
        size_t i;
        json_t *t;
        json_array_foreach(v, i, t) {
            if (!json_is_string(t)) return BAD(g->e, g->param, "'type' lists strings");
            andrea_write_str(w, i ? " | ( " : "( ");
            if (typed(g, s, json_string_value(t))) return -1;
            andrea_write_str(w, " )");
        }
        return 0;
    }
    if (json_object_get(s, "properties")) return typed(g, s, "object");
    if (json_object_get(s, "items")) return typed(g, s, "array");
    andrea_write_str(w, "value"); /* no constraint */
    return 0;
}

/* A new rule for schema s; its name into name. Rules nest: a rule's body is written to a
 * buffer of its own (the rules it needs go to the grammar meanwhile), then appended whole. */
static int rule(gen *g, json_t *s, char *name, size_t cap) {
    if (json_is_true(s)) return snprintf(name, cap, "value"), 0;
    if (!json_is_object(s)) return BAD(g->e, g->param, "a schema must be an object or true");
    if (check_keywords(g, s)) return -1;
    snprintf(name, cap, "s%d", g->next++);
    andrea_buffer b = {0};
    andrea_writer bw = andrea_writer_buffer(&b);
    andrea_writer *outer = g->w;
    g->w = &bw;
    andrea_writef(&bw, "%s ::= ", name);
    int rc = body(g, s);
    andrea_write_str(&bw, "\n");
    g->w = outer;
    if (!rc) andrea_write(g->out, b.data, b.len);
    andrea_buffer_free(&b);
    return rc;
}

static int defs(gen *g) {
    int k = 0;
    const char *names[] = {"$defs", "definitions"};
    for (int n = 0; n < 2; n++) {
        json_t *d = json_object_get(g->root, names[n]), *v;
        const char *key;
        k = 0;
        json_object_foreach(d, key, v) {
            char sub[32];
            if (rule(g, v, sub, sizeof sub)) return -1;
            andrea_writef(g->w, "def%d ::= %s\n", k++, sub);
        }
    }
    return 0;
}

int serve_gbnf_schema(json_t *schema, andrea_writer *w, const char *param, serve_error *e) {
    gen g = {w, w, schema, 0, param, e};
    char top[32];
    if (json_object_get(schema, "$defs") && json_object_get(schema, "definitions"))
        return BAD(e, param, "a schema with both $defs and definitions is not supported");
    andrea_write_str(w, BASE);
    if (defs(&g) || rule(&g, schema, top, sizeof top)) return -1;
    andrea_writef(w, "root ::= %s\n", top);
    return 0;
}

int serve_gbnf_tools(json_t *tools, const char *only, int or_text, andrea_writer *w, serve_error *e) {
    if (!json_is_array(tools) || !json_array_size(tools))
        return BAD(e, "tools", "'tools' must be a non-empty array");
    andrea_buffer calls = {0};
    andrea_writer cw = andrea_writer_buffer(&calls);
    gen g = {w, w, NULL, 0, "tools", e};
    size_t i;
    json_t *t;
    int found = 0, rc = 0;
    andrea_write_str(w, BASE);
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function"), *type = json_object_get(t, "type");
        json_t *name = json_object_get(fn, "name"), *params = json_object_get(fn, "parameters");
        if (!json_is_string(type) || strcmp(json_string_value(type), "function") || !json_is_string(name)) {
            rc = BAD(e, "tools", "tools[%zu] needs type \"function\" and function.name", i);
            break;
        }
        if (only && strcmp(only, json_string_value(name))) continue;
        char args[32] = "object";
        g.root = params;
        if (params && (json_object_get(params, "$defs") || json_object_get(params, "definitions"))) {
            rc = BAD(e, "tools", "tools[%zu]: $defs in function parameters are not supported", i);
            break;
        }
        if (params && (rc = rule(&g, params, args, sizeof args))) break;
        andrea_writef(&cw, "%s\"{\" ws \"\\\"name\\\"\" ws \":\" ws ", found ? " | " : "");
        g.w = &cw;
        rc = literal(&g, name);
        g.w = w;
        if (rc) break;
        andrea_writef(&cw, " ws \",\" ws \"\\\"arguments\\\"\" ws \":\" ws %s ws \"}\"", args);
        found++;
    }
    if (!rc && !found) rc = BAD(e, "tool_choice", "'tool_choice' names a function that is not in 'tools'");
    if (!rc) {
        andrea_write_str(w, "call ::= ");
        andrea_write(w, calls.data, calls.len);
        andrea_write_str(w, or_text ? "\nroot ::= call | [^{] .*\n" : "\nroot ::= call\n");
    }
    andrea_buffer_free(&calls);
    return rc;
}
