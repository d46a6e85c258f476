/* manifest.c - reads a run manifest (manifest.h) with jansson. */
#include "train/curriculum/manifest.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_tokenizer.h"
#include "train/data/corpus.h"
#include "util/error.h"
#include "util/file.h"
#include "util/hash.h"

#ifdef ANDREA_HAVE_JANSSON
#include <jansson.h>
#endif

const char *andrea_policy_name(int policy) {
    return policy == ANDREA_POLICY_UNIFORM ? "uniform"
           : policy == ANDREA_POLICY_FIXED ? "fixed"
                                           : "ucb1";
}

void andrea_manifest_free(andrea_manifest *m) {
    for (int i = 0; i < m->n; i++) {
        free(m->src[i].path);
        free(m->src[i].separator);
    }
    free(m->src);
    free(m->path);
    free(m->tokenizer);
    memset(m, 0, sizeof *m);
}

uint64_t andrea_manifest_policy_hash(const andrea_manifest *m) {
    const andrea_bandit_settings *c = &m->cur;
    double v[12] = {c->policy, c->ema_alpha, c->ucb_c, c->reward_scale, c->focus, c->dice_min,
                    c->dice_max, c->warmup_steps, c->coverage_bonus, c->coverage_full,
                    c->epoch_penalty, m->n};
    uint64_t h = andrea_hash(ANDREA_HASH_INIT, v, sizeof v);
    for (int i = 0; i < m->n; i++) {
        double s[4] = {m->src[i].floor, m->src[i].cap, m->src[i].weight, m->src[i].warmup};
        h = andrea_hash(h, s, sizeof s);
    }
    return h;
}

#ifdef ANDREA_HAVE_JANSSON
/* A path relative to the manifest's directory. */
static char *resolve(const char *manifest, const char *p) {
    const char *slash = strrchr(manifest, '/');
    size_t dir = p[0] == '/' || !slash ? 0 : (size_t)(slash - manifest) + 1;
    char *out = malloc(dir + strlen(p) + 1);
    if (!out) return NULL;
    memcpy(out, manifest, dir);
    strcpy(out + dir, p);
    return out;
}

static int num(json_t *o, const char *key, double *out) {
    json_t *v = json_object_get(o, key);
    if (!v) return 0;
    if (!json_is_number(v)) return -1;
    *out = json_number_value(v);
    return 0;
}

/* A whole number in [lo, hi] (a JSON real that is integral counts: 1e3 is 1000). Casting
 * an out-of-range double to an integer is undefined, so the range is checked first. */
static int int_value(json_t *v, int64_t lo, int64_t hi, int64_t *out) {
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < lo || x > hi) return -1;
        *out = (int64_t)x;
        return 0;
    }
    double d = json_is_real(v) ? json_real_value(v) : NAN;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d)) return -1;
    *out = (int64_t)d;
    return 0;
}

/* The same for o[key]; absent leaves *out as it is. */
static int num_int(json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    json_t *v = json_object_get(o, key);
    return v ? int_value(v, lo, hi, out) : 0;
}

/* [a, b]: two whole numbers, a in [lo0, hi0] and b in [lo1, hi1]. 0 or -1. */
static int pair(json_t *arr, int64_t lo0, int64_t hi0, int64_t lo1, int64_t hi1, int64_t *a,
                int64_t *b) {
    if (!json_is_array(arr) || json_array_size(arr) != 2) return -1;
    return int_value(json_array_get(arr, 0), lo0, hi0, a) ||
                   int_value(json_array_get(arr, 1), lo1, hi1, b) ? -1 : 0;
}

static int bad(const andrea_manifest *m, const char *what, const char *field,
               const char *expected) {
    return andrea_set_error("manifest '%s': %s: '%s' must be %s", m->path, what, field, expected);
}

