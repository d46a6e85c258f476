/* cmd_report.c - `andrea report RUN_DIR [-o FILE]`: one offline HTML page with the run's
 * plots, configuration and coherence-gate samples. */
#include <stdio.h>

#include "andrea.h"
#include "andrea_report.h"
#include "args.h"
#include "commands.h"

int cmd_report(int argc, char **argv) {
    const char *out = NULL;
    arg_spec specs[] = {{"out", 'o', ARG_STR, &out, "the HTML file (RUN_DIR/report.html)", 0}};
    const char *pos[1] = {NULL};
    int n_pos = 0;
    int r = args_parse("report", argc, argv, specs, 1, pos, 1, &n_pos);
    if (r == 1) {
        args_usage("report", "RUN_DIR [-o FILE]", specs, 1);
        return 0;
    }
    if (r) return 2;
    if (n_pos != 1) {
        fprintf(stderr, "andrea report: give the run's directory (the -o of andrea train)\n");
        return 2;
    }
    char path[4096];
    if (!out) snprintf(path, sizeof path, "%s/report.html", pos[0]);
    if (andrea_run_report(pos[0], out ? out : path)) {
        fprintf(stderr, "andrea report: %s\n", andrea_error());
        return 1;
    }
    printf("wrote %s\n", out ? out : path);
    return 0;
}
