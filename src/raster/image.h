/* image.h - a small RGB raster for the library's PNG pictures (attention heatmaps,
 * training plots): rectangles, lines, text in the built-in 5x7 font (no font files), and
 * PNG encoding into an andrea_writer. Internal; built only with libpng (ANDREA_HAVE_PNG). */
#ifndef ANDREA_RASTER_IMAGE_H
#define ANDREA_RASTER_IMAGE_H

#include <stdint.h>

#include "andrea_writer.h"

enum { ANDREA_GLYPH_W = 6, ANDREA_GLYPH_H = 9 }; /* advance: 5x7 glyph + spacing */

typedef struct {
    int w, h;
    uint8_t *px; /* (h, w, 3) RGB */
} andrea_image;

typedef struct {
    uint8_t r, g, b;
} andrea_rgb;

#define ANDREA_BLACK ((andrea_rgb){0, 0, 0})

/* White w x h; 0 or -1 (out of memory). */
int andrea_img_init(andrea_image *im, int w, int h);
void andrea_img_free(andrea_image *im);
void andrea_img_rect(andrea_image *im, int x, int y, int w, int h, andrea_rgb c); /* clipped */
/* A line of the given width (pixels) from (x0, y0) to (x1, y1), clipped. */
void andrea_img_line(andrea_image *im, double x0, double y0, double x1, double y1, int width,
                     andrea_rgb c);
/* Code points of a label (a stray byte counts as one): the glyphs andrea_img_text draws. */
int andrea_img_text_width(const char *s);
int andrea_img_label_chars(const char *s, int cap); /* min(width, cap) */
/* Horizontal text at (x, y), at most max_chars glyphs ('?' for what the font lacks). */
int andrea_img_text(andrea_image *im, int x, int y, const char *s, int max_chars, andrea_rgb c);
/* Vertical text, one glyph under the other, top at y, centred in a column of width cw. */
void andrea_img_text_down(andrea_image *im, int x, int y, int cw, const char *s, int max_chars,
                          andrea_rgb c);
/* 8-bit RGB PNG into w; errors name `what`. 0 or -1. */
int andrea_img_encode(const andrea_image *im, andrea_writer *w, const char *what);

#endif
