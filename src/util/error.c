/* error.c - a per-thread message buffer: the library never prints or exits. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>

#include "andrea.h"

static _Thread_local char g_error[1024];

int andrea_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
    /* one line, whatever the arguments hold (a parser's message quoting hostile input,
     * a file name with a newline): front ends print it as "andrea CMD: message\n" */
    for (char *c = g_error; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    return -1;
}

void andrea_clear_error(void) { g_error[0] = '\0'; }

const char *andrea_error(void) { return g_error; }
