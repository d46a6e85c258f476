/* args.c - strict flag parsing: unknown flags and malformed numbers are errors. */
#include "args.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "andrea_inspect.h" /* andrea_lang_text: the messages in the command's --lang */

/* The language of this parse's messages: a command that has a --lang flag gets its errors
 * in that language (the flag is looked up before parsing, so even "unknown flag" is). */
static const char *g_lang;
#define MSG(key) andrea_lang_text(g_lang, key)

static arg_spec *find_long(arg_spec *s, int n, const char *name, size_t len) {
    for (int i = 0; i < n; i++)
        if (strlen(s[i].name) == len && strncmp(s[i].name, name, len) == 0) return &s[i];
    return NULL;
}

static arg_spec *find_short(arg_spec *s, int n, char c) {
    for (int i = 0; i < n; i++)
        if (s[i].short_name && s[i].short_name == c) return &s[i];
    return NULL;
}

static int set_value(const char *cmd, arg_spec *s, const char *val) {
    char *end = NULL;
    errno = 0;
    switch (s->type) {
    case ARG_INT: {
        long v = strtol(val, &end, 10);
        if (*val == '\0' || *end != '\0' || errno || v < -2147483647L || v > 2147483647L) {
            fprintf(stderr, MSG("args.int"), cmd, s->name, val);
            return -1;
        }
        /* -t/--threads is the same flag in every command: OpenMP would start them all */
        if (strcmp(s->name, "threads") == 0 && (v < 0 || v > ARGS_MAX_THREADS)) {
            fprintf(stderr, MSG("args.threads"),
                    cmd, s->name, ARGS_MAX_THREADS, v);
            return -1;
        }
        *(int *)s->dst = (int)v;
        break;
    }
    case ARG_U64: {
        if (val[0] == '-') {
            fprintf(stderr, MSG("args.u64"), cmd,
                    s->name, val);
            return -1;
        }
        unsigned long long v = strtoull(val, &end, 10);
        if (*val == '\0' || *end != '\0' || errno) {
            fprintf(stderr, MSG("args.u64"), cmd,
                    s->name, val);
            return -1;
        }
        *(uint64_t *)s->dst = (uint64_t)v;
        break;
    }
    case ARG_FLOAT: {
        double v = strtod(val, &end);
        if (*val == '\0' || *end != '\0' || (errno && errno != ERANGE) ||
            (!isfinite(v) && errno != ERANGE)) {
            fprintf(stderr, MSG("args.number"), cmd, s->name, val);
            return -1;
        }
        /* the destination is a float: 1e39 would become inf, 1e-50 a silent 0 */
        if (errno == ERANGE || fabs(v) > FLT_MAX || (v != 0 && fabs(v) < FLT_MIN)) {
            fprintf(stderr, MSG("args.float_range"), cmd, s->name, val, (double)FLT_MIN, (double)FLT_MAX);
            return -1;
        }
        *(float *)s->dst = (float)v;
        break;
    }
    case ARG_STR:
        *(const char **)s->dst = val;
        break;
    case ARG_FLAG:
        *(int *)s->dst = 1;
        break;
    }
    s->seen = 1;
    return 0;
}

/* The value of --lang in argv when the command has that flag (else NULL: English). */
static const char *find_lang(int argc, char **argv, const arg_spec *specs, int n_specs) {
    int has = 0;
    for (int i = 0; i < n_specs; i++) has |= strcmp(specs[i].name, "lang") == 0;
    for (int i = 1; has && i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strncmp(argv[i], "--lang=", 7) == 0) return argv[i] + 7;
        if (strcmp(argv[i], "--lang") == 0 && i + 1 < argc) return argv[i + 1];
    }
    return NULL;
}

int args_parse(const char *cmd, int argc, char **argv, arg_spec *specs, int n_specs,
               const char **positional, int max_pos, int *n_pos) {
    g_lang = find_lang(argc, argv, specs, n_specs);
    int npos = 0;
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_positional && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) return 1;
        if (!only_positional && strcmp(a, "--") == 0) {
            only_positional = 1;
            continue;
        }
        if (only_positional || a[0] != '-' || a[1] == '\0') {
            if (!positional || npos >= max_pos) {
                fprintf(stderr, MSG("args.unexpected"),
                        cmd, a, cmd);
                return -1;
            }
            positional[npos++] = a;
            continue;
        }
        arg_spec *s = NULL;
        const char *val = NULL;
        if (a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            s = find_long(specs, n_specs, name, len);
            if (eq) val = eq + 1;
        } else if (a[2] == '\0') {
            s = find_short(specs, n_specs, a[1]);
        }
        if (!s) {
            fprintf(stderr, MSG("args.unknown"), cmd, a, cmd);
            return -1;
        }
        if (s->type == ARG_FLAG) {
            if (val) {
                fprintf(stderr, MSG("args.no_value"), cmd, s->name);
                return -1;
            }
        } else if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, MSG("args.needs_value"), cmd, s->name);
                return -1;
            }
            val = argv[++i];
        }
        if (set_value(cmd, s, val)) return -1;
    }
    if (n_pos) *n_pos = npos;
    return 0;
}

void args_usage(const char *cmd, const char *synopsis, const arg_spec *specs, int n_specs) {
    printf("usage: andrea %s %s\n\n", cmd, synopsis);
    for (int i = 0; i < n_specs; i++) {
        const arg_spec *s = &specs[i];
        char left[64];
        const char *meta = s->type == ARG_INT || s->type == ARG_U64 ? " N"
                           : s->type == ARG_FLOAT                  ? " X"
                           : s->type == ARG_STR                    ? " S"
                                                                   : "";
        if (s->short_name)
            snprintf(left, sizeof left, "-%c, --%s%s", s->short_name, s->name, meta);
        else
            snprintf(left, sizeof left, "    --%s%s", s->name, meta);
        printf("  %-30s %s\n", left, s->help);
    }
}

int args_seen(const arg_spec *specs, int n_specs, const char *name) {
    for (int i = 0; i < n_specs; i++)
        if (strcmp(specs[i].name, name) == 0) return specs[i].seen;
    return 0;
}
