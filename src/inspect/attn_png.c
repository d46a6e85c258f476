/*
 * attn_png.c - attention heatmaps as PNG images, encoded by libpng straight into
 * the caller's writer (png_set_write_fn: a file, a memory buffer, a socket), with
 * axis labels drawn in a built-in 5x7 bitmap font so no font files are needed.
 *
 * Colours: probabilities (softmax) use a fixed 0..1 scale on a viridis-like ramp,
 * so heads are comparable; scores (raw, scaled, masked) use a blue-white-red
 * ramp symmetric around 0, scaled to the largest |score| of that head. Cells the
 * causal mask removes (j > i in the masked and softmax views) are light grey.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect/export.h"
#include "util/error.h"

#ifdef ANDREA_HAVE_PNG
#include <png.h>

#include "raster/image.h"

static const andrea_rgb MASKED = {214, 214, 214};

/* ---- colour maps ------------------------------------------------------------------- */

static andrea_rgb lerp_ramp(const uint8_t (*stops)[3], int n, double v) {
    if (!(v >= 0)) v = 0; /* NaN lands at the bottom */
    if (v > 1) v = 1;
    double x = v * (n - 1);
    int i = (int)x;
    if (i >= n - 1) i = n - 2;
    double t = x - i;
    andrea_rgb c;
    c.r = (uint8_t)lround(stops[i][0] + t * (stops[i + 1][0] - stops[i][0]));
    c.g = (uint8_t)lround(stops[i][1] + t * (stops[i + 1][1] - stops[i][1]));
    c.b = (uint8_t)lround(stops[i][2] + t * (stops[i + 1][2] - stops[i][2]));
    return c;
}