static int read_curriculum(andrea_manifest *m, json_t *c) {
    andrea_bandit_settings *s = &m->cur;
    if (!c) return 0;
    if (!json_is_object(c)) return bad(m, "top level", "curriculum", "an object");
    const char *pol = json_string_value(json_object_get(c, "policy"));
    if (pol) {
        if (strcmp(pol, "ucb1") == 0) s->policy = ANDREA_POLICY_UCB1;
        else if (strcmp(pol, "uniform") == 0) s->policy = ANDREA_POLICY_UNIFORM;
        else if (strcmp(pol, "fixed") == 0) s->policy = ANDREA_POLICY_FIXED;
        else return andrea_set_error("manifest '%s': curriculum.policy must be ucb1, uniform or "
                                     "fixed, got '%s'", m->path, pol);
    }
    int64_t focus = s->focus, warm = s->warmup_steps;
    if (num(c, "ema_alpha", &s->ema_alpha) || s->ema_alpha <= 0 || s->ema_alpha > 1)
        return bad(m, "curriculum", "ema_alpha", "a number in (0, 1]");
    if (num(c, "ucb_c", &s->ucb_c) || s->ucb_c < 0) return bad(m, "curriculum", "ucb_c", "a number >= 0");
    if (num(c, "reward_scale", &s->reward_scale)) return bad(m, "curriculum", "reward_scale", "a number");
    if (num_int(c, "focus", 0, INT32_MAX, &focus)) return bad(m, "curriculum", "focus", "a whole number in [0, 2147483647]");
    if (num_int(c, "warmup_steps", 0, INT32_MAX, &warm))
        return bad(m, "curriculum", "warmup_steps", "a whole number in [0, 2147483647]");
    if (num(c, "coverage_bonus", &s->coverage_bonus)) return bad(m, "curriculum", "coverage_bonus", "a number");
    if (num(c, "coverage_full", &s->coverage_full)) return bad(m, "curriculum", "coverage_full", "a number");
    s->focus = (int)focus;
    s->warmup_steps = (int)warm;
    json_t *ep = json_object_get(c, "epoch_penalty");
    if (ep && !json_is_boolean(ep)) return bad(m, "curriculum", "epoch_penalty", "true or false");
    if (ep) s->epoch_penalty = json_is_true(ep);
    json_t *dice = json_object_get(c, "dice");
    if (dice) {
        int64_t lo, hi;
        if (pair(dice, 1, INT32_MAX, 1, INT32_MAX, &lo, &hi) || hi < lo)
            return bad(m, "curriculum", "dice", "[min, max], whole numbers with 1 <= min <= max");
        s->dice_min = (int)lo;
        s->dice_max = (int)hi;
    }
    json_t *ws = json_object_get(c, "warmup_sources");
    if (ws && !json_is_array(ws)) return bad(m, "curriculum", "warmup_sources", "an array of source names");
    for (size_t i = 0; ws && i < json_array_size(ws); i++) {
        const char *name = json_string_value(json_array_get(ws, i));
        int found = 0;
        for (int k = 0; name && k < m->n; k++)
            if (strcmp(m->src[k].name, name) == 0) found = m->src[k].warmup = 1;
        if (!found)
            return andrea_set_error("manifest '%s': curriculum.warmup_sources names '%s', which "
                                    "is not a source", m->path, name ? name : "(not a string)");
    }
    return 0;
}

static int read_format(andrea_manifest *m, andrea_manifest_source *s, json_t *o) {
    const char *f = json_string_value(json_object_get(o, "format"));
    size_t n = strlen(s->path);
    if (!f || strcmp(f, "auto") == 0)
        s->format = n > 6 && strcmp(s->path + n - 6, ".jsonl") == 0 ? ANDREA_SRC_CHAT
                    : andrea_is_token_file(s->path)                   ? ANDREA_SRC_TOKENS
                                                                      : ANDREA_SRC_TEXT;
    else if (strcmp(f, "text") == 0) s->format = ANDREA_SRC_TEXT;
    else if (strcmp(f, "chat") == 0) s->format = ANDREA_SRC_CHAT;
    else if (strcmp(f, "tokens") == 0) s->format = ANDREA_SRC_TOKENS;
    else return bad(m, s->name, "format", "auto, text, chat or tokens");
    const char *sp = json_string_value(json_object_get(o, "split"));
    const char *sep = json_string_value(json_object_get(o, "separator"));
    s->split = sep ? ANDREA_SPLIT_SEPARATOR : ANDREA_SPLIT_NONE;
    if (sp && strcmp(sp, "none") == 0) s->split = ANDREA_SPLIT_NONE;
    else if (sp && strcmp(sp, "line") == 0) s->split = ANDREA_SPLIT_LINE;
    else if (sp && strcmp(sp, "paragraph") == 0) s->split = ANDREA_SPLIT_PARAGRAPH;
    else if (sp && strcmp(sp, "book") == 0) s->split = ANDREA_SPLIT_BOOK;
    else if (sp && strcmp(sp, "separator") != 0) return bad(m, s->name, "split", "none, line, paragraph, book or separator");
    if (s->split == ANDREA_SPLIT_SEPARATOR && (!sep || !sep[0])) return bad(m, s->name, "separator", "a non-empty string");
    if (sep && !(s->separator = strdup(sep))) return andrea_set_error("out of memory");
    return 0;
}

