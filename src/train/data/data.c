/* data.c - corpus loading, the train/validation split and batch sampling. */
#include "train/data/data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/error.h"
#include "util/file.h"

int andrea_read_file(const char *path, unsigned char **data, size_t *len) {
    andrea_bytes b = {0}; /* util/file.c reads; this keeps data.h's signature */
    int rc = andrea_file_read(path, &b);
    *data = b.data;
    *len = b.len;
    return rc;
}

/* The split of n tokens; an error when a part is too short for one window. */
static int split(andrea_dataset *d, int64_t n, float val_fraction, int T, const char *what) {
    if (!(val_fraction >= 0.0f && val_fraction < 1.0f))
        return andrea_set_error("validation fraction %g must be in [0, 1)", val_fraction);
    int64_t n_val = (int64_t)((double)n * val_fraction);
    int64_t n_train = n - n_val;
    if (n_train < (int64_t)T + 1)
        return andrea_set_error("'%s': %lld training tokens, need at least %d (one window of "
                                "T + 1); use more text or a smaller --seq", what,
                                (long long)n_train, T + 1);
    if (val_fraction > 0.0f && n_val < (int64_t)T + 1)
        return andrea_set_error("'%s': %lld validation tokens, need at least %d; raise "
                                "--val-fraction or use a smaller --seq", what, (long long)n_val,
                                T + 1);
    d->n = n;
    d->n_train = n_train;
    return 0;
}

int andrea_dataset_init(andrea_dataset *d, int32_t *tokens, int64_t n, float val_fraction, int T,
                        uint64_t checksum, const char *what) {
    memset(d, 0, sizeof *d);
    if (split(d, n, val_fraction, T, what)) {
        free(tokens);
        return -1;
    }
    d->tokens = tokens;
    d->checksum = checksum;
    return 0;
}

int andrea_dataset_init_mapped(andrea_dataset *d, andrea_token_file *tf, float val_fraction, int T,
                               uint64_t checksum, const char *what) {
    memset(d, 0, sizeof *d);
    if (split(d, (int64_t)andrea_token_file_count(tf), val_fraction, T, what)) return -1;
    size_t n_val = (size_t)(d->n - d->n_train);
    d->val = malloc(sizeof(int32_t) * (n_val ? n_val : 1));
    if (!d->val) return andrea_set_error("out of memory for %zu validation tokens", n_val);
    if (n_val && andrea_token_file_read(tf, (uint64_t)d->n_train, n_val, d->val)) {
        free(d->val);
        d->val = NULL;
        return -1;
    }
    d->tf = tf;
    d->checksum = checksum;
    return 0;
}

const int32_t *andrea_dataset_val(const andrea_dataset *d) {
    return d->tf ? d->val : d->tokens + d->n_train;
}

void andrea_dataset_free(andrea_dataset *d) {
    free(d->tokens);
    free(d->val);
    if (d->tf) andrea_token_file_close(d->tf);
    memset(d, 0, sizeof *d);
}

void andrea_dataset_train_batch(const andrea_dataset *d, andrea_rng *rng, int B, int T,
                                int32_t *x, int32_t *y) {
    andrea_dataset_train_rows(d, rng, B, 0, B, T, x, y);
}

void andrea_dataset_train_rows(const andrea_dataset *d, andrea_rng *rng, int B, int row0,
                               int nrows, int T, int32_t *x, int32_t *y) {
    uint64_t span = (uint64_t)(d->n_train - T); /* window starts in [0, n_train - T - 1] */
    for (int b = 0; b < B; b++) {
        int64_t start = (int64_t)(andrea_rng_u64(rng) % span); /* drawn for every row */
        if (b < row0 || b >= row0 + nrows) continue;
        long at = (long)(b - row0) * T;
        if (d->tf) { /* from the map: only this window's pages are read */
            andrea_token_file_read(d->tf, (uint64_t)start, (size_t)T, x + at);
            andrea_token_file_read(d->tf, (uint64_t)start + 1, (size_t)T, y + at);
            continue;
        }
        const int32_t *src = d->tokens + start;
        memcpy(x + at, src, sizeof(int32_t) * (size_t)T);
        memcpy(y + at, src + 1, sizeof(int32_t) * (size_t)T);
    }
}

int64_t andrea_dataset_val_windows(const andrea_dataset *d, int T) {
    int64_t n_val = d->n - d->n_train;
    return n_val >= T + 1 ? (n_val - 1) / T : 0;
}

void andrea_dataset_val_batch(const andrea_dataset *d, int64_t first, int B, int T, int32_t *x,
                              int32_t *y) {
    int64_t nw = andrea_dataset_val_windows(d, T);
    for (int b = 0; b < B; b++) {
        int64_t w = first + b;
        if (w < nw) {
            const int32_t *src = andrea_dataset_val(d) + w * T;
            memcpy(x + (long)b * T, src, sizeof(int32_t) * (size_t)T);
            memcpy(y + (long)b * T, src + 1, sizeof(int32_t) * (size_t)T);
        } else {
            for (int t = 0; t < T; t++) {
                x[(long)b * T + t] = 0;
                y[(long)b * T + t] = -1;
            }
        }
    }
}
