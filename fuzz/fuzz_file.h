/* fuzz_file.h - for harnesses of readers that take a path: the input as a regular file
 * in memory (memfd), named /proc/self/fd/N, rewritten for every input (no disk I/O). */
#ifndef ANDREA_FUZZ_FILE_H
#define ANDREA_FUZZ_FILE_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "andrea.h"
#include "andrea_tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The path of a memory file holding exactly data[0..size). */
static inline const char *fuzz_file(const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("andrea-fuzz", 0);
        if (fd < 0) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0) abort();
    if (size && pwrite(fd, data, size, 0) != (ssize_t)size) abort();
    return path;
}

/* A reader's failure must leave one line that says what is wrong. */
static inline void fuzz_check_error(void) {
    const char *e = andrea_error();
    if (!e[0] || strchr(e, '\n')) abort();
}

/* A tokenizer that loaded must work: encode some text, decode the ids back. */
static inline void fuzz_exercise_tokenizer(const andrea_tokenizer *t) {
    static const char text[] = "Hello, world!  It's 2 o'clock\n\nnaive caf\xc3\xa9 \xe2\x82\xac\xff";
    andrea_ids ids = {0};
    andrea_bytes out = {0};
    if (andrea_tokenizer_encode(t, text, sizeof text - 1, 0, &ids) == 0 &&
        andrea_tokenizer_decode(t, ids.data, ids.len, &out))
        abort(); /* the ids it just made decode */
    andrea_ids_free(&ids);
    andrea_bytes_free(&out);
}

#endif
