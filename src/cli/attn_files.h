/* attn_files.h - `andrea attention`'s output files (attn_files.c). Each returns 0, or -1
 * with the message printed. */
#ifndef ANDREA_CLI_ATTN_FILES_H
#define ANDREA_CLI_ATTN_FILES_H

#include "andrea_inspect.h"

/* --json: a file, or '-' for stdout. */
int attn_write_json_file(const char *path, const andrea_attn_export *x, unsigned views);
/* --html: the explorer page. */
int attn_write_html_file(const char *path, const andrea_attn_export *x);
/* --png DIR: per selected head and view L<l>_H<h>_<view>.png, and grid_<view>.png. */
int attn_write_png_dir(const char *dir, const andrea_attn_export *x, unsigned views);

#endif
