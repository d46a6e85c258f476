/* file.h - how the library opens files it reads: regular files only, checked on the open
 * descriptor (a path can be swapped between a stat() and an open()), and never a FIFO or
 * a device that would hang the open or feed bytes without end. */
#ifndef ANDREA_UTIL_FILE_H
#define ANDREA_UTIL_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "andrea_tokenizer.h" /* andrea_bytes */

/* Opens path read-only (O_NONBLOCK during the open, so a FIFO without a writer cannot
 * block it; cleared afterwards) and checks with fstat that the descriptor is a regular
 * file of at most max_bytes (0: no bound). Returns the descriptor and its size in *size,
 * or -1 with a one-line andrea_error() naming what (e.g. "checkpoint", NULL: "file") and
 * the path. */
int andrea_file_open_regular(const char *path, const char *what, uint64_t max_bytes,
                             uint64_t *size);

/* The same as a stdio stream ("rb"); NULL on error. */
FILE *andrea_file_fopen_regular(const char *path, const char *what, uint64_t max_bytes,
                                uint64_t *size);

/* Appends the whole of the regular file at path to out, with a NUL byte after
 * the new end (outside out->len) for parsers that want one. Returns 0, or -1
 * with andrea_error() naming the file (cannot open: why; not a regular file;
 * larger than max_bytes (0: no bound); read error; out of memory), leaving out as it was. */
int andrea_file_read_max(const char *path, uint64_t max_bytes, andrea_bytes *out);
/* andrea_file_read_max without a bound. */
int andrea_file_read(const char *path, andrea_bytes *out);

/* What a non-regular file is, for messages: "a directory", "a FIFO", "a character device". */
const char *andrea_file_kind_name(mode_t mode);

#endif
