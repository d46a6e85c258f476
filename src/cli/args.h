/* args.h - table-driven command-line flags shared by every subcommand. */
#ifndef ANDREA_CLI_ARGS_H
#define ANDREA_CLI_ARGS_H

#include <stdint.h>

/* -t/--threads above this is refused (a typo, not a machine). */
#define ARGS_MAX_THREADS 1024

typedef enum { ARG_INT, ARG_U64, ARG_FLOAT, ARG_STR, ARG_FLAG } arg_type;

typedef struct {
    const char *name;   /* long name without dashes, e.g. "n-predict" */
    char short_name;    /* 0 if none, e.g. 'n' */
    arg_type type;
    void *dst;          /* int*, uint64_t*, float*, const char**, int* (flag -> 1) */
    const char *help;
    int seen;           /* set to 1 when given on the command line */
} arg_spec;

/* Parses argv[1..] (argv[0] is the subcommand). Positional arguments are
 * rejected unless positional != NULL, in which case up to max_pos are stored.
 * Returns 0, 1 if --help was asked (usage printed), or -1 after printing a
 * one-line error to stderr. */
int args_parse(const char *cmd, int argc, char **argv, arg_spec *specs, int n_specs,
               const char **positional, int max_pos, int *n_pos);
void args_usage(const char *cmd, const char *synopsis, const arg_spec *specs, int n_specs);
/* Was the flag with this long name given? */
int args_seen(const arg_spec *specs, int n_specs, const char *name);

#endif
