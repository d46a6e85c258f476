/*
 * attn_util.h - what `andrea attention` and `andrea explain` share: a prompt run
 * through a checkpoint's tokenizer, printable token labels, JSON strings, and
 * the PNG / HTML writers (attn_png.c, attn_html.c).
 */
#ifndef ANDREA_CLI_ATTN_UTIL_H
#define ANDREA_CLI_ATTN_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "andrea.h"
#include "andrea_inspect.h"
#include "andrea_tokenizer.h"

#define ATTN_LABEL_MAX 64

/* Token labels, one per position: printable ASCII as is, space as U+2423 (the
 * open box), \n \t \r \\ escaped, every other byte as \xNN, BOS as <BOS>. */
typedef struct {
    int T;
    int32_t *ids;                    /* (T) */
    char (*labels)[ATTN_LABEL_MAX];  /* (T) UTF-8, NUL-terminated */
} attn_tokens;

/* Encodes prompt with tok (BOS first if bos) and labels every token.
 * Prints "andrea CMD: ..." and returns -1 on failure or when T is not in [1, max_T]. */
int attn_tokens_make(const char *cmd, const andrea_tokenizer *tok, const char *prompt, int bos,
                     int max_T, attn_tokens *out);
void attn_tokens_free(attn_tokens *t);
/* The label of one token id into buf (at least ATTN_LABEL_MAX bytes). */
void attn_label(const andrea_tokenizer *tok, int32_t id, char *buf);
/* Display width of a UTF-8 string (code points). */
int attn_utf8_width(const char *s);
/* Writes s to f padded (right-aligned if right) or cut to exactly width columns. */
void attn_print_cell(FILE *f, const char *s, int width, int right);

/* Prints a finite score in a field of `width` >= 8 columns, with as many
 * decimals (3 down to 0) as fit when the largest |score| shown is maxabs;
 * infinities as -inf/inf. */
void attn_print_score(FILE *f, double x, double maxabs, int width);

/* A JSON string literal (quotes included): valid UTF-8 kept, other bytes and
 * controls as \u00XX, and < > & escaped so the text can sit inside <script>. */
void attn_json_string(FILE *f, const char *s, size_t n);
/* A float that round-trips (%.9g), or null for NaN and infinities. */
void attn_json_float(FILE *f, float x);

/* What the writers need besides the maps. layers/heads: the selected indices. */
typedef struct {
    const char *model_path;
    const char *prompt;
    const attn_tokens *tokens;
    const andrea_attn_maps *maps;
    const int *layers, *heads;
    int n_layers, n_heads;
} attn_export;

/* JSON document (docs/attention.md): config, tokens, labels, checks, and per
 * selected head its statistics and the views in `views`. 0 or -1 (message printed). */
int attn_write_json(FILE *f, const attn_export *x, unsigned views);
/* Self-contained HTML page with the JSON of all four views embedded. */
int attn_write_html(const char *path, const attn_export *x);
/* PNG heatmaps into dir: per selected head and view L<l>_H<h>_<view>.png, and
 * grid_<view>.png (layers x heads). Prints the files written. 0 or -1 (message printed). */
int attn_write_pngs(const char *dir, const attn_export *x, unsigned views);

#endif