static int read_source(andrea_manifest *m, andrea_manifest_source *s, json_t *o, int i) {
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *path = json_string_value(json_object_get(o, "path"));
    if (!json_is_object(o) || !name || !path || !name[0] || strlen(name) >= ANDREA_MANIFEST_NAME)
        return andrea_set_error("manifest '%s': source %d needs a \"name\" (1 to %d bytes) and a "
                                "\"path\"", m->path, i, ANDREA_MANIFEST_NAME - 1);
    for (const char *c = name; *c; c++) /* names become file names and terminal lines */
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '/')
            return andrea_set_error("manifest '%s': source %d: its name may not hold '/' or "
                                    "control characters (byte 0x%02x)", m->path, i,
                                    (unsigned)(unsigned char)*c);
    strcpy(s->name, name);
    for (int k = 0; k < i; k++)
        if (strcmp(m->src[k].name, name) == 0)
            return andrea_set_error("manifest '%s': two sources are named '%s'", m->path, name);
    if (!(s->path = resolve(m->path, path))) return andrea_set_error("out of memory");
    s->cap = 1.0;
    s->range_len = -1;
    if (num(o, "floor", &s->floor) || s->floor < 0) return bad(m, name, "floor", "a number >= 0");
    if (num(o, "cap", &s->cap) || s->cap <= 0) return bad(m, name, "cap", "a number > 0");
    if (s->floor > s->cap)
        return andrea_set_error("manifest '%s': %s: 'floor' %g is above its 'cap' %g", m->path,
                                name, s->floor, s->cap);
    if (num(o, "weight", &s->weight) || s->weight < 0) return bad(m, name, "weight", "a number >= 0");
    if (num_int(o, "min_bytes", 0, INT64_MAX / 2, &s->min_bytes)) return bad(m, name, "min_bytes", "a whole number >= 0");
    json_t *r = json_object_get(o, "range");
    if (r && pair(r, 0, INT64_MAX / 2, 1, INT64_MAX / 2, &s->range_off, &s->range_len))
        return bad(m, name, "range", "[offset, length], whole numbers with offset >= 0 and length >= 1");
    return read_format(m, s, o);
}

static int parse(andrea_manifest *m, json_t *root) {
    json_t *srcs = json_object_get(root, "sources");
    if (!json_is_object(root) || !json_is_array(srcs) || json_array_size(srcs) == 0)
        return andrea_set_error("manifest '%s': expected an object with a non-empty \"sources\" "
                                "array", m->path);
    size_t n = json_array_size(srcs);
    if (n > ANDREA_MANIFEST_MAX_SOURCES)
        return andrea_set_error("manifest '%s': %zu sources, at most %d", m->path, n,
                                ANDREA_MANIFEST_MAX_SOURCES);
    m->src = calloc(n, sizeof *m->src);
    if (!m->src) return andrea_set_error("out of memory");
    for (size_t i = 0; i < n; i++) {
        m->n = (int)i + 1; /* counted before reading, so a failed source is freed too */
        if (read_source(m, &m->src[i], json_array_get(srcs, i), (int)i)) return -1;
    }
    const char *tok = json_string_value(json_object_get(root, "tokenizer"));
    if (tok && !(m->tokenizer = strdup(tok))) return andrea_set_error("out of memory");
    if (num(root, "val_fraction", &m->val_fraction) || m->val_fraction >= 1)
        return bad(m, "top level", "val_fraction", "a number below 1");
    return read_curriculum(m, json_object_get(root, "curriculum"));
}

static json_t *load(const char *path) {
    andrea_bytes b = {0};
    if (andrea_file_read(path, &b)) return NULL;
    json_error_t e;
    json_t *root = json_loadb((const char *)b.data, b.len, 0, &e);
    andrea_bytes_free(&b);
    if (!root)
        andrea_set_error("manifest '%s': line %d: %s", path, e.line, e.text);
    return root;
}

int andrea_manifest_read(const char *path, andrea_manifest *m) {
    memset(m, 0, sizeof *m);
    andrea_bandit_settings_default(&m->cur);
    m->val_fraction = -1;
    if (!(m->path = strdup(path))) return andrea_set_error("out of memory");
    json_t *root = load(path);
    int rc = root ? parse(m, root) : -1;
    json_decref(root);
    return rc;
}

int andrea_manifest_detect(const char *path) {
    size_t n = strlen(path);
    if (n < 5 || strcmp(path + n - 5, ".json") != 0) return 0;
    json_t *root = load(path);
    int yes = json_is_array(json_object_get(root, "sources"));
    json_decref(root);
    andrea_clear_error();
    return yes;
}
#else
int andrea_manifest_read(const char *path, andrea_manifest *m) {
    memset(m, 0, sizeof *m);
    return andrea_set_error("manifest '%s': reading manifests needs jansson; this andrea was "
                            "built without it (install libjansson-dev and rebuild)", path);
}

int andrea_manifest_detect(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && strcmp(path + n - 5, ".json") == 0 && strstr(path, "segments") == NULL;
}
#endif
