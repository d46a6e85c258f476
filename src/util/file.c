/* file.c - opening files to read (see file.h) and the one whole-file reader (tokenizer
 * files, GPT-2's vocabulary, corpora, formats). */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

const char *andrea_file_kind_name(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "an unknown kind";
}

int andrea_file_open_regular(const char *path, const char *what, uint64_t max_bytes,
                             uint64_t *size) {
    const char *sp = what ? " " : "";
    if (!what) what = "";
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return andrea_set_error("cannot open %s%s'%s': %s", what, sp, path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return andrea_set_error("%s%s'%s': %s", what, sp, path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return andrea_set_error("%s%s'%s' is not a regular file (%s)", what, sp, path,
                                andrea_file_kind_name(sb.st_mode));
    }
    if (sb.st_size < 0 || (max_bytes && (uint64_t)sb.st_size > max_bytes)) {
        close(fd);
        return andrea_set_error("%s%s'%s' is too large (%lld bytes, at most %llu)", what, sp, path,
                                (long long)sb.st_size, (unsigned long long)max_bytes);
    }
    /* reads of a regular file never block; clear the flag anyway so nothing downstream
     * sees EAGAIN semantics it does not expect */
    int fl = fcntl(fd, F_GETFL);
    if (fl == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
        int e = errno;
        close(fd);
        return andrea_set_error("%s%s'%s': %s", what, sp, path, strerror(e));
    }
    if (size) *size = (uint64_t)sb.st_size;
    return fd;
}

FILE *andrea_file_fopen_regular(const char *path, const char *what, uint64_t max_bytes,
                                uint64_t *size) {
    int fd = andrea_file_open_regular(path, what, max_bytes, size);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        andrea_set_error("out of memory opening '%s'", path);
    }
    return f;
}

int andrea_file_read_max(const char *path, uint64_t max_bytes, andrea_bytes *out) {
    uint64_t size;
    FILE *f = andrea_file_fopen_regular(path, NULL, max_bytes, &size);
    if (!f) return -1;
    if (size > SIZE_MAX - out->len - 1) {
        fclose(f);
        return andrea_set_error("'%s': too large (%llu bytes)", path, (unsigned long long)size);
    }
    size_t n = (size_t)size;
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

int andrea_file_read(const char *path, andrea_bytes *out) { return andrea_file_read_max(path, 0, out); }
