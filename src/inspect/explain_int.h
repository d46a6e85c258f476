/* explain_int.h - what the parts of explain share (explain.c, explain_claims.c,
 * shortcut.c). */
#ifndef ANDREA_INSPECT_EXPLAIN_INT_H
#define ANDREA_INSPECT_EXPLAIN_INT_H

#include "andrea_inspect.h"

/* The engine's scaled score for q.k (HS terms) agrees with raw, the CPU kernel's dot
 * product of the same q and k: fl(raw * scale) to the bit where maps->scores_exact, else
 * within the dot product's float rounding (HS + 2 roundings of sum |q_d k_d|, scaled). */
int andrea_attn_score_agrees(const andrea_attn_maps *maps, const float *q, const float *k,
                             int HS, float raw, float scaled);

/* Records one check of `part`: key names its text in the language tables (lang_en.c), a
 * printf format the arguments fill, in e->lang. */
void andrea_explain_add_check(andrea_explain *e, int part, int ok, const char *key, ...);

/* The lesson's further claims (explain_claims.c): the mask value, the number of scores, the
 * softmax's gradient with and without the scale, and every head named from its
 * measurements. 0, or -1 with andrea_error() (out of memory). */
int andrea_explain_claims(andrea_explain *e, const andrea_config *c, andrea_rng *rng);
/* The shapes at the model's own context, from the attention kernel (explain_context.c).
 * 0, or -1 with andrea_error() (out of memory). */
int andrea_explain_context(andrea_explain *e, const andrea_config *c, andrea_rng *rng);
/* The shortcut a model takes without the mask (shortcut.c). */
void andrea_explain_shortcut(andrea_explain *e, andrea_rng *rng);

#endif
