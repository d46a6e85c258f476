/* attn_size.c - how big an attention export will be, before computing it, and the guard
 * that keeps it under a limit (andrea_inspect.h). At T = 255 the 16 heads of a 2 x 8
 * model were a 45 MB page; andrea-120m at T = 1024 would be gigabytes. */
#include <stdio.h>

#include "andrea_inspect.h"
#include "util/error.h"

enum { NUMBER_BYTES = 16 }; /* "-1.23456789e-05," at %.9g, the widest */
#define PAGE_BYTES 65536    /* the page's own HTML, CSS and script, with room */
#define MB(x) ((double)(x) / 1e6)

/* "36.8 MB", "5277 MB", "0.121 MB": three digits, no exponent */
static const char *mb(char *buf, int64_t bytes) {
    double x = MB(bytes);
    snprintf(buf, 24, x >= 1000 ? "%.0f MB" : "%.3g MB", x);
    return buf;
}

void andrea_attention_size(const andrea_config *c, int T, int n_layers, int n_heads,
                           unsigned views, andrea_attn_size *out) {
    int64_t TT = (int64_t)T * T, HS = c->d_model / c->n_head;
    int64_t all = (int64_t)c->n_layer * c->n_head, sel = (int64_t)n_layers * n_heads;
    int nv = 0;
    for (int v = 0; v < ANDREA_VIEW_COUNT; v++) nv += (views >> v) & 1;
    out->map_bytes = 4 * all * TT * (1 + nv);
    /* per head: its views, q, k, v (T, HS) each, and a few hundred bytes of statistics */
    int64_t qkv = 3 * T * HS * NUMBER_BYTES;
    out->json_bytes = nv ? sel * (nv * TT * NUMBER_BYTES + qkv + 512) + 4096 : 0;
    out->html_bytes = PAGE_BYTES + sel * (2 * TT * NUMBER_BYTES + qkv + 512);
}

static int64_t largest(const andrea_attn_guard *g, const andrea_attn_size *s) {
    int64_t m = g->views ? s->json_bytes : 0;
    if (g->html && s->html_bytes > m) m = s->html_bytes;
    return m;
}

static void size_of(const andrea_config *c, int T, const andrea_attn_guard *g,
                    andrea_attn_size *s) {
    andrea_attention_size(c, T, g->layer < 0 ? c->n_layer : 1, g->head < 0 ? c->n_head : 1,
                          g->views, s);
}

int andrea_attention_guard(const andrea_config *c, int T, andrea_attn_guard *g) {
    int64_t limit = g->limit > 0 ? g->limit : (int64_t)64000000;
    char b1[24], b2[24], b3[24];
    g->limited = 0;
    g->note[0] = '\0';
    size_of(c, T, g, &g->asked);
    g->chosen = g->asked;
    int layer0 = g->layer, head0 = g->head;
    if (largest(g, &g->chosen) > limit && g->layer < 0) g->layer = 0;
    size_of(c, T, g, &g->chosen);
    if (largest(g, &g->chosen) > limit && g->head < 0) g->head = 0;
    size_of(c, T, g, &g->chosen);
    if (largest(g, &g->chosen) > limit) {
        g->layer = layer0;
        g->head = head0;
        return andrea_set_error(andrea_lang_text(g->lang, "attn.guard_over"), T, mb(b1, largest(g, &g->chosen)), mb(b2, limit),
                                layer0 < 0 ? c->n_layer : 1, head0 < 0 ? c->n_head : 1,
                                mb(b3, largest(g, &g->asked)));
    }
    if (g->layer != layer0 || g->head != head0) {
        g->limited = 1;
        snprintf(g->note, sizeof g->note, andrea_lang_text(g->lang, "attn.guard_note"),
                 layer0 < 0 ? c->n_layer : 1, head0 < 0 ? c->n_head : 1, T,
                 mb(b1, largest(g, &g->asked)), mb(b2, limit), g->layer,
                 g->head != head0 ? andrea_lang_text(g->lang, "attn.guard_head0") : "", mb(b3, largest(g, &g->chosen)));
    }
    return 0;
}
