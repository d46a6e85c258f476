/* atomic_file.h - the one way the library and the CLI write an output file: a complete
 * copy is written under a per-process temporary name beside the destination
 * ("PATH.tmp.PID.N"), fsync'ed, renamed over PATH, and the directory fsync'ed, so a kill
 * or a full disk at any moment leaves either the old file or the new one, never a torn
 * one, and two processes writing the same path never share a temporary.
 *
 * What is at PATH decides whether it may be replaced (andrea_output_target): nothing or a
 * regular file, yes; a symbolic link is written through to the regular file it names (the
 * link is kept); a device, FIFO, socket, directory, or a link to one of them or to nothing,
 * is refused with nothing changed. Running as root, renaming over /dev/zero would replace
 * the machine's device; this rule is why it cannot happen. */
#ifndef ANDREA_UTIL_ATOMIC_FILE_H
#define ANDREA_UTIL_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    char *path; /* the destination */
    char *tmp;  /* where the copy is written until commit */
    FILE *f;    /* open on tmp ("wb") */
} andrea_atomic_file;

/* Where an output to path goes: path itself (new or a regular file), or the regular file
 * a symlink at path names (as an absolute path). 0, or -1 with andrea_error() naming path
 * and what is there. */
int andrea_output_target(const char *path, char *out, size_t n);
/* fopen(mode) on andrea_output_target(path), for the writers that append or stream (logs,
 * the tuning cache, --logprobs). NULL with andrea_error(). */
FILE *andrea_output_fopen(const char *path, const char *mode);

/* "TARGET.tmp.PID.N", TARGET = andrea_output_target(path): unique to this process and call. 0, or -1 with andrea_error()
 * (path too long, or not a file andrea may replace). */
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
