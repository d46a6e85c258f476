/* gate_internal.h - between the gate's two files: coherence.c counts, gate_honest.c
 * turns the counts into the honest gate's factors. */
#ifndef ANDREA_TRAIN_GATE_INTERNAL_H
#define ANDREA_TRAIN_GATE_INTERNAL_H

#include <stddef.h>

#include "andrea_gate.h"

/* One pass over text: every count of andrea_gate_result and the course's four parts,
 * total and pass (kind ANDREA_GATE_COURSE). 0, or -1 with andrea_error(). */
int andrea_gate_measure(const char *text, size_t len, const andrea_gate *g,
                        andrea_gate_result *out);

#endif
