/* error.h - the library's one-line error message (read with andrea_error()). */
#ifndef ANDREA_UTIL_ERROR_H
#define ANDREA_UTIL_ERROR_H

#if defined(__GNUC__)
#define ANDREA_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ANDREA_PRINTF(a, b)
#endif

/* Sets the message of this thread; always returns -1 so callers can
 * `return andrea_set_error(...)`. The arguments may quote the message it replaces, which is
 * how a caller names what failed around a lower error:
 * `return andrea_set_error("checkpoint '%s': %s", path, andrea_error());` */
int andrea_set_error(const char *fmt, ...) ANDREA_PRINTF(1, 2);
void andrea_clear_error(void);
/* Replaces the first occurrence of from in this thread's message by to (a writer given a
 * temporary path names it; the user gave the destination). */
void andrea_error_rename(const char *from, const char *to);

#endif
