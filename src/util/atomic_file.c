/* atomic_file.c - temp, fsync, rename, fsync the directory (atomic_file.h). */
#define _XOPEN_SOURCE 700 /* realpath, lstat */
#include "util/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/file.h"

static int copy_path(char *out, size_t n, const char *path) {
    if (strlen(path) >= n) return andrea_set_error("path too long: '%s'", path);
    memcpy(out, path, strlen(path) + 1);
    return 0;
}

/* A symlink is written through: the regular file it names is replaced (the link stays a
 * link, as editors and cp do); a link to anything else, or to nothing, is refused. */
static int through_link(const char *path, char *out, size_t n) {
    struct stat st;
    if (stat(path, &st) != 0)
        return andrea_set_error("cannot write '%s': it is a symbolic link whose target cannot "
                                "be reached (%s); nothing was changed", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return andrea_set_error("cannot write '%s': it is a symbolic link to %s, not to a "
                                "regular file; nothing was changed", path, andrea_file_kind_name(st.st_mode));
    char *real = realpath(path, NULL);
    if (!real) return andrea_set_error("cannot write '%s': %s", path, strerror(errno));
    int rc = copy_path(out, n, real);
    free(real);
    return rc;
}

int andrea_output_target(const char *path, char *out, size_t n) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT) return andrea_set_error("cannot write '%s': %s", path, strerror(errno));
        return copy_path(out, n, path); /* a new file */
    }
    if (S_ISREG(st.st_mode)) return copy_path(out, n, path);
    if (S_ISLNK(st.st_mode)) return through_link(path, out, n);
    return andrea_set_error("cannot write '%s': it is %s, and andrea replaces only regular "
                            "files; nothing was changed", path, andrea_file_kind_name(st.st_mode));
}

FILE *andrea_output_fopen(const char *path, const char *mode) {
    char target[4096];
    if (andrea_output_target(path, target, sizeof target)) return NULL;
    FILE *f = fopen(target, mode);
    if (!f) andrea_set_error("cannot write '%s': %s", path, strerror(errno));
    return f;
}

int andrea_atomic_tmp_name(const char *path, char *buf, size_t n) {
    static atomic_uint counter;
    char target[4096];
    if (andrea_output_target(path, target, sizeof target)) return -1;
    unsigned k = atomic_fetch_add(&counter, 1u);
    int w = snprintf(buf, n, "%s.tmp.%ld.%u", target, (long)getpid(), k);
    return w < 0 || (size_t)w >= n ? andrea_set_error("path too long: '%s'", path) : 0;
}

void andrea_sync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd); /* best effort: some file systems refuse fsync on a directory */
        close(dfd);
    }
}

FILE *andrea_atomic_open(andrea_atomic_file *af, const char *path) {
    char target[4096];
    memset(af, 0, sizeof *af);
    if (andrea_output_target(path, target, sizeof target)) return NULL;
    size_t n = strlen(target) + 48;
    af->path = strdup(target);
    af->tmp = malloc(n);
    if (!af->path || !af->tmp) {
        andrea_set_error("out of memory");
    } else if (andrea_atomic_tmp_name(target, af->tmp, n) == 0) {
        af->f = fopen(af->tmp, "wb");
        if (af->f) return af->f;
        andrea_set_error("cannot write '%s': %s", path, strerror(errno));
    }
    free(af->path);
    free(af->tmp);
    memset(af, 0, sizeof *af);
    return NULL;
}

/* The target is looked at again just before the rename: what appeared there while the
 * copy was written (a FIFO, a device) is refused too, and a link is written through. */
static int rename_over(const char *tmp, const char *path) {
    char target[4096];
    if (andrea_output_target(path, target, sizeof target)) {
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, target) != 0) {
        int e = errno;
        unlink(tmp);
        return andrea_set_error("writing '%s' failed: cannot rename its temporary: %s (the "
                                "previous file is untouched)", path, strerror(e));
    }
    andrea_sync_parent_dir(target);
    return 0;
}

int andrea_atomic_commit(andrea_atomic_file *af) {
    int bad = ferror(af->f) || fflush(af->f) != 0 || fsync(fileno(af->f)) != 0;
    int err = bad ? errno : 0;
    if (fclose(af->f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    af->f = NULL;
    int rc = 0;
    if (bad) {
        unlink(af->tmp);
        rc = andrea_set_error("writing '%s' failed: %s (the previous file is untouched)", af->path,
                              err ? strerror(err) : "write error");
    } else {
        rc = rename_over(af->tmp, af->path);
    }
    free(af->path);
    free(af->tmp);
    memset(af, 0, sizeof *af);
    return rc;
}

void andrea_atomic_abort(andrea_atomic_file *af) {
    if (af->f) fclose(af->f);
    if (af->tmp) unlink(af->tmp);
    free(af->path);
    free(af->tmp);
    memset(af, 0, sizeof *af);
}

int andrea_atomic_publish(const char *tmp, const char *path) {
    int fd = open(tmp, O_RDONLY);
    int ok = fd >= 0 && fsync(fd) == 0;
    int e = errno;
    if (fd >= 0) close(fd);
    if (!ok) {
        unlink(tmp);
        return andrea_set_error("writing '%s' failed: %s (the previous file is untouched)", path,
                                strerror(e));
    }
    return rename_over(tmp, path);
}

int andrea_atomic_write_with(const char *path, int (*write)(const char *tmp, void *ctx),
                             void *ctx) {
    char tmp[4200];
    if (andrea_atomic_tmp_name(path, tmp, sizeof tmp)) return -1;
    if (write(tmp, ctx)) {
        unlink(tmp);
        andrea_error_rename(tmp, path); /* the user named path, not its temporary */
        return -1;
    }
    return andrea_atomic_publish(tmp, path);
}
