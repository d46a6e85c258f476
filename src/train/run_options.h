/*
 * run_options.h - the one table of training options. Each row maps a field of
 * andrea_train_options to its default, its command-line flag and help, its field in a
 * checkpoint (andrea_ckpt_state, written as a named entry of the OPTS section) and its
 * label in the "train:" config line. Adding an option: a field in andrea_train_options,
 * a row here, and (if resume must restore it) a field in andrea_ckpt_state.
 */
#ifndef ANDREA_TRAIN_RUN_OPTIONS_H
#define ANDREA_TRAIN_RUN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "andrea.h"
#include "train/checkpoint/checkpoint.h"

/* Stored in checkpoints (the OPTS section): never renumber. */
typedef enum {
    ANDREA_OPT_INT = 1,   /* int */
    ANDREA_OPT_FLOAT = 2, /* float */
    ANDREA_OPT_U64 = 3,   /* uint64_t */
    ANDREA_OPT_STR = 4,   /* const char * (a char[ANDREA_CKPT_STR] in the checkpoint state) */
    ANDREA_OPT_FLAG = 5,  /* int, set to 1 by the flag; never saved */
} andrea_opt_type;

typedef struct {
    const char *flag;  /* long flag without dashes; also the entry's name in OPTS */
    char short_flag;   /* 0: none */
    int type;          /* andrea_opt_type */
    size_t offset;     /* of the field in andrea_train_options */
    double def;        /* default of a number */
    const char *def_str; /* default of a string (NULL: none) */
    const char *help;  /* one line; --help appends the default */
    long ckpt;         /* offset of the field in andrea_ckpt_state, -1: not saved */
    const char *label; /* in the "train:" line ("lr=", "->"), NULL: not shown */
} andrea_train_option;

/* The table, in --help order. */
const andrea_train_option *andrea_train_option_table(int *n);
const andrea_train_option *andrea_train_option_find(const char *flag);
/* The field of an option in o. */
void *andrea_train_option_field(andrea_train_options *o, const andrea_train_option *e);
/* The default of an option as --help shows it: "1e-3" -> "0.001", strings as given. */
void andrea_train_option_default_text(const andrea_train_option *e, char *buf, size_t n);

/* The saved numbers and strings of o into a checkpoint state (via each row's field). */
void andrea_train_options_to_state(const andrea_train_options *o, andrea_ckpt_state *st);

/* Checks the options against the config; seq 0 must have been resolved. Returns 0 or
 * ANDREA_TRAIN_BAD_OPTIONS with a message naming the flag. */
int andrea_train_options_validate(const andrea_config *cfg, const andrea_train_options *o);

#endif
