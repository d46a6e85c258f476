/*
 * run_lock.c - a run folder protects itself: an advisory write lock (fcntl) on
 * OUT/lock, held from setup until the run's end (the kernel drops it when the process
 * dies, kill -9 included), so a second run into the same folder is refused instead of
 * interleaving checkpoints and log lines; and a fresh run does not write over the
 * ckpt.bin, best.bin or log.jsonl of another run unless --force says so. The lock
 * holder also removes the checkpoint temporaries a killed writer left behind.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/train_run.h"
#include "util/atomic_file.h"
#include "util/error.h"

static const char *const RUN_FILES[] = {"ckpt.bin", "best.bin", "log.jsonl"};

static int take_lock(andrea_train_run *r) {
    const char *dir = r->o.out_dir;
    char path[4096];
    snprintf(path, sizeof path, "%s/lock", dir);
    char target[4096];
    if (andrea_output_target(path, target, sizeof target)) return -1;
    int fd = open(path, O_RDWR | O_CREAT, 0666);
    if (fd < 0) return andrea_set_error("cannot create lock file '%s': %s", path, strerror(errno));
    struct flock fl = {0};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, F_SETLK, &fl) != 0) {
        int e = errno;
        struct flock who = fl;
        long pid = fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK ? (long)who.l_pid : -1;
        close(fd);
        if (e != EACCES && e != EAGAIN)
            return andrea_set_error("cannot lock '%s': %s", path, strerror(e));
        return andrea_set_error("output directory '%s' is in use by another run (pid %ld); wait "
                                "for it to end or choose another -o", dir, pid);
    }
    /* the holder's pid, for people (the lock itself is the kernel's) */
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || write(fd, pid, (size_t)n) != n) { /* informative only */ }
    r->lock_fd = fd;
    return 0;
}

/* Temporaries of checkpoints whose writer died (kill -9 mid-write): with the lock held
 * no one else writes here, so every "ckpt.bin.tmp.*" and "best.bin.tmp.*" is stale. */
static void remove_stale_temporaries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "ckpt.bin.tmp.", 13) != 0 && strncmp(e->d_name, "best.bin.tmp.", 13) != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* Is dir the folder of the checkpoint being resumed? */
static int is_resume_folder(const char *dir, const char *resume) {
    if (!resume) return 0;
    char *copy = strdup(resume), *slash = copy ? strrchr(copy, '/') : NULL;
    if (!copy) return 0;
    if (slash) *slash = '\0';
    char *a = realpath(slash ? (copy[0] ? copy : "/") : ".", NULL), *b = realpath(dir, NULL);
    int same = a && b && strcmp(a, b) == 0;
    free(a);
    free(b);
    free(copy);
    return same;
}

int andrea_run_lock(andrea_train_run *r) {
    if (take_lock(r)) return -1;
    const char *dir = r->o.out_dir;
    remove_stale_temporaries(dir);
    if (is_resume_folder(dir, r->o.resume_path)) return 0;
    for (size_t i = 0; i < sizeof RUN_FILES / sizeof RUN_FILES[0]; i++) {
        char path[4096];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, RUN_FILES[i]);
        if (lstat(path, &sb) != 0) continue;
        char target[4096]; /* a FIFO or a device there is no run's file: never removed */
        if (andrea_output_target(path, target, sizeof target)) return ANDREA_TRAIN_BAD_OPTIONS;
        if (!r->o.force) {
            andrea_set_error("output directory '%s' holds another run ('%s'); resume it with "
                             "--resume %s/ckpt.bin, choose another -o, or give --force to "
                             "replace it", dir, RUN_FILES[i], dir);
            return ANDREA_TRAIN_BAD_OPTIONS;
        }
        /* replaced: the old run's checkpoints must not pass for this run's */
        if (strcmp(RUN_FILES[i], "log.jsonl") != 0 && unlink(path) != 0)
            return andrea_set_error("--force: cannot remove '%s': %s", path, strerror(errno));
    }
    return 0;
}
