/* file.h - the one whole-file reader of the library. */
#ifndef ANDREA_UTIL_FILE_H
#define ANDREA_UTIL_FILE_H

#include "andrea_tokenizer.h" /* andrea_bytes */

/* Appends the whole of the regular file at path to out, with a NUL byte after
 * the new end (outside out->len) for parsers that want one. Returns 0, or -1
 * with andrea_error() naming the file (cannot open: why; not a regular file;
 * read error; out of memory), leaving out as it was. */
int andrea_file_read(const char *path, andrea_bytes *out);

#endif
