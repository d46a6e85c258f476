/* file.c - the one whole-file reader (tokenizer files, GPT-2's vocabulary, corpora). */
#include "util/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/error.h"

int andrea_file_read(const char *path, andrea_bytes *out) {
    FILE *f = fopen(path, "rb");
    if (!f) return andrea_set_error("cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    /* a directory opens fine on Linux and only fails at the first read */
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return andrea_set_error("'%s' is not a regular file", path);
    }
    size_t n = (size_t)sb.st_size;
    if (n > SIZE_MAX - out->len - 1) {
        fclose(f);
        return andrea_set_error("'%s': too large (%zu bytes)", path, n);
    }
    size_t need = out->len + n + 1; /* + the NUL terminator */
    if (need > out->cap) {
        uint8_t *p = realloc(out->data, need);
        if (!p) {
            fclose(f);
            return andrea_set_error("out of memory reading '%s' (%zu bytes)", path, n);
        }
        out->data = p;
        out->cap = need;
    }
    size_t got = fread(out->data + out->len, 1, n, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (got != n)
        return andrea_set_error("read error on '%s' (read %zu of %zu bytes)%s%s", path, got, n,
                                err ? ": " : "", err ? strerror(err) : "");
    out->len += n;
    out->data[out->len] = 0;
    return 0;
}
