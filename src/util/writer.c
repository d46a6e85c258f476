/* writer.c - the byte sink of the renderers (include/andrea_writer.h): a callback with
 * adapters for a FILE* and for a growing memory buffer. */
#include "andrea_writer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

static int file_write(void *user, const void *data, size_t n) {
    FILE *f = user;
    errno = 0;
    if (fwrite(data, 1, n, f) == n) return 0;
    return errno ? errno : EIO;
}

andrea_writer andrea_writer_file(FILE *f) {
    andrea_writer w = {file_write, f, 0, 0};
    return w;
}

static int buffer_write(void *user, const void *data, size_t n) {
    andrea_buffer *b = user;
    if (n + 1 > b->cap - b->len || !b->data) { /* room for the bytes and the NUL */
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n + 1) {
            if (cap > (size_t)-1 / 2) return ENOMEM;
            cap *= 2;
        }
        char *p = realloc(b->data, cap);
        if (!p) return ENOMEM;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

andrea_writer andrea_writer_buffer(andrea_buffer *b) {
    andrea_writer w = {buffer_write, b, 0, 0};
    return w;
}

void andrea_buffer_free(andrea_buffer *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

int andrea_write(andrea_writer *w, const void *data, size_t n) {
    if (w->err) return -1;
    if (n == 0) return 0;
    int err = w->write(w->user, data, n);
    if (err) {
        w->err = err;
        return -1;
    }
    w->written += n;
    return 0;
}

int andrea_write_str(andrea_writer *w, const char *s) { return andrea_write(w, s, strlen(s)); }

int andrea_writef(andrea_writer *w, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        if (!w->err) w->err = EINVAL;
        return -1;
    }
    if ((size_t)n < sizeof small) return andrea_write(w, small, (size_t)n);
    char *big = malloc((size_t)n + 1); /* rare: only long strings take this path */
    if (!big) {
        if (!w->err) w->err = ENOMEM;
        return -1;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = andrea_write(w, big, (size_t)n);
    free(big);
    return rc;
}

int andrea_writer_status(const andrea_writer *w, const char *what) {
    if (!w->err) return 0;
    return andrea_set_error("%s: write failed after %zu bytes: %s", what, w->written,
                            strerror(w->err));
}
