/* export.c - checks an andrea_attn_export before a renderer trusts it, so a server
 * handing over a bad selection gets a message instead of a crash. */
#include "inspect/export.h"

#include "util/error.h"

int andrea_attn_export_validate(const andrea_attn_export *x, unsigned views, const char *what) {
    const andrea_attn_maps *mp = x->maps;
    if (!mp || !x->tokens || !x->model || !x->prompt)
        return andrea_set_error("%s: the export lacks its maps, tokens, model or prompt", what);
    if (x->tokens->T != mp->T)
        return andrea_set_error("%s: %d token labels for maps of T = %d", what, x->tokens->T,
                                mp->T);
    unsigned need = views | ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX);
    for (int v = 0; v < ANDREA_VIEW_COUNT; v++)
        if ((need & ANDREA_VIEW_BIT(v)) && !(mp->views & ANDREA_VIEW_BIT(v) && mp->maps[v]))
            return andrea_set_error("%s: the maps lack the %s view (inspect with it)", what,
                                    andrea_attn_view_name(v));
    int nl = export_n_layers(x), nh = export_n_heads(x);
    if (nl < 1 || nh < 1) return andrea_set_error("%s: no layer or head selected", what);
    for (int k = 0; k < nl; k++)
        if (export_layer(x, k) < 0 || export_layer(x, k) >= mp->n_layer)
            return andrea_set_error("%s: layer %d is not in the model (0..%d)", what,
                                    export_layer(x, k), mp->n_layer - 1);
    for (int k = 0; k < nh; k++)
        if (export_head(x, k) < 0 || export_head(x, k) >= mp->n_head)
            return andrea_set_error("%s: head %d is not in the model (0..%d)", what,
                                    export_head(x, k), mp->n_head - 1);
    return 0;
}

void andrea_html_text(andrea_writer *w, const char *s) {
    for (; *s; s++) {
        char c[2] = {*s, 0};
        andrea_write_str(w, *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : c);
    }
}
