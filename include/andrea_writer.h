/*
 * andrea_writer.h - where the library's renderers put their bytes: a write
 * callback and its user pointer. The library never opens, prints to or names
 * stdout itself; the caller decides whether a page goes to a file, a growing
 * memory buffer or (later) a socket.
 *
 *     andrea_buffer buf = {0};
 *     andrea_writer w = andrea_writer_buffer(&buf);
 *     if (andrea_attention_render_json(&w, &export, ANDREA_VIEWS_ALL)) puts(andrea_error());
 *     else send(fd, buf.data, buf.len, 0);
 *     andrea_buffer_free(&buf);
 */
#ifndef ANDREA_WRITER_H
#define ANDREA_WRITER_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* write(user, data, n) stores n bytes and returns 0, or returns an errno value
 * (EIO, ENOSPC, ENOMEM, ...) that says why it could not. After a failure the
 * writer is spent: later writes are skipped and the renderer returns -1 with
 * andrea_error() naming the cause. */
typedef struct {
    int (*write)(void *user, const void *data, size_t n);
    void *user;
    size_t written; /* bytes accepted so far */
    int err;        /* first failure's errno value, 0 while all went well */
} andrea_writer;

/* A growing memory buffer; data is NUL-terminated (the NUL is not counted in len). */
typedef struct {
    char *data;
    size_t len, cap;
} andrea_buffer;

andrea_writer andrea_writer_file(FILE *f);         /* fwrite to f; the caller flushes/closes */
andrea_writer andrea_writer_buffer(andrea_buffer *b); /* appends to b (start from {0}) */
void andrea_buffer_free(andrea_buffer *b);

/* Writes n bytes through w; 0, or -1 once w has failed (w->err says why). */
int andrea_write(andrea_writer *w, const void *data, size_t n);
int andrea_write_str(andrea_writer *w, const char *s);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int andrea_writef(andrea_writer *w, const char *fmt, ...);
/* If w failed: sets andrea_error() to "<what>: write failed after N bytes: <reason>"
 * and returns -1; else 0. Renderers end with `return andrea_writer_status(w, "...")`. */
int andrea_writer_status(const andrea_writer *w, const char *what);

#ifdef __cplusplus
}
#endif
#endif /* ANDREA_WRITER_H */
