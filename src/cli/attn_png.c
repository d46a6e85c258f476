/*
 * attn_png.c - attention heatmaps as PNG files (libpng's simplified API), with
 * axis labels drawn in a built-in 5x7 bitmap font so no font files are needed.
 *
 * Colours: probabilities (softmax) use a fixed 0..1 scale on a viridis-like ramp,
 * so heads are comparable; scores (raw, scaled, masked) use a blue-white-red
 * ramp symmetric around 0, scaled to the largest |score| of that head. Cells the
 * causal mask removes (j > i in the masked and softmax views) are light grey.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attn_util.h"

#ifdef ANDREA_HAVE_PNG
#include <png.h>

/* ASCII 32..126, then 127 = the open box used for a space inside a label.
 * Row r of a glyph is one byte; bit 4 is the leftmost of the 5 columns. */
static const uint8_t FONT5X7[96][7] = {
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, /* space */
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04}, /* ! */
    {0x0a, 0x0a, 0x0a, 0x00, 0x00, 0x00, 0x00}, /* " */
    {0x0a, 0x0a, 0x1f, 0x0a, 0x1f, 0x0a, 0x0a}, /* # */
    {0x04, 0x0f, 0x14, 0x0e, 0x05, 0x1e, 0x04}, /* $ */
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}, /* % */
    {0x0c, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0d}, /* & */
    {0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00}, /* quote */
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}, /* ( */
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}, /* ) */
    {0x00, 0x04, 0x15, 0x0e, 0x15, 0x04, 0x00}, /* * */
    {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00}, /* + */
    {0x00, 0x00, 0x00, 0x00, 0x04, 0x04, 0x08}, /* , */
    {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00}, /* - */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c}, /* . */
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}, /* / */
    {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e}, /* 0 */
    {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e}, /* 1 */
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}, /* 2 */
    {0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e}, /* 3 */
    {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02}, /* 4 */
    {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e}, /* 5 */
    {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e}, /* 6 */
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}, /* 7 */
    {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e}, /* 8 */
    {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c}, /* 9 */
    {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00}, /* : */
    {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x04, 0x08}, /* ; */
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02}, /* < */
    {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00}, /* = */
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08}, /* > */
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, /* ? */
    {0x0e, 0x11, 0x01, 0x0d, 0x15, 0x15, 0x0e}, /* @ */
    {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}, /* A */
    {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e}, /* B */
    {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e}, /* C */
    {0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c}, /* D */
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f}, /* E */
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10}, /* F */
    {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f}, /* G */
    {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}, /* H */
    {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}, /* I */
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}, /* J */
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}, /* K */
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f}, /* L */
    {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11}, /* M */
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}, /* N */
    {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}, /* O */
    {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10}, /* P */
    {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d}, /* Q */
    {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11}, /* R */
    {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e}, /* S */
    {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, /* T */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}, /* U */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}, /* V */
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a}, /* W */
    {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11}, /* X */
    {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04}, /* Y */
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f}, /* Z */
    {0x0e, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0e}, /* [ */
    {0x00, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00}, /* backslash */
    {0x0e, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0e}, /* ] */
    {0x04, 0x0a, 0x11, 0x00, 0x00, 0x00, 0x00}, /* ^ */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f}, /* _ */
    {0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00}, /* ` */
    {0x00, 0x00, 0x0e, 0x01, 0x0f, 0x11, 0x0f}, /* a */
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1e}, /* b */
    {0x00, 0x00, 0x0e, 0x10, 0x10, 0x11, 0x0e}, /* c */
    {0x01, 0x01, 0x0d, 0x13, 0x11, 0x11, 0x0f}, /* d */
    {0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e}, /* e */
    {0x06, 0x09, 0x08, 0x1c, 0x08, 0x08, 0x08}, /* f */
    {0x00, 0x00, 0x0f, 0x11, 0x0f, 0x01, 0x0e}, /* g */
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}, /* h */
    {0x04, 0x00, 0x0c, 0x04, 0x04, 0x04, 0x0e}, /* i */
    {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0c}, /* j */
    {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}, /* k */
    {0x0c, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}, /* l */
    {0x00, 0x00, 0x1a, 0x15, 0x15, 0x11, 0x11}, /* m */
    {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}, /* n */
    {0x00, 0x00, 0x0e, 0x11, 0x11, 0x11, 0x0e}, /* o */
    {0x00, 0x00, 0x1e, 0x11, 0x1e, 0x10, 0x10}, /* p */
    {0x00, 0x00, 0x0d, 0x13, 0x0f, 0x01, 0x01}, /* q */
    {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}, /* r */
    {0x00, 0x00, 0x0e, 0x10, 0x0e, 0x01, 0x1e}, /* s */
    {0x08, 0x08, 0x1c, 0x08, 0x08, 0x09, 0x06}, /* t */
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0d}, /* u */
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0a, 0x04}, /* v */
    {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0a}, /* w */
    {0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11}, /* x */
    {0x00, 0x00, 0x11, 0x11, 0x0f, 0x01, 0x0e}, /* y */
    {0x00, 0x00, 0x1f, 0x02, 0x04, 0x08, 0x1f}, /* z */
    {0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02}, /* { */
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, /* | */
    {0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08}, /* } */
    {0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00}, /* ~ */
    {0x00, 0x00, 0x00, 0x00, 0x11, 0x11, 0x1f}, /* open box */
};

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