static andrea_rgb color_prob(double p) { /* viridis, 9 stops */
    static const uint8_t s[9][3] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                                    {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                                    {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
    return lerp_ramp(s, 9, p);
}

static andrea_rgb color_score(double x, double maxabs) { /* -maxabs blue, 0 white, +maxabs red */
    static const uint8_t s[5][3] = {
        {33, 102, 172}, {146, 197, 222}, {247, 247, 247}, {244, 165, 130}, {178, 24, 43}};
    return lerp_ramp(s, 5, maxabs > 0 ? 0.5 + 0.5 * x / maxabs : 0.5);
}

static double head_maxabs(const float *M, int T) {
    double m = 0;
    for (size_t k = 0; k < (size_t)T * T; k++)
        if (isfinite(M[k]) && fabs(M[k]) > m) m = fabs(M[k]);
    return m;
}

static andrea_rgb cell_color(int view, float x, int i, int j, double maxabs) {
    if (j > i && (view == ANDREA_VIEW_SOFTMAX || view == ANDREA_VIEW_MASKED)) return MASKED;
    if (view == ANDREA_VIEW_SOFTMAX) return color_prob(x);
    return color_score(x, maxabs);
}

/* The colour scale of a head's score views: the largest |raw score| of the head when the
 * maps have the raw view, so raw, scaled and masked share one scale and the scaled map
 * looks sqrt(d_k) times paler (the lesson's point); else the view's own largest. */
static double score_scale(const andrea_attn_export *x, int l, int h, int view) {
    if (view == ANDREA_VIEW_SOFTMAX) return 1.0;
    const float *raw = andrea_attn_map(x->maps, ANDREA_VIEW_RAW, l, h);
    return head_maxabs(raw ? raw : andrea_attn_map(x->maps, view, l, h), x->maps->T);
}

static void draw_heatmap(andrea_image *im, int x0, int y0, int cs, const float *M, int T, int view,
                         double maxabs) {
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++)
            andrea_img_rect(im, x0 + j * cs, y0 + i * cs, cs, cs,
                     cell_color(view, M[(size_t)i * T + j], i, j, maxabs));
}

/* Colour bar of width w at (x, y), the end labels lo and hi written under it. */
static void draw_colorbar(andrea_image *im, int x, int y, int w, int view, const char *lo, const char *hi) {
    for (int k = 0; k < w; k++) {
        double t = w > 1 ? (double)k / (w - 1) : 0;
        andrea_rgb c = view == ANDREA_VIEW_SOFTMAX ? color_prob(t) : color_score(2 * t - 1, 1.0);
        andrea_img_rect(im, x + k, y, 1, 8, c);
    }
    andrea_img_text(im, x, y + 10, lo, 16, ANDREA_BLACK);
    int hw = andrea_img_text_width(hi) * ANDREA_GLYPH_W;
    andrea_img_text(im, x + w - hw, y + 10, hi, 16, ANDREA_BLACK);
}

/* ---- the two kinds of picture ---------------------------------------------------------- */

enum { MARGIN = 6, LABEL_CAP = 8 };

static int png_head(andrea_writer *w, const andrea_attn_export *x, int l, int h, int view) {
    int T = x->maps->T;
    const float *M = andrea_attn_map(x->maps, view, l, h);
    int cs = 512 / T;
    if (cs > 24) cs = 24;
    if (cs < 1) cs = 1;
    int labels = cs >= 8;
    int maxc = 0;
    for (int i = 0; labels && i < T; i++) {
        int c = andrea_img_label_chars(x->tokens->labels[i], LABEL_CAP);
        if (c > maxc) maxc = c;
    }
    int lw = labels ? maxc * ANDREA_GLYPH_W + 4 : 0, lh = labels ? maxc * ANDREA_GLYPH_H + 2 : 0;
    int title_h = ANDREA_GLYPH_H + 4;
    int x0 = MARGIN + lw, y0 = MARGIN + title_h + lh, side = T * cs;
    int W = x0 + side + MARGIN, H = y0 + side + 4 + 8 + 2 + ANDREA_GLYPH_H + ANDREA_GLYPH_H + MARGIN;
    int tw = 40 * ANDREA_GLYPH_W + 2 * MARGIN;
    if (W < tw) W = tw;
    andrea_image im;
    if (andrea_img_init(&im, W, H))
        return andrea_set_error("attention PNG: out of memory for a %dx%d image", W, H);
    char title[96], vkey[32];
    snprintf(vkey, sizeof vkey, "view.%s", andrea_attn_view_name(view));
    snprintf(title, sizeof title, andrea_lang_text(x->lang, "png.title"), l, h,
             andrea_lang_text(x->lang, vkey), T);
    andrea_img_text(&im, MARGIN, MARGIN, title, (W - 2 * MARGIN) / ANDREA_GLYPH_W, ANDREA_BLACK);
    if (labels) {
        for (int i = 0; i < T; i++) {
            const char *s = x->tokens->labels[i];
            int c = andrea_img_label_chars(s, LABEL_CAP);
            andrea_img_text(&im, x0 - 4 - c * ANDREA_GLYPH_W, y0 + i * cs + (cs - 7) / 2, s, LABEL_CAP, ANDREA_BLACK);
            andrea_img_text_down(&im, x0 + i * cs, y0 - lh, cs, s, LABEL_CAP, ANDREA_BLACK);
        }
    }
    double maxabs = score_scale(x, l, h, view);
    draw_heatmap(&im, x0, y0, cs, M, T, view, maxabs);
    char lo[32] = "0", hi[32] = "1";
    if (view != ANDREA_VIEW_SOFTMAX) {
        snprintf(lo, sizeof lo, "%.3g", -maxabs);
        snprintf(hi, sizeof hi, "+%.3g max|raw|", maxabs);
    }
    draw_colorbar(&im, x0, y0 + side + 4, side, view, lo, hi);
    andrea_img_text(&im, MARGIN, H - MARGIN - 7, andrea_lang_text(x->lang, "png.axes"),
                    (W - 2 * MARGIN) / ANDREA_GLYPH_W, ANDREA_BLACK);
    int rc = andrea_img_encode(&im, w, "attention PNG");
    andrea_img_free(&im);
    return rc;
}

static int png_grid(andrea_writer *w, const andrea_attn_export *x, int view) {
    int T = x->maps->T, n_layers = export_n_layers(x), n_heads = export_n_heads(x);
    int cs = 128 / T;
    if (cs > 8) cs = 8;
    if (cs < 1) cs = 1;
    int side = T * cs, gap = 8, lab_w = 4 * ANDREA_GLYPH_W, title_h = ANDREA_GLYPH_H + 4, head_h = ANDREA_GLYPH_H + 2;
    int W = MARGIN + lab_w + n_heads * (side + gap) - gap + MARGIN;
    int H = MARGIN + title_h + head_h + n_layers * (side + gap) - gap + 4 + 8 + 2 + ANDREA_GLYPH_H +
            ANDREA_GLYPH_H + MARGIN;
    char title[96], vkey[32];
    snprintf(vkey, sizeof vkey, "view.%s", andrea_attn_view_name(view));
    snprintf(title, sizeof title, andrea_lang_text(x->lang, "png.grid_title"),
             andrea_lang_text(x->lang, vkey), T);
    int tw = (int)strlen(title) * ANDREA_GLYPH_W + 2 * MARGIN;
    if (W < tw) W = tw;
    if (W < 44 * ANDREA_GLYPH_W) W = 44 * ANDREA_GLYPH_W;
    andrea_image im;
    if (andrea_img_init(&im, W, H))
        return andrea_set_error("attention PNG: out of memory for a %dx%d image", W, H);
    andrea_img_text(&im, MARGIN, MARGIN, title, (W - 2 * MARGIN) / ANDREA_GLYPH_W, ANDREA_BLACK);
    int gx = MARGIN + lab_w, gy = MARGIN + title_h + head_h;
    char buf[16];
    for (int hi = 0; hi < n_heads; hi++) {
        snprintf(buf, sizeof buf, "H%d", export_head(x, hi));
        andrea_img_text(&im, gx + hi * (side + gap) + (side - (int)strlen(buf) * ANDREA_GLYPH_W) / 2,
                 gy - head_h, buf, 8, ANDREA_BLACK);
    }
    for (int li = 0; li < n_layers; li++) {
        snprintf(buf, sizeof buf, "L%d", export_layer(x, li));
        andrea_img_text(&im, MARGIN, gy + li * (side + gap) + (side - 7) / 2, buf, 4, ANDREA_BLACK);
        for (int hi = 0; hi < n_heads; hi++) {
            int l = export_layer(x, li), h = export_head(x, hi);
            draw_heatmap(&im, gx + hi * (side + gap), gy + li * (side + gap), cs,
                         andrea_attn_map(x->maps, view, l, h), T, view, score_scale(x, l, h, view));
        }
    }
    int by = gy + n_layers * (side + gap) - gap + 4;
    int bw = side * (n_heads < 2 ? 1 : 2);
    if (view == ANDREA_VIEW_SOFTMAX) {
        draw_colorbar(&im, gx, by, bw, view, "0", "1");
        andrea_img_text(&im, MARGIN, H - MARGIN - 7, andrea_lang_text(x->lang, "png.grid_masked"),
                 (W - 2 * MARGIN) / ANDREA_GLYPH_W,
                 ANDREA_BLACK);
    } else {
        draw_colorbar(&im, gx, by, bw, view, "-max", "+max");
        andrea_img_text(&im, MARGIN, H - MARGIN - 7, andrea_lang_text(x->lang, "png.grid_scores"),
                 (W - 2 * MARGIN) / ANDREA_GLYPH_W,
                 ANDREA_BLACK);
    }
    int rc = andrea_img_encode(&im, w, "attention PNG");
    andrea_img_free(&im);
    return rc;
}

static int check_view(int view) {
    if (view < 0 || view >= ANDREA_VIEW_COUNT)
        return andrea_set_error("attention PNG: no view %d (0..%d)", view, ANDREA_VIEW_COUNT - 1);
    return 0;
}

int andrea_attention_render_png(andrea_writer *w, const andrea_attn_export *x, int layer,
                                int head, int view) {
    if (check_view(view) || andrea_attn_export_validate(x, ANDREA_VIEW_BIT(view), "attention PNG"))
        return -1;
    if (layer < 0 || layer >= x->maps->n_layer || head < 0 || head >= x->maps->n_head)
        return andrea_set_error("attention PNG: layer %d head %d is not in the model (%d x %d)",
                                layer, head, x->maps->n_layer, x->maps->n_head);
    return png_head(w, x, layer, head, view);
}

int andrea_attention_render_png_grid(andrea_writer *w, const andrea_attn_export *x, int view) {
    if (check_view(view) || andrea_attn_export_validate(x, ANDREA_VIEW_BIT(view), "attention PNG"))
        return -1;
    return png_grid(w, x, view);
}

#else /* no libpng */

#define NO_PNG "attention PNG: built without libpng (apt install libpng-dev and re-run cmake)"

int andrea_attention_render_png(andrea_writer *w, const andrea_attn_export *x, int layer,
                                int head, int view) {
    (void)w, (void)x, (void)layer, (void)head, (void)view;
    return andrea_set_error(NO_PNG);
}

int andrea_attention_render_png_grid(andrea_writer *w, const andrea_attn_export *x, int view) {
    (void)w, (void)x, (void)view;
    return andrea_set_error(NO_PNG);
}

#endif
