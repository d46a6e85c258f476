/* error.c - a per-thread message buffer: the library never prints or exits. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "andrea.h"

static _Thread_local char g_error[1024];

int andrea_set_error(const char *fmt, ...) {
    /* formatted aside first: the arguments may quote the message being replaced */
    char msg[sizeof g_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(g_error, msg, sizeof g_error);
    /* one line, whatever the arguments hold (a parser's message quoting hostile input,
     * a file name with a newline), and nothing a terminal would act on (ESC sequences
     * from a manifest's names): front ends print it as "andrea CMD: message\n" */
    for (char *c = g_error; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
        else if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return -1;
}

void andrea_error_rename(const char *from, const char *to) {
    char *at = strstr(g_error, from);
    if (!at || !*from) return;
    char rest[sizeof g_error];
    snprintf(rest, sizeof rest, "%s", at + strlen(from));
    *at = '\0';
    size_t used = strlen(g_error);
    snprintf(g_error + used, sizeof g_error - used, "%s%s", to, rest);
}

void andrea_clear_error(void) { g_error[0] = '\0'; }

const char *andrea_error(void) { return g_error; }
