/*
 * attn_html.c - one self-contained, offline HTML page for exploring attention, in the
 * export's language: heatmaps of a head in pairs (raw beside scaled on one colour scale,
 * softmax beside the softmax without the scale) with colour legends, zoom and scrolling;
 * thumbnails of every head; a head view (lines from each token to the tokens it attends
 * to) and a cell view (q, k, q*k, the sum, the scale, the mask, the softmax, the weighted
 * rows of V). No network: the CSS and JS are inline (attn_page.c), the texts and the JSON
 * export sit in <script type="application/json"> elements.
 *
 * The page carries the raw scores, the probabilities and q, k, v of each head; scaled and
 * masked are derived in the page as fl(raw * scale), the engine's own bits (the export's
 * raw_mismatches says so), which halves the page against writing all four views.
 *
 * URL hash (the tests drive the page with it through a headless browser):
 *   select=L,H,i,j[,view][;L,H,i,j[,view]...]  hover cell (i, j); each leaves a hidden copy
 *       of #info-value (data-layer, data-head, data-i, data-j, data-view, data-value) in
 *       #probes
 *   head=L,H,i   the head view of query i: its weights in #hv-list span.w[data-j]
 *   cell=L,H,i,j the cell view: #cell td.cv-q/.cv-k/.cv-qk[data-d], #cv-raw, #cv-scaled,
 *       #cv-masked, #cv-softmax, #cell-v td.cv-out[data-d] (data-value each)
 *   zoom=PX      cell size of the heatmaps
 * joined by '&'.
 */
#include <string.h>

#include "inspect/attn_page.h"
#include "inspect/export.h"
#include "util/json.h"

/* The texts the page shows, in x->lang: every key starting page., view. or kind. */
static void write_texts(andrea_writer *w, const char *lang) {
    static const char *const PREFIX[] = {"page.", "view.", "kind."};
    andrea_write_str(w, "{");
    int first = 1;
    for (int k = 0;; k++) {
        const char *key = andrea_lang_key("en", k);
        if (!key) break;
        int shown = 0;
        for (int p = 0; p < 3; p++) shown |= strncmp(key, PREFIX[p], strlen(PREFIX[p])) == 0;
        if (!shown) continue;
        const char *text = andrea_lang_text(lang, key);
        if (!first) andrea_write_str(w, ",\n");
        first = 0;
        andrea_json_string(w, key, strlen(key), ANDREA_JSON_SCRIPT_SAFE);
        andrea_write_str(w, ":");
        andrea_json_string(w, text, strlen(text), ANDREA_JSON_SCRIPT_SAFE);
    }
    andrea_write_str(w, "}\n");
}

int andrea_attention_render_html(andrea_writer *w, const andrea_attn_export *x) {
    /* the page derives scaled and masked from raw; it needs raw and the probabilities */
    const unsigned views = ANDREA_VIEW_BIT(ANDREA_VIEW_RAW) | ANDREA_VIEW_BIT(ANDREA_VIEW_SOFTMAX);
    if (andrea_attn_export_validate(x, views, "attention HTML")) return -1;
    if (andrea_lang_check(x->lang)) return -1;
    andrea_writef(w, "<!DOCTYPE html>\n<html lang=\"%s\"><head><meta charset=\"utf-8\">\n",
                  x->lang && *x->lang ? x->lang : "en");
    const char *title = andrea_lang_text(x->lang, "page.title");
    andrea_write_str(w, "<title>");
    andrea_html_text(w, title);
    andrea_write_str(w, "</title>\n");
    for (int i = 0; andrea_attn_page_body[i]; i++) andrea_write_str(w, andrea_attn_page_body[i]);
    andrea_write_str(w, "<script type=\"application/json\" id=\"andrea-text\">\n");
    write_texts(w, x->lang);
    andrea_write_str(w, "</script>\n<script type=\"application/json\" id=\"andrea-data\">\n");
    if (andrea_attention_render_json(w, x, views)) return -1;
    andrea_write_str(w, "</script>\n<script>\n");
    const char *const *parts[4] = {andrea_attn_page_script, andrea_attn_page_cell,
                                   andrea_attn_page_live, andrea_attn_page_end};
    for (int p = 0; p < 4; p++)
        for (int i = 0; parts[p][i]; i++) andrea_write_str(w, parts[p][i]);
    andrea_write_str(w, "</script>\n</body></html>\n");
    return andrea_writer_status(w, "attention HTML");
}
