/* export.h - what the attention renderers share: the selected layers and heads of an
 * andrea_attn_export, and its validation (src/inspect/export.c). */
#ifndef ANDREA_INSPECT_EXPORT_H
#define ANDREA_INSPECT_EXPORT_H

#include "andrea_inspect.h"

/* Number of selected layers / heads and the index of the k-th; NULL lists mean all. */
static inline int export_n_layers(const andrea_attn_export *x) {
    return x->layers ? x->n_layers : x->maps->n_layer;
}
static inline int export_n_heads(const andrea_attn_export *x) {
    return x->heads ? x->n_heads : x->maps->n_head;
}
static inline int export_layer(const andrea_attn_export *x, int k) {
    return x->layers ? x->layers[k] : k;
}
static inline int export_head(const andrea_attn_export *x, int k) {
    return x->heads ? x->heads[k] : k;
}

/* 0 if x can be rendered with `views` (the maps hold them and softmax, the tokens
 * match, every selected layer and head exists); else -1 with andrea_error()
 * starting with what. */
/* s as HTML text (<, >, & escaped) into w: the pages' titles and sentences. */
void andrea_html_text(andrea_writer *w, const char *s);

int andrea_attn_export_validate(const andrea_attn_export *x, unsigned views, const char *what);

#endif
