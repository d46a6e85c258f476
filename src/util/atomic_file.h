/* atomic_file.h - the one way the library and the CLI write an output file: a complete
 * copy is written under a per-process temporary name beside the destination
 * ("PATH.tmp.PID.N"), fsync'ed, renamed over PATH, and the directory fsync'ed, so a kill
 * or a full disk at any moment leaves either the old file or the new one, never a torn
 * one, and two processes writing the same path never share a temporary. */
#ifndef ANDREA_UTIL_ATOMIC_FILE_H
#define ANDREA_UTIL_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    char *path; /* the destination */
    char *tmp;  /* where the copy is written until commit */
    FILE *f;    /* open on tmp ("wb") */
} andrea_atomic_file;

/* "PATH.tmp.PID.N": unique to this process and call. 0, or -1 (path too long). */
int andrea_atomic_tmp_name(const char *path, char *buf, size_t n);

/* Opens a temporary beside path for writing. Returns af->f, or NULL with andrea_error(). */
FILE *andrea_atomic_open(andrea_atomic_file *af, const char *path);
/* Flushes, fsyncs and closes af->f, renames the temporary over the destination and
 * fsyncs the directory. On any failure the temporary is removed and the destination is
 * untouched. 0, or -1 with andrea_error() naming the destination and why. */
int andrea_atomic_commit(andrea_atomic_file *af);
/* Closes and removes the temporary (after an error of the caller's). */
void andrea_atomic_abort(andrea_atomic_file *af);

/* For writers that own their file (a library call given the temporary's path): fsyncs
 * the finished file tmp, renames it over path and fsyncs the directory; on failure
 * removes tmp. 0, or -1 with andrea_error(). */
int andrea_atomic_publish(const char *tmp, const char *path);

/* The same around a writer that takes a path: write(tmp, ctx) writes the whole file
 * under a temporary name (0 or -1 with andrea_error()), then it is published over path;
 * on failure the temporary is removed. 0 or -1 with andrea_error(). */
int andrea_atomic_write_with(const char *path, int (*write)(const char *tmp, void *ctx), void *ctx);

/* The directory holding path, fsync'ed so that a rename into it survives a crash. */
void andrea_sync_parent_dir(const char *path);

#endif
