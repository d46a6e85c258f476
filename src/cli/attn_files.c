/* attn_files.c - the files of `andrea attention --json/--html/--png`: the library renders
 * each document into a writer over the file; this names, opens and closes them and says
 * what was written. */
#include "attn_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/atomic_file.h"

/* The rendered document of render(w, x) into path, written whole under a temporary name
 * and renamed (an interrupted export never leaves a torn file nor destroys the old one).
 * 0 or -1 (message printed). */
static int write_file(const char *path, const char *flag, int (*render)(andrea_writer *, const void *),
                      const void *ctx, const char *lang) {
    andrea_atomic_file af;
    FILE *f = andrea_atomic_open(&af, path);
    if (!f) {
        fprintf(stderr, "andrea attention: ");
        fprintf(stderr, andrea_lang_text(lang, "err.create"), path, flag, andrea_error());
        fputc('\n', stderr);
        return -1;
    }
    andrea_writer w = andrea_writer_file(f);
    int rc = render(&w, ctx);
    if (rc) {
        fprintf(stderr, "andrea attention: '%s': %s\n", path, andrea_error());
        andrea_atomic_abort(&af);
    } else if (andrea_atomic_commit(&af)) {
        fprintf(stderr, "andrea attention: %s\n", andrea_error());
        rc = -1;
    }
    return rc;
}

typedef struct {
    const andrea_attn_export *x;
    unsigned views;
} json_job;

static int render_json(andrea_writer *w, const void *ctx) {
    const json_job *j = ctx;
    return andrea_attention_render_json(w, j->x, j->views);
}

int attn_write_json_file(const char *path, const andrea_attn_export *x, unsigned views) {
    json_job job = {x, views};
    if (strcmp(path, "-") != 0) {
        if (write_file(path, "--json", render_json, &job, x->lang)) return -1;
        fprintf(stderr, andrea_lang_text(x->lang, "attn.wrote"), path);
        return 0;
    }
    andrea_writer w = andrea_writer_file(stdout);
    int rc = render_json(&w, &job);
    if (rc) fprintf(stderr, "andrea attention: %s\n", andrea_error());
    if (!rc && fflush(stdout) != 0) {
        fprintf(stderr, "andrea attention: %s\n", andrea_lang_text(x->lang, "err.json_write"));
        rc = -1;
    }
    return rc;
}

static int render_html(andrea_writer *w, const void *x) { return andrea_attention_render_html(w, x); }

int attn_write_html_file(const char *path, const andrea_attn_export *x) {
    if (write_file(path, "--html", render_html, x, x->lang)) return -1;
    fprintf(stderr, andrea_lang_text(x->lang, "attn.wrote_html"), path);
    return 0;
}

/* One PNG: a head's view, or the layers x heads grid when layer < 0. */
typedef struct {
    const andrea_attn_export *x;
    int layer, head, view;
} png_job;

static int render_png(andrea_writer *w, const void *ctx) {
    const png_job *j = ctx;
    if (j->layer < 0) return andrea_attention_render_png_grid(w, j->x, j->view);
    return andrea_attention_render_png(w, j->x, j->layer, j->head, j->view);
}

int attn_write_png_dir(const char *dir, const andrea_attn_export *x, unsigned views) {
    if (mkdir(dir, 0777) != 0) {
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "andrea attention: ");
            fprintf(stderr, andrea_lang_text(x->lang, "err.png_dir"), dir);
            fputc('\n', stderr);
            return -1;
        }
    }
    size_t n = strlen(dir) + 64;
    char *path = malloc(n);
    if (!path) return -1;
    int count = 0, rc = 0;
    for (int v = 0; v < ANDREA_VIEW_COUNT && !rc; v++) {
        if (!(views & ANDREA_VIEW_BIT(v))) continue;
        for (int li = 0; li < x->n_layers && !rc; li++)
            for (int hi = 0; hi < x->n_heads && !rc; hi++) {
                png_job j = {x, x->layers[li], x->heads[hi], v};
                snprintf(path, n, "%s/L%d_H%d_%s.png", dir, j.layer, j.head, andrea_attn_view_name(v));
                rc = write_file(path, "--png", render_png, &j, x->lang);
                count++;
            }
        if (rc) break;
        png_job j = {x, -1, -1, v};
        snprintf(path, n, "%s/grid_%s.png", dir, andrea_attn_view_name(v));
        rc = write_file(path, "--png", render_png, &j, x->lang);
        count++;
    }
    if (!rc)
        fprintf(stderr, andrea_lang_text(x->lang, "attn.wrote_png"), count, dir);
    free(path);
    return rc;
}

