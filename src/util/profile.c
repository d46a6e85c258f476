/* profile.c - the op-time table behind `andrea bench --profile`. */
#include "util/profile.h"

#include <string.h>

int andrea_prof_on = 0;
double andrea_prof_seconds[PROF_N];

void andrea_prof_reset(void) { memset(andrea_prof_seconds, 0, sizeof andrea_prof_seconds); }

const char *andrea_prof_name(int cat) {
    static const char *names[PROF_N] = {"matmul", "attention", "norm", "cross-entropy",
                                        "zeroing", "optimizer"};
    return cat >= 0 && cat < PROF_N ? names[cat] : "?";
}
