/*
 * run_files.c - what a run leaves in its output directory: ckpt.bin (the full state, to
 * resume from), best.bin (weights of the best validation loss) and log.jsonl (jsonl_sink.c;
 * cut back to the checkpoint's step when resuming), in a folder locked for the run
 * (run_lock.c). Checkpoints are written atomically by andrea_checkpoint_save.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "parallel/dist_train.h"
#include "train/train_run.h"
#include "util/error.h"

/* mkdir -p: the parents too (`-o runs/shakespeare/small` on a fresh checkout). */
static int make_dir(const char *path) {
    char partial[4096];
    size_t len = strlen(path);
    if (len >= sizeof partial)
        return andrea_set_error("output directory '%s': path too long", path);
    memcpy(partial, path, len + 1);
    for (size_t i = 1; i < len; i++) {
        if (partial[i] != '/') continue;
        partial[i] = '\0';
        if (mkdir(partial, 0777) != 0 && errno != EEXIST)
            return andrea_set_error("cannot create output directory '%s': %s (at '%s')", path,
                                    strerror(errno), partial);
        partial[i] = '/';
    }
    if (mkdir(path, 0777) == 0 || errno == EEXIST) {
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return 0;
        return andrea_set_error("output directory '%s' exists and is not a directory", path);
    }
    return andrea_set_error("cannot create output directory '%s': %s", path, strerror(errno));
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int andrea_run_open_files(andrea_train_run *r) {
    int root = andrea_dist_is_root(r); /* the other ranks write nothing, lock nothing */
    if (root && make_dir(r->o.out_dir)) return -1;
    int rc = root ? andrea_run_lock(r) : 0;
    if (rc) return rc;
    r->ckpt_path = join(r->o.out_dir, "ckpt.bin");
    r->best_path = join(r->o.out_dir, "best.bin");
    char *log_path = join(r->o.out_dir, "log.jsonl");
    if (!r->ckpt_path || !r->best_path || !log_path) {
        free(log_path);
        return andrea_set_error("out of memory");
    }
    if (!root) {
        free(log_path);
        return 0;
    }
    rc = andrea_jsonl_open(&r->log, log_path, r->o.resume_path != NULL, r->st->step);
    free(log_path);
    if (rc) return -1;
    andrea_jsonl_sink(&r->log, &r->jsonl);
    return 0;
}

/* Only a sane state is ever written: its forward on a fixed probe is finite, and its loss
 * on a row of the run's own text is not far worse than guessing (spike_loss x ln V): the
 * guard skips a step whose loss spikes, but the update before it did the damage. */
static int sane_to_save(andrea_train_run *r) {
    if (andrea_model_probe(r->m, "the trained model")) return 0;
    if (!r->has_probe || !(r->o.spike_loss > 0)) return 1;
    andrea_context *c = andrea_context_create(r->m);
    if (!c) return 0;
    float loss = andrea_context_forward(r->m, c, r->probe_x, r->probe_y, 1, r->o.seq);
    andrea_context_free(c);
    float limit = r->o.spike_loss * logf((float)r->cfg.vocab);
    if (isfinite(loss) && loss <= limit) return 1;
    andrea_set_error("refusing to checkpoint a diverged state: its loss on a row of the training "
                     "text is %g, over --spike-loss %g x ln V = %g", (double)loss,
                     (double)r->o.spike_loss, (double)limit);
    return 0;
}

int andrea_run_keeps_resumed(const andrea_train_run *r) {
    return r->o.resume_path && r->updates_applied == 0;
}

int andrea_run_save(andrea_train_run *r, int full) {
    /* resumed, and no update applied yet: the file resumed from holds this very state, and
     * a run started with a destructive setting must not replace it before a sane step */
    if (andrea_run_keeps_resumed(r)) return 0;
    int insane = !sane_to_save(r); /* ranks probe their own rows: they decide together */
    char why[700];
    snprintf(why, sizeof why, "%s", insane ? andrea_error() : "another rank found the state diverged");
    if (andrea_dist_agree(r, &insane)) return -1;
    if (insane) return andrea_set_error("%s", why);
    /* the batch source's position as of now */
    r->st->batch_pos_len = (uint32_t)r->src->save(r->src, r->st->batch_pos, ANDREA_CKPT_POS_MAX);
    float *am = NULL, *av = NULL; /* the full moments: ZeRO-1 gathers them to rank 0 */
    if (full && andrea_dist_save_moments(r, &am, &av)) return -1;
    int rc = !andrea_dist_is_root(r) ? 0
             : andrea_checkpoint_save(full ? r->ckpt_path : r->best_path, r->m, am, av, r->st,
                                      r->tok_blob.data, r->tok_blob.len);
    if (full) andrea_dist_release_moments(r, am, av);
    if (rc == 0 && full && r->o.keep_last > 0 && andrea_dist_is_root(r))
        rc = andrea_run_keep_numbered(r);
    return andrea_dist_root_rc(r, rc);
}
