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

#include "util/utf8.h"

#include "inspect/font5x7.h"

enum { GLYPH_W = 6, GLYPH_H = 9 }; /* advance: 5x7 glyph + spacing */

typedef struct {
    int w, h;
    uint8_t *px; /* (h, w, 3) RGB */
} image;

typedef struct {
    uint8_t r, g, b;
} rgb;

static const rgb BLACK = {0, 0, 0}, MASKED = {214, 214, 214};

static int img_init(image *im, int w, int h) {
    im->w = w;
    im->h = h;
    im->px = malloc((size_t)w * h * 3);
    if (!im->px) return -1;
    memset(im->px, 255, (size_t)w * h * 3);
    return 0;
}

static void img_rect(image *im, int x, int y, int w, int h, rgb c) {
    for (int yy = y < 0 ? 0 : y; yy < y + h && yy < im->h; yy++)
        for (int xx = x < 0 ? 0 : x; xx < x + w && xx < im->w; xx++) {
            uint8_t *p = im->px + ((size_t)yy * im->w + xx) * 3;
            p[0] = c.r;
            p[1] = c.g;
            p[2] = c.b;
        }
}

/* Next code point of a UTF-8 label mapped to a glyph index (0..95); advances *s
 * (by one byte over a byte that starts no valid sequence). */
static int next_glyph(const char **s) {
    uint32_t cp;
    int len = andrea_utf8_decode((const uint8_t *)*s, strnlen(*s, 4), &cp);
    *s += len ? len : 1;
    if (len && cp >= 32 && cp < 127) return (int)cp - 32;
    return len && cp == 0x2423 ? 127 - 32 : '?' - 32; /* U+2423: the open box of a space */
}

/* Code points of a label, a stray byte counting as one: the glyphs img_text draws. */
static int utf8_width(const char *s) {
    int w = 0;
    while (*s) {
        next_glyph(&s);
        w++;
    }
    return w;
}

static void img_glyph(image *im, int x, int y, int g, rgb c) {
    for (int r = 0; r < 7; r++)
        for (int k = 0; k < 5; k++)
            if (FONT5X7[g][r] >> (4 - k) & 1) img_rect(im, x + k, y + r, 1, 1, c);
}

/* Horizontal text at (x, y), at most max_chars glyphs. Returns the width drawn. */
static int img_text(image *im, int x, int y, const char *s, int max_chars, rgb c) {
    int n = 0;
    while (*s && n < max_chars) img_glyph(im, x + GLYPH_W * n++, y, next_glyph(&s), c);
    return n * GLYPH_W;
}

/* Vertical text, one glyph under the other, top at y, centred in a column of width cw. */
static void img_text_down(image *im, int x, int y, int cw, const char *s, int max_chars, rgb c) {
    int n = 0;
    while (*s && n < max_chars) img_glyph(im, x + (cw - 5) / 2, y + GLYPH_H * n++, next_glyph(&s), c);
}

static int label_chars(const char *s, int cap) {
    int w = utf8_width(s);
    return w < cap ? w : cap;
}

/* ---- colour maps ------------------------------------------------------------------- */

static rgb lerp_ramp(const uint8_t (*stops)[3], int n, double v) {
    if (!(v >= 0)) v = 0; /* NaN lands at the bottom */
    if (v > 1) v = 1;
    double x = v * (n - 1);
    int i = (int)x;
    if (i >= n - 1) i = n - 2;
    double t = x - i;
    rgb c;
    c.r = (uint8_t)lround(stops[i][0] + t * (stops[i + 1][0] - stops[i][0]));
    c.g = (uint8_t)lround(stops[i][1] + t * (stops[i + 1][1] - stops[i][1]));
    c.b = (uint8_t)lround(stops[i][2] + t * (stops[i + 1][2] - stops[i][2]));
    return c;
}

