/* gate_internal.h - between the gate's files: coherence.c holds the word list and counts,
 * gate_reference.c the word model of a reference text, gate_honest.c turns both into the
 * honest gate's factors. */
#ifndef ANDREA_TRAIN_GATE_INTERNAL_H
#define ANDREA_TRAIN_GATE_INTERNAL_H

#include <stddef.h>

#include "andrea_gate.h"
#include "train/gate/strset.h"

typedef struct andrea_gate_ref andrea_gate_ref;

struct andrea_gate {
    strset words; /* the word list, lower-cased */
    char path[512];
    andrea_gate_ref *ref; /* the reference text's word model, NULL until loaded */
    char ref_path[512];   /* "" for andrea_gate_set_reference */
};

/* One pass over text: every count of andrea_gate_result and the course's four parts,
 * total and pass (kind ANDREA_GATE_COURSE). 0, or -1 with andrea_error(). */
int andrea_gate_measure(const char *text, size_t len, const andrea_gate *g,
                        andrea_gate_result *out);

/* The next whitespace-separated word of text from *pos: w[0..n) as written, core[0..cn)
 * without leading and trailing punctuation (cn 0: only punctuation). 0 at the end. */
int andrea_gate_next_word(const char *text, size_t len, size_t *pos, const char **w, size_t *n,
                          const char **core, size_t *cn);
/* A core with a letter (ASCII or any non-ASCII byte): evidence for or against English. */
int andrea_gate_is_candidate(const char *core, size_t cn);
/* The core is in the word list (case folded, U+2019 as ', hyphenated parts each). */
int andrea_gate_in_list(const andrea_gate *g, const char *core, size_t cn);

/* gate_reference.c: the word model of text (its first 90% of words; the last 10% measure
 * what real text scores under it). NULL with andrea_error(). */
andrea_gate_ref *andrea_gate_ref_build(const andrea_gate *g, const char *text, size_t len);
void andrea_gate_ref_free(andrea_gate_ref *ref);
/* Fills out's common, order and the counts behind them for text (the honest gate's two
 * reference factors are computed from them in gate_honest.c). 0 or -1 (out of memory). */
int andrea_gate_ref_measure(const andrea_gate *g, const char *text, size_t len,
                            andrea_gate_result *out);

#endif
