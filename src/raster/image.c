/*
 * image.c - the raster of the library's PNG pictures (image.h): rectangles, lines, the
 * 5x7 bitmap font, and PNG encoding by libpng straight into the caller's writer
 * (png_set_write_fn: a file, a memory buffer, a socket).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raster/image.h"
#include "util/error.h"

#ifdef ANDREA_HAVE_PNG
#include <png.h>

#include "raster/font5x7.h"
#include "util/utf8.h"
int andrea_img_init(andrea_image *im, int w, int h) {
    im->w = w;
    im->h = h;
    im->px = malloc((size_t)w * h * 3);
    if (!im->px) return -1;
    memset(im->px, 255, (size_t)w * h * 3);
    return 0;
}

void andrea_img_rect(andrea_image *im, int x, int y, int w, int h, andrea_rgb c) {
    for (int yy = y < 0 ? 0 : y; yy < y + h && yy < im->h; yy++)
        for (int xx = x < 0 ? 0 : x; xx < x + w && xx < im->w; xx++) {
            uint8_t *p = im->px + ((size_t)yy * im->w + xx) * 3;
            p[0] = c.r;
            p[1] = c.g;
            p[2] = c.b;
        }
}

void andrea_img_free(andrea_image *im) {
    free(im->px);
    im->px = NULL;
}

/* A line as overlapping squares every half pixel: plots need no anti-aliasing. */
void andrea_img_line(andrea_image *im, double x0, double y0, double x1, double y1, int width,
                     andrea_rgb c) {
    double dx = x1 - x0, dy = y1 - y0, len = sqrt(dx * dx + dy * dy);
    int n = (int)(len * 2) + 1;
    if (n > 100000) n = 100000;
    for (int k = 0; k <= n; k++) {
        double t = (double)k / n;
        int x = (int)lround(x0 + t * dx) - width / 2, y = (int)lround(y0 + t * dy) - width / 2;
        andrea_img_rect(im, x, y, width, width, c);
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
int andrea_img_text_width(const char *s) {
    int w = 0;
    while (*s) {
        next_glyph(&s);
        w++;
    }
    return w;
}

static void img_glyph(andrea_image *im, int x, int y, int g, andrea_rgb c) {
    for (int r = 0; r < 7; r++)
        for (int k = 0; k < 5; k++)
            if (FONT5X7[g][r] >> (4 - k) & 1) andrea_img_rect(im, x + k, y + r, 1, 1, c);
}

/* Horizontal text at (x, y), at most max_chars glyphs. Returns the width drawn. */
int andrea_img_text(andrea_image *im, int x, int y, const char *s, int max_chars, andrea_rgb c) {
    int n = 0;
    while (*s && n < max_chars) img_glyph(im, x + ANDREA_GLYPH_W * n++, y, next_glyph(&s), c);
    return n * ANDREA_GLYPH_W;
}

/* Vertical text, one glyph under the other, top at y, centred in a column of width cw. */
void andrea_img_text_down(andrea_image *im, int x, int y, int cw, const char *s, int max_chars,
                          andrea_rgb c) {
    int n = 0;
    while (*s && n < max_chars) img_glyph(im, x + (cw - 5) / 2, y + ANDREA_GLYPH_H * n++, next_glyph(&s), c);
}

int andrea_img_label_chars(const char *s, int cap) {
    int w = andrea_img_text_width(s);
    return w < cap ? w : cap;
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
int andrea_img_encode(const andrea_image *im, andrea_writer *w, const char *what) {
    char msg[128] = "";
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, msg, png_on_error,
                                              png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return andrea_set_error("%s: out of memory for the encoder", what);
    }
    if (setjmp(png_jmpbuf(png))) { /* libpng's errors (and the writer's) land here */
        png_destroy_write_struct(&png, &info);
        if (w->err) return andrea_writer_status(w, what);
        return andrea_set_error("%s: libpng: %s", what, msg);
    }
    png_set_write_fn(png, w, png_sink, png_flush_none);
    png_set_IHDR(png, info, (png_uint_32)im->w, (png_uint_32)im->h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
    png_set_sRGB(png, info, PNG_sRGB_INTENT_PERCEPTUAL);
    png_write_info(png, info);
    for (int y = 0; y < im->h; y++) png_write_row(png, im->px + (size_t)y * im->w * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return andrea_writer_status(w, what);
}

#endif /* ANDREA_HAVE_PNG */