static rgb color_prob(double p) { /* viridis, 9 stops */
    static const uint8_t s[9][3] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                                    {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                                    {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
    return lerp_ramp(s, 9, p);
}

static rgb color_score(double x, double maxabs) { /* -maxabs blue, 0 white, +maxabs red */
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

static rgb cell_color(int view, float x, int i, int j, double maxabs) {
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

static void draw_heatmap(image *im, int x0, int y0, int cs, const float *M, int T, int view,
                         double maxabs) {
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++)
            img_rect(im, x0 + j * cs, y0 + i * cs, cs, cs,
                     cell_color(view, M[(size_t)i * T + j], i, j, maxabs));
}

/* Colour bar of width w at (x, y), the end labels lo and hi written under it. */
static void draw_colorbar(image *im, int x, int y, int w, int view, const char *lo, const char *hi) {
    for (int k = 0; k < w; k++) {
        double t = w > 1 ? (double)k / (w - 1) : 0;
        rgb c = view == ANDREA_VIEW_SOFTMAX ? color_prob(t) : color_score(2 * t - 1, 1.0);
        img_rect(im, x + k, y, 1, 8, c);
    }
    img_text(im, x, y + 10, lo, 16, BLACK);
    int hw = utf8_width(hi) * GLYPH_W;
    img_text(im, x + w - hw, y + 10, hi, 16, BLACK);
}

/* ---- encoding into the writer -------------------------------------------------------- */

static void png_sink(png_structp png, png_bytep data, size_t n) {
    if (andrea_write(png_get_io_ptr(png), data, n)) png_error(png, "the writer failed");
}

static void png_flush_none(png_structp png) { (void)png; } /* the writer has no flush */

static void png_on_error(png_structp png, png_const_charp msg) {
    snprintf(png_get_error_ptr(png), 128, "%s", msg);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg) { /* the library never prints */
    (void)png;
    (void)msg;
}

/* 8-bit RGB, no interlace, an sRGB chunk and libpng's default filters and compression:
 * the bytes png_image_write_to_file gave for the same pixels. */
static int img_encode(const image *im, andrea_writer *w) {
    char msg[128] = "";
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, msg, png_on_error,
                                              png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return andrea_set_error("attention PNG: out of memory for the encoder");
    }
    if (setjmp(png_jmpbuf(png))) { /* libpng's errors (and the writer's) land here */
        png_destroy_write_struct(&png, &info);
        if (w->err) return andrea_writer_status(w, "attention PNG");
        return andrea_set_error("attention PNG: libpng: %s", msg);
    }
    png_set_write_fn(png, w, png_sink, png_flush_none);
    png_set_IHDR(png, info, (png_uint_32)im->w, (png_uint_32)im->h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
    png_set_sRGB(png, info, PNG_sRGB_INTENT_PERCEPTUAL);
    png_write_info(png, info);
    for (int y = 0; y < im->h; y++) png_write_row(png, im->px + (size_t)y * im->w * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return andrea_writer_status(w, "attention PNG");
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
        int c = label_chars(x->tokens->labels[i], LABEL_CAP);
        if (c > maxc) maxc = c;
    }
    int lw = labels ? maxc * GLYPH_W + 4 : 0, lh = labels ? maxc * GLYPH_H + 2 : 0;
    int title_h = GLYPH_H + 4;
    int x0 = MARGIN + lw, y0 = MARGIN + title_h + lh, side = T * cs;
    int W = x0 + side + MARGIN, H = y0 + side + 4 + 8 + 2 + GLYPH_H + GLYPH_H + MARGIN;
    int tw = 40 * GLYPH_W + 2 * MARGIN;
    if (W < tw) W = tw;
    image im;
    if (img_init(&im, W, H))
        return andrea_set_error("attention PNG: out of memory for a %dx%d image", W, H);
    char title[96], vkey[32];
    snprintf(vkey, sizeof vkey, "view.%s", andrea_attn_view_name(view));
    snprintf(title, sizeof title, andrea_lang_text(x->lang, "png.title"), l, h,
             andrea_lang_text(x->lang, vkey), T);
    img_text(&im, MARGIN, MARGIN, title, (W - 2 * MARGIN) / GLYPH_W, BLACK);
    if (labels) {
        for (int i = 0; i < T; i++) {
            const char *s = x->tokens->labels[i];
            int c = label_chars(s, LABEL_CAP);
            img_text(&im, x0 - 4 - c * GLYPH_W, y0 + i * cs + (cs - 7) / 2, s, LABEL_CAP, BLACK);
            img_text_down(&im, x0 + i * cs, y0 - lh, cs, s, LABEL_CAP, BLACK);
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
    img_text(&im, MARGIN, H - MARGIN - 7, andrea_lang_text(x->lang, "png.axes"),
             (W - 2 * MARGIN) / GLYPH_W, BLACK);
    int rc = img_encode(&im, w);
    free(im.px);
    return rc;
}

static int png_grid(andrea_writer *w, const andrea_attn_export *x, int view) {
    int T = x->maps->T, n_layers = export_n_layers(x), n_heads = export_n_heads(x);
    int cs = 128 / T;
    if (cs > 8) cs = 8;
    if (cs < 1) cs = 1;
    int side = T * cs, gap = 8, lab_w = 4 * GLYPH_W, title_h = GLYPH_H + 4, head_h = GLYPH_H + 2;
    int W = MARGIN + lab_w + n_heads * (side + gap) - gap + MARGIN;
    int H = MARGIN + title_h + head_h + n_layers * (side + gap) - gap + 4 + 8 + 2 + GLYPH_H +
            GLYPH_H + MARGIN;
    char title[96], vkey[32];
    snprintf(vkey, sizeof vkey, "view.%s", andrea_attn_view_name(view));
    snprintf(title, sizeof title, andrea_lang_text(x->lang, "png.grid_title"),
             andrea_lang_text(x->lang, vkey), T);
    int tw = (int)strlen(title) * GLYPH_W + 2 * MARGIN;
    if (W < tw) W = tw;
    if (W < 44 * GLYPH_W) W = 44 * GLYPH_W;
    image im;
    if (img_init(&im, W, H))
        return andrea_set_error("attention PNG: out of memory for a %dx%d image", W, H);
    img_text(&im, MARGIN, MARGIN, title, (W - 2 * MARGIN) / GLYPH_W, BLACK);
    int gx = MARGIN + lab_w, gy = MARGIN + title_h + head_h;
    char buf[16];
    for (int hi = 0; hi < n_heads; hi++) {
        snprintf(buf, sizeof buf, "H%d", export_head(x, hi));
        img_text(&im, gx + hi * (side + gap) + (side - (int)strlen(buf) * GLYPH_W) / 2,
                 gy - head_h, buf, 8, BLACK);
    }
    for (int li = 0; li < n_layers; li++) {
        snprintf(buf, sizeof buf, "L%d", export_layer(x, li));
        img_text(&im, MARGIN, gy + li * (side + gap) + (side - 7) / 2, buf, 4, BLACK);
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
        img_text(&im, MARGIN, H - MARGIN - 7, andrea_lang_text(x->lang, "png.grid_masked"),
                 (W - 2 * MARGIN) / GLYPH_W,
                 BLACK);
    } else {
        draw_colorbar(&im, gx, by, bw, view, "-max", "+max");
        img_text(&im, MARGIN, H - MARGIN - 7, andrea_lang_text(x->lang, "png.grid_scores"),
                 (W - 2 * MARGIN) / GLYPH_W,
                 BLACK);
    }
    int rc = img_encode(&im, w);
    free(im.px);
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