/* Next code point of a UTF-8 label mapped to a glyph index (0..95); advances *s. */
static int next_glyph(const char **s) {
    const unsigned char *u = (const unsigned char *)*s;
    if (u[0] < 0x80) {
        (*s)++;
        return u[0] >= 32 && u[0] < 127 ? u[0] - 32 : '?' - 32;
    }
    int len = (u[0] & 0xE0) == 0xC0 ? 2 : (u[0] & 0xF0) == 0xE0 ? 3 : (u[0] & 0xF8) == 0xF0 ? 4 : 1;
    int open_box = len == 3 && u[1] == 0x90 && u[2] == 0xa3 && u[0] == 0xe2; /* U+2423 */
    for (int i = 0; i < len && **s; i++) (*s)++;
    return open_box ? 127 - 32 : '?' - 32;
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
    int w = attn_utf8_width(s);
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

static void draw_heatmap(image *im, int x0, int y0, int cs, const float *M, int T, int view) {
    double maxabs = view == ANDREA_VIEW_SOFTMAX ? 1.0 : head_maxabs(M, T);
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
    int hw = attn_utf8_width(hi) * GLYPH_W;
    img_text(im, x + w - hw, y + 10, hi, 16, BLACK);
}

static int img_save(const image *im, const char *path) {
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    pi.width = (png_uint_32)im->w;
    pi.height = (png_uint_32)im->h;
    pi.format = PNG_FORMAT_RGB;
    if (!png_image_write_to_file(&pi, path, 0, im->px, im->w * 3, NULL)) {
        fprintf(stderr, "andrea attention: cannot write PNG '%s': %s\n", path, pi.message);
        png_image_free(&pi);
        return -1;
    }
    return 0;
}

/* ---- the two kinds of picture ---------------------------------------------------------- */

enum { MARGIN = 6, LABEL_CAP = 8 };

static int png_head(const char *path, const attn_export *x, int l, int h, int view) {
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
    if (img_init(&im, W, H)) {
        fprintf(stderr, "andrea attention: out of memory for a %dx%d image\n", W, H);
        return -1;
    }
    char title[96];
    snprintf(title, sizeof title, "layer %d head %d  %s  T=%d", l, h, andrea_attn_view_name(view), T);
    img_text(&im, MARGIN, MARGIN, title, 40, BLACK);
    if (labels) {
        for (int i = 0; i < T; i++) {
            const char *s = x->tokens->labels[i];
            int c = label_chars(s, LABEL_CAP);
            img_text(&im, x0 - 4 - c * GLYPH_W, y0 + i * cs + (cs - 7) / 2, s, LABEL_CAP, BLACK);
            img_text_down(&im, x0 + i * cs, y0 - lh, cs, s, LABEL_CAP, BLACK);
        }
    }
    draw_heatmap(&im, x0, y0, cs, M, T, view);
    char lo[32] = "0", hi[32] = "1";
    if (view != ANDREA_VIEW_SOFTMAX) {
        double maxabs = head_maxabs(M, T);
        snprintf(lo, sizeof lo, "%.3g", -maxabs);
        snprintf(hi, sizeof hi, "+%.3g", maxabs);
    }
    draw_colorbar(&im, x0, y0 + side + 4, side, view, lo, hi);
    img_text(&im, MARGIN, H - MARGIN - 7, "rows: query i  columns: key j", 40, BLACK);
    int rc = img_save(&im, path);
    free(im.px);
    return rc;
}

static int png_grid(const char *path, const attn_export *x, int view) {
    int T = x->maps->T;
    int cs = 128 / T;
    if (cs > 8) cs = 8;
    if (cs < 1) cs = 1;
    int side = T * cs, gap = 8, lab_w = 4 * GLYPH_W, title_h = GLYPH_H + 4, head_h = GLYPH_H + 2;
    int W = MARGIN + lab_w + x->n_heads * (side + gap) - gap + MARGIN;
    int H = MARGIN + title_h + head_h + x->n_layers * (side + gap) - gap + 4 + 8 + 2 + GLYPH_H +
            GLYPH_H + MARGIN;
    char title[96];
    snprintf(title, sizeof title, "%s  T=%d  (layers x heads)", andrea_attn_view_name(view), T);
    int tw = (int)strlen(title) * GLYPH_W + 2 * MARGIN;
    if (W < tw) W = tw;
    if (W < 44 * GLYPH_W) W = 44 * GLYPH_W;
    image im;
    if (img_init(&im, W, H)) {
        fprintf(stderr, "andrea attention: out of memory for a %dx%d image\n", W, H);
        return -1;
    }
    img_text(&im, MARGIN, MARGIN, title, 60, BLACK);
    int gx = MARGIN + lab_w, gy = MARGIN + title_h + head_h;
    char buf[16];
    for (int hi = 0; hi < x->n_heads; hi++) {
        snprintf(buf, sizeof buf, "H%d", x->heads[hi]);
        img_text(&im, gx + hi * (side + gap) + (side - (int)strlen(buf) * GLYPH_W) / 2,
                 gy - head_h, buf, 8, BLACK);
    }
    for (int li = 0; li < x->n_layers; li++) {
        snprintf(buf, sizeof buf, "L%d", x->layers[li]);
        img_text(&im, MARGIN, gy + li * (side + gap) + (side - 7) / 2, buf, 4, BLACK);
        for (int hi = 0; hi < x->n_heads; hi++)
            draw_heatmap(&im, gx + hi * (side + gap), gy + li * (side + gap), cs,
                         andrea_attn_map(x->maps, view, x->layers[li], x->heads[hi]), T, view);
    }
    int by = gy + x->n_layers * (side + gap) - gap + 4;
    int bw = side * (x->n_heads < 2 ? 1 : 2);
    if (view == ANDREA_VIEW_SOFTMAX) {
        draw_colorbar(&im, gx, by, bw, view, "0", "1");
        img_text(&im, MARGIN, H - MARGIN - 7, "grey: masked (j > i)", 44, BLACK);
    } else {
        draw_colorbar(&im, gx, by, bw, view, "-max", "+max");
        img_text(&im, MARGIN, H - MARGIN - 7, "each panel scaled to its max |score|", 44, BLACK);
    }
    int rc = img_save(&im, path);
    free(im.px);
    return rc;
}

int attn_write_pngs(const char *dir, const attn_export *x, unsigned views) {
    if (mkdir(dir, 0777) != 0) {
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "andrea attention: cannot create the PNG folder '%s'\n", dir);
            return -1;
        }
    }
    size_t n = strlen(dir) + 64;
    char *path = malloc(n);
    if (!path) return -1;
    int count = 0, rc = 0;
    for (int v = 0; v < ANDREA_VIEW_COUNT && !rc; v++) {
        if (!(views & ANDREA_VIEW_BIT(v))) continue;
        for (int li = 0; li < x->n_layers && !rc; li++)
            for (int hi = 0; hi < x->n_heads && !rc; hi++) {
                snprintf(path, n, "%s/L%d_H%d_%s.png", dir, x->layers[li], x->heads[hi],
                         andrea_attn_view_name(v));
                rc = png_head(path, x, x->layers[li], x->heads[hi], v);
                count++;
            }
        if (rc) break;
        snprintf(path, n, "%s/grid_%s.png", dir, andrea_attn_view_name(v));
        rc = png_grid(path, x, v);
        count++;
    }
    if (!rc) fprintf(stderr, "attention: wrote %d PNG files to '%s' (L<l>_H<h>_<view>.png, grid_<view>.png)\n", count, dir);
    free(path);
    return rc;
}

#else /* no libpng */

int attn_write_pngs(const char *dir, const attn_export *x, unsigned views) {
    (void)x;
    (void)views;
    fprintf(stderr, "andrea attention: --png '%s': this build has no PNG support (libpng was not "
                    "found; apt install libpng-dev and re-run cmake)\n", dir);
    return -1;
}

#endif
