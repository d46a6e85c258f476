/*
 * ckpt_numbered.c - numbered checkpoints (--keep-last N): ckpt.bin just written is also
 * out_dir/step_NNNNNN.bin (ANDREA's naming, the completed step zero-padded to 6 digits),
 * a hard link when the file system allows (ckpt.bin is replaced by rename, so the link
 * keeps this version), else a copy; then all but the newest N step files are removed.
 */
#define _XOPEN_SOURCE 700 /* link */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/train_run.h"
#include "util/error.h"

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[1 << 16];
    size_t n;
    int rc = in && out ? 0 : -1;
    while (!rc && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) rc = -1;
    if (in && ferror(in)) rc = -1;
    if (in) fclose(in);
    if (out && fclose(out)) rc = -1;
    return rc;
}

/* Is name "step_NNNNNN.bin" (six or more digits)? Its step, else -1. */
static long step_of(const char *name) {
    size_t n = strlen(name);
    if (n < 15 || strncmp(name, "step_", 5) != 0 || strcmp(name + n - 4, ".bin") != 0) return -1;
    long v = 0;
    for (size_t i = 5; i < n - 4; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

/* Removes step files until keep remain, oldest first. */
static void prune(const char *dir, int keep) {
    for (;;) {
        DIR *d = opendir(dir);
        if (!d) return;
        long oldest = -1, count = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            long s = step_of(e->d_name);
            if (s < 0) continue;
            count++;
            if (oldest < 0 || s < oldest) oldest = s;
        }
        closedir(d);
        if (count <= keep) return;
        char path[4200];
        snprintf(path, sizeof path, "%s/step_%06ld.bin", dir, oldest);
        if (remove(path) != 0) return; /* not ours to fight over */
    }
}

int andrea_run_keep_numbered(andrea_train_run *r) {
    char path[4200];
    snprintf(path, sizeof path, "%s/step_%06lld.bin", r->o.out_dir, (long long)r->st->step);
    remove(path); /* a rerun of the same step replaces it */
    if (link(r->ckpt_path, path) != 0 && copy_file(r->ckpt_path, path) != 0)
        return andrea_set_error("cannot write numbered checkpoint '%s': %s", path, strerror(errno));
    prune(r->o.out_dir, r->o.keep_last);
    return 0;
}
