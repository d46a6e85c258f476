/* attn_json.c - the JSON export of the attention maps (docs/attention.md, "JSON"). */
#include <math.h>
#include <string.h>

#include "inspect/export.h"
#include "util/json.h"

/* Label and prompt strings: any byte survives (KEEP_BYTES) and the text may sit inside
 * the HTML page's <script> element (SCRIPT_SAFE). */
enum { STRING_FLAGS = ANDREA_JSON_SCRIPT_SAFE | ANDREA_JSON_KEEP_BYTES | ANDREA_JSON_HEX_CONTROLS };

static void json_str(andrea_writer *w, const char *s) {
    andrea_json_string(w, s, strlen(s), STRING_FLAGS);
}

/* A float that reads back to the same bits (%.9g), or null for NaN and infinities. */
static void json_float(andrea_writer *w, float x) {
    if (isfinite(x)) andrea_writef(w, "%.9g", (double)x);
    else andrea_write_str(w, "null");
}

/* One (T, T) matrix as rows of numbers, one row per line. */
static void json_matrix(andrea_writer *w, const float *M, int T) {
    andrea_write_str(w, "[");
    for (int i = 0; i < T; i++) {
        andrea_write_str(w, i ? ",\n  [" : "[");
        for (int j = 0; j < T; j++) {
            if (j) andrea_write_str(w, ",");
            json_float(w, M[(size_t)i * T + j]);
        }
        andrea_write_str(w, "]");
    }
    andrea_write_str(w, "]");
}

static void json_head(andrea_writer *w, const andrea_attn_maps *mp, int l, int h, unsigned views,
                      int first) {
    int T = mp->T;
    const float *A = andrea_attn_map(mp, ANDREA_VIEW_SOFTMAX, l, h);
    andrea_attn_stats st;
    andrea_attn_check ck;
    andrea_attention_stats(A, T, &st);
    andrea_attention_check(A, T, &ck);
    andrea_writef(w, "%s\n{\"layer\":%d,\"head\":%d,\"entropy\":%.9g,\"entropy_uniform\":%.9g,"
                     "\"mean_distance\":%.9g,\"first_token_weight\":%.9g,"
                     "\"max_row_error\":%.9g,\"upper_nonzero\":%lld,"
                     "\"previous_token_weight\":%.9g,\"self_weight\":%.9g,\"kind\":\"%s\"",
                  first ? "" : ",", l, h, st.entropy, st.entropy_uniform, st.mean_distance,
                  st.first_weight, ck.max_row_error, (long long)ck.upper_nonzero, st.prev_weight,
                  st.self_weight, andrea_head_kind_name(andrea_attention_head_kind(&st, T)));
    for (int v = 0; v < ANDREA_VIEW_COUNT; v++) {
        if (!(views & ANDREA_VIEW_BIT(v))) continue;
        andrea_writef(w, ",\n \"%s\":", andrea_attn_view_name(v));
        json_matrix(w, andrea_attn_map(mp, v, l, h), T);
    }
    /* q, k, v of the head, (T, HS) each, as the forward stored them: the cell view's
     * inputs (q . k is the raw score, A's rows weigh the rows of v) */
    andrea_write_str(w, ",\n \"qkv\":[");
    for (int part = 0; part < 3; part++) {
        andrea_write_str(w, part ? ",\n  [" : "[");
        for (int i = 0; i < T; i++) {
            const float *row = mp->qkv + ((size_t)l * T + i) * 3 * mp->d_model +
                               (size_t)part * mp->d_model + (size_t)h * mp->head_size;
            andrea_write_str(w, i ? ",[" : "[");
            for (int d = 0; d < mp->head_size; d++) {
                if (d) andrea_write_str(w, ",");
                json_float(w, row[d]);
            }
            andrea_write_str(w, "]");
        }
        andrea_write_str(w, "]");
    }
    andrea_write_str(w, "]}");
}

int andrea_attention_render_json(andrea_writer *w, const andrea_attn_export *x, unsigned views) {
    if (andrea_attn_export_validate(x, views, "attention JSON")) return -1;
    const andrea_attn_maps *mp = x->maps;
    const andrea_attn_tokens *tk = x->tokens;
    int T = mp->T;
    andrea_write_str(w, "{\"format\":\"andrea-attention\",\"version\":1,\n\"model\":");
    json_str(w, x->model);
    andrea_writef(w, ",\n\"config\":{\"n_layer\":%d,\"n_head\":%d,\"d_model\":%d,\"head_size\":%d},\n",
                  mp->n_layer, mp->n_head, mp->d_model, mp->head_size);
    andrea_write_str(w, "\"scale\":");
    json_float(w, mp->scale);
    andrea_write_str(w, ",\n\"prompt\":");
    json_str(w, x->prompt);
    andrea_writef(w, ",\n\"T\":%d,\n\"tokens\":[", T);
    for (int i = 0; i < T; i++) andrea_writef(w, "%s%d", i ? "," : "", (int)tk->ids[i]);
    andrea_write_str(w, "],\n\"labels\":[");
    for (int i = 0; i < T; i++) {
        if (i) andrea_write_str(w, ",");
        json_str(w, tk->labels[i]);
    }
    andrea_writef(w, "],\n\"checks\":{\"prob_mismatches\":%lld,\"out_mismatches\":%lld,"
                     "\"raw_mismatches\":%lld,\"scores_exact\":%s},\n\"views\":[",
                  (long long)mp->prob_mismatches, (long long)mp->out_mismatches,
                  (long long)mp->raw_mismatches, mp->scores_exact ? "true" : "false");
    int first = 1;
    for (int v = 0; v < ANDREA_VIEW_COUNT; v++)
        if (views & ANDREA_VIEW_BIT(v)) {
            andrea_writef(w, "%s\"%s\"", first ? "" : ",", andrea_attn_view_name(v));
            first = 0;
        }
    andrea_write_str(w, "],\n\"heads\":[");
    for (int li = 0; li < export_n_layers(x); li++)
        for (int hi = 0; hi < export_n_heads(x); hi++)
            json_head(w, mp, export_layer(x, li), export_head(x, hi), views, li == 0 && hi == 0);
    andrea_write_str(w, "\n]}\n");
    return andrea_writer_status(w, "attention JSON");
}
