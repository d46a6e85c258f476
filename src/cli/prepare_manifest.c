/*
 * prepare_manifest.c - `andrea prepare --manifest M -o DIR`: every source of a run
 * manifest tokenized once into DIR/NAME.tokens (BOS doc BOS doc ... BOS, so the token
 * source finds the same documents), and DIR/manifest.json, the same manifest with each
 * source now that token file: training from it skips the text and JSON parsing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "andrea_tokenizer.h"
#include "commands.h"
#include "train/curriculum/docset.h"
#include "train/curriculum/manifest.h"
#include "util/atomic_file.h"
#include "util/error.h"

#ifdef ANDREA_HAVE_JANSSON
#include <jansson.h>

static int write_source(const andrea_manifest_source *s, const andrea_tokenizer *tok,
                        const char *path, int quiet) {
    andrea_docset d;
    if (andrea_docset_load(&d, s, tok, 0.0)) return -1; /* every document; the run splits */
    char tmp[4200]; /* written under a temporary name, renamed over path when whole */
    if (andrea_atomic_tmp_name(path, tmp, sizeof tmp)) {
        andrea_docset_free(&d);
        return -1;
    }
    andrea_token_writer *w = andrea_token_writer_create(tmp, tok);
    int32_t bos = andrea_tokenizer_bos(tok);
    int rc = w ? andrea_token_writer_write(w, &bos, 1) : -1;
    for (int64_t k = 0; k < d.n_docs && !rc; k++)
        rc = andrea_token_writer_write(w, d.tok + d.start[k], (size_t)(d.start[k + 1] - d.start[k])) ||
             andrea_token_writer_write(w, &bos, 1);
    uint64_t n = w ? andrea_token_writer_count(w) : 0;
    if (w && andrea_token_writer_close(w)) rc = -1;
    if (!rc && andrea_atomic_publish(tmp, path)) rc = -1;
    if (!rc && !quiet)
        fprintf(stderr, "prepare: source '%s': %lld documents, %llu tokens -> '%s'\n", s->name,
                (long long)d.n_docs, (unsigned long long)n, path);
    andrea_docset_free(&d);
    if (rc) {
        remove(tmp);
        andrea_error_rename(tmp, path);
    }
    return rc;
}

/* The fewest significant digits (1..17) that read back as v exactly. */
static int shortest_digits(double v) {
    char buf[40];
    for (int p = 1; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return p;
    }
    return 17;
}

/* The digits every real in j needs to read back exactly: jansson writes all reals with
 * one precision (17 by default: 0.05 as 0.050000000000000003), and %.Ng with N <= 15
 * writes a value whose shortest form has <= N digits in that shortest form. */
static int real_digits(json_t *j) {
    int p = 1;
    if (json_is_real(j)) return shortest_digits(json_real_value(j));
    if (json_is_array(j))
        for (size_t i = 0; i < json_array_size(j); i++) {
            int q = real_digits(json_array_get(j, i));
            if (q > p) p = q;
        }
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) {
            int q = real_digits(v);
            if (q > p) p = q;
        }
    }
    return p;
}

/* The manifest with each source's path, format and cutting replaced by its token file. */
static int write_manifest(const andrea_manifest *m, const char *dir, const char *spec, int quiet) {
    json_error_t e;
    json_t *root = json_load_file(m->path, 0, &e);
    if (!root) return -1;
    json_t *srcs = json_object_get(root, "sources");
    for (size_t i = 0; i < json_array_size(srcs); i++) {
        json_t *o = json_array_get(srcs, i);
        char name[ANDREA_MANIFEST_NAME + 8];
        snprintf(name, sizeof name, "%s.tokens", m->src[i].name);
        json_object_set_new(o, "path", json_string(name)); /* relative: next to manifest.json */
        json_object_set_new(o, "format", json_string("tokens"));
        json_object_del(o, "range");
        json_object_del(o, "split");
        json_object_del(o, "separator");
        json_object_del(o, "min_bytes");
    }
    json_object_set_new(root, "tokenizer", json_string(spec));
    char path[4200];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    int rc = json_dump_file(root, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                                            JSON_REAL_PRECISION(real_digits(root)));
    json_decref(root);
    if (rc == 0 && !quiet) fprintf(stderr, "prepare: wrote '%s'\n", path);
    return rc;
}

/* dir without its trailing slashes ("prepared/" -> "prepared", "/" stays), so joined
 * paths read prepared/x.tokens, never prepared//x.tokens */
static void trim_dir(const char *dir, char *out, size_t cap) {
    snprintf(out, cap, "%s", dir);
    for (size_t n = strlen(out); n > 1 && out[n - 1] == '/'; n--) out[n - 1] = 0;
}

int prepare_manifest(const char *manifest, const char *spec, const char *dir_arg, int quiet) {
    char dir[4096];
    trim_dir(dir_arg, dir, sizeof dir);
    andrea_manifest m;
    if (andrea_manifest_read(manifest, &m)) {
        fprintf(stderr, "andrea prepare: %s\n", andrea_error());
        andrea_manifest_free(&m);
        return 1;
    }
    if (m.tokenizer && spec == NULL) spec = m.tokenizer;
    if (!spec) spec = "byte";
    andrea_tokenizer *tok = andrea_tokenizer_open(spec);
    int rc = tok ? 0 : -1;
    if (!rc && mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "andrea prepare: cannot create '%s': %s\n", dir, strerror(errno));
        rc = 1;
    }
    for (int k = 0; k < m.n && !rc; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.tokens", dir, m.src[k].name);
        rc = write_source(&m.src[k], tok, path, quiet);
    }
    if (!rc && write_manifest(&m, dir, spec, quiet)) {
        fprintf(stderr, "andrea prepare: cannot write '%s/manifest.json'\n", dir);
        rc = 1;
    }
    if (rc < 0) fprintf(stderr, "andrea prepare: %s\n", andrea_error());
    andrea_tokenizer_free(tok);
    andrea_manifest_free(&m);
    return rc ? 1 : 0;
}
#else
int prepare_manifest(const char *manifest, const char *spec, const char *dir, int quiet) {
    (void)spec, (void)dir, (void)quiet;
    fprintf(stderr, "andrea prepare: manifest '%s' needs jansson; this andrea was built "
            "without it (install libjansson-dev and rebuild)\n", manifest);
    return 1;
}
#endif
