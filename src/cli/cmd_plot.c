/* cmd_plot.c - `andrea plot RUN_DIR [-o DIR]`: the run's plots as PNG files (loss, lr,
 * gradient norm, gate scores, per-source loss and shares), from its log.jsonl. */
#include <stdio.h>

#include "andrea.h"
#include "andrea_report.h"
#include "args.h"
#include "commands.h"

static void wrote(const char *file, const char *title, void *user) {
    (void)user;
    printf("wrote %s  (%s)\n", file, title);
}

int cmd_plot(int argc, char **argv) {
    const char *out = NULL;
    arg_spec specs[] = {{"out", 'o', ARG_STR, &out, "directory for the PNGs (RUN_DIR/plots)", 0}};
    const char *pos[1] = {NULL};
    int n_pos = 0;
    int r = args_parse("plot", argc, argv, specs, 1, pos, 1, &n_pos);
    if (r == 1) {
        args_usage("plot", "RUN_DIR [-o DIR]", specs, 1);
        return 0;
    }
    if (r) return 2;
    if (n_pos != 1) {
        fprintf(stderr, "andrea plot: give the run's directory (the -o of andrea train)\n");
        return 2;
    }
    char dir[4096];
    if (!out) snprintf(dir, sizeof dir, "%s/plots", pos[0]);
    if (andrea_run_plot(pos[0], out ? out : dir, wrote, NULL)) {
        fprintf(stderr, "andrea plot: %s\n", andrea_error());
        return 1;
    }
    return 0;
}
