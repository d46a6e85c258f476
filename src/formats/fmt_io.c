/* fmt_io.c - the bounds-checked reader, the output buffer and its atomic save, and
 * the model builder every reader ends with. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/tensor_io.h"
#include "formats/fmt.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/file.h"
#include "util/le.h"

int andrea_rd_bytes(andrea_rd *r, size_t n, const uint8_t **out, const char *field) {
    if (n > r->n - r->pos)
        return andrea_set_error("%s: truncated: %s needs %zu bytes at offset %zu, the file has %zu",
                                r->what, field, n, r->pos, r->n);
    *out = r->p + r->pos;
    r->pos += n;
    return 0;
}

int andrea_rd_u32(andrea_rd *r, uint32_t *v, const char *field) {
    const uint8_t *p = NULL;
    if (andrea_rd_bytes(r, 4, &p, field)) return -1;
    *v = get_u32(p);
    return 0;
}

int andrea_rd_u64(andrea_rd *r, uint64_t *v, const char *field) {
    const uint8_t *p = NULL;
    if (andrea_rd_bytes(r, 8, &p, field)) return -1;
    *v = get_u64(p);
    return 0;
}

int andrea_fmt_slurp(const char *path, uint8_t **data, size_t *n) {
    andrea_bytes b = {0};
    *data = NULL;
    *n = 0;
    if (andrea_file_read(path, &b)) return -1; /* the one reader: regular files only */
    *data = b.data;
    *n = b.len;
    return 0;
}

static void wb_grow(andrea_wbuf *w, size_t extra) {
    if (w->oom) return;
    if (extra <= w->cap - w->n) return;
    size_t cap = w->cap ? w->cap : 4096;
    while (cap - w->n < extra) {
        if (cap > SIZE_MAX / 2) {
            w->oom = 1;
            return;
        }
        cap *= 2;
    }
    uint8_t *p = realloc(w->p, cap);
    if (!p) {
        w->oom = 1;
        return;
    }
    w->p = p;
    w->cap = cap;
}

void andrea_wb_put(andrea_wbuf *w, const void *p, size_t n) {
    wb_grow(w, n);
    if (w->oom || n == 0) return;
    memcpy(w->p + w->n, p, n);
    w->n += n;
}

void andrea_wb_u32(andrea_wbuf *w, uint32_t v) {
    uint8_t b[4];
    put_u32(b, v);
    andrea_wb_put(w, b, 4);
}

void andrea_wb_u64(andrea_wbuf *w, uint64_t v) {
    uint8_t b[8];
    put_u64(b, v);
    andrea_wb_put(w, b, 8);
}

void andrea_wb_f32(andrea_wbuf *w, float v) {
    uint8_t b[4];
    put_f32(b, v);
    andrea_wb_put(w, b, 4);
}

void andrea_wb_str(andrea_wbuf *w, const char *s) { andrea_wb_put(w, s, strlen(s)); }

void andrea_wb_zeros(andrea_wbuf *w, size_t n) {
    wb_grow(w, n);
    if (w->oom) return;
    memset(w->p + w->n, 0, n);
    w->n += n;
}

void andrea_wb_free(andrea_wbuf *w) {
    free(w->p);
    memset(w, 0, sizeof *w);
}

int andrea_wb_save(const andrea_wbuf *w, const char *path) {
    if (w->oom) return andrea_set_error("out of memory building '%s'", path);
    andrea_atomic_file af; /* whole under a temporary name, then renamed: never torn */
    if (!andrea_atomic_open(&af, path)) return -1;
    if (fwrite(w->p, 1, w->n, af.f) != w->n) {
        andrea_atomic_abort(&af);
        return andrea_set_error("writing '%s' failed (disk full?)", path);
    }
    return andrea_atomic_commit(&af);
}

andrea_model *andrea_fmt_build(const andrea_config *cfg, andrea_fill_fn fill, void *ctx,
                               const char *what, size_t file_bytes) {
    if (andrea_config_validate(cfg)) {
        andrea_set_error("%s: %s", what, andrea_error());
        return NULL;
    }
    /* Every parameter takes at least half a byte of the file in every format we read
     * (q4_0: 18 bytes per 32), so a config claiming more is a lie: refuse it before
     * allocating what it asks for. */
    andrea_param_counts pc = andrea_config_param_counts(cfg);
    if (pc.total <= 0 || (uint64_t)pc.total / 2 > file_bytes) {
        andrea_set_error("%s: its config needs %lld parameters, more than the file's %zu bytes "
                         "could hold", what, (long long)pc.total, file_bytes);
        return NULL;
    }
    andrea_model *m = andrea_model_alloc_on(cfg, &andrea_backend_cpu); /* filled in place */
    if (!m) return NULL;
    for (int i = 0; i < m->layout.n; i++) {
        const andrea_tensor_info *t = &m->layout.t[i];
        if (fill(ctx, t, m->params + t->offset)) {
            andrea_model_free(m);
            return NULL;
        }
    }
    return andrea_model_to_default(m);
}

void andrea_fmt_sibling(const char *path, const char *name, char *out, size_t n) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(out, n, "%s", name);
        return;
    }
    snprintf(out, n, "%.*s/%s", (int)(slash - path), path, name);
}

const char *andrea_fmt_printable(const void *s, size_t n, char out[84]) {
    const uint8_t *p = s;
    size_t k = n > 80 ? 80 : n;
    for (size_t i = 0; i < k; i++) out[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
    if (n > 80) memcpy(out + 77, "...", 3);
    out[k] = 0;
    return out;
}
