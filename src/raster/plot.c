/*
 * plot.c - line charts (plot.h) on the image.h raster: a frame, ticks at 1-2-5 steps
 * with their labels, grid lines, the series clipped to the frame, an optional dashed
 * reference line, and a legend in the upper right corner.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "raster/plot.h"
#include "util/error.h"

#ifdef ANDREA_HAVE_PNG
#include "raster/image.h"

enum { W = 860, H = 460, LEFT = 70, RIGHT = 20, TOP = 34, BOTTOM = 48 };

static const andrea_rgb PALETTE[10] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},
                                       {214, 39, 40},  {148, 103, 189}, {140, 86, 75},
                                       {227, 119, 194}, {127, 127, 127}, {188, 189, 34},
                                       {23, 190, 207}};
andrea_rgb andrea_plot_color(int i) { return PALETTE[(i % 10 + 10) % 10]; }
static const andrea_rgb GRID = {232, 232, 232}, AXIS = {90, 90, 90}, REF = {200, 30, 30};

/* A round tick step (1, 2 or 5 x 10^k) giving about n ticks over span. */
static double tick_step(double span, int n) {
    double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* Tick labels of one axis share a style: fixed decimals, or (tiny or huge steps, e.g.
 * learning rates) one-decimal exponents. */
static void fmt_tick(double v, double step, char *buf, size_t n) {
    if (fabs(v) < step * 1e-6) v = 0;
    if (step < 1e-3 || step >= 1e5) snprintf(buf, n, v == 0 ? "0" : "%.1e", v);
    else {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        snprintf(buf, n, "%.*f", dec, v);
    }
}

static void data_range(const andrea_plot *p, double *x0, double *x1, double *y0, double *y1) {
    *x0 = *y0 = INFINITY;
    *x1 = *y1 = -INFINITY;
    for (int s = 0; s < p->n_series; s++)
        for (int i = 0; i < p->series[s].n; i++) {
            double x = p->series[s].x[i], y = p->series[s].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            if (x < *x0) *x0 = x;
            if (x > *x1) *x1 = x;
            if (y < *y0) *y0 = y;
            if (y > *y1) *y1 = y;
        }
    if (p->has_ref) {
        if (p->ref < *y0) *y0 = p->ref;
        if (p->ref > *y1) *y1 = p->ref;
    }
    if (p->fixed_y) *y0 = p->y0, *y1 = p->y1;
    if (*x0 > 0 && *x0 < 0.1 * (*x1 - *x0)) *x0 = 0; /* steps from 1: the axis from 0 */
    if (*x1 <= *x0) *x1 = *x0 + 1;
    if (*y1 <= *y0) *y1 = *y0 + (*y0 != 0 ? fabs(*y0) * 0.1 : 1);
    if (!p->fixed_y) { /* a little air above and below */
        double pad = (*y1 - *y0) * 0.05;
        *y1 += pad;
        *y0 = *y0 >= 0 && *y0 - pad < 0 ? 0 : *y0 - pad;
    }
}

typedef struct {
    double x0, x1, y0, y1;
    int px0, px1, py0, py1; /* the frame in pixels: py0 is the top */
} frame;

static double fx(const frame *f, double x) { return f->px0 + (x - f->x0) / (f->x1 - f->x0) * (f->px1 - f->px0); }
static double fy(const frame *f, double y) { return f->py1 - (y - f->y0) / (f->y1 - f->y0) * (f->py1 - f->py0); }
static int inside(const frame *f, double px, double py) {
    return px >= f->px0 - 0.5 && px <= f->px1 + 0.5 && py >= f->py0 - 0.5 && py <= f->py1 + 0.5;
}

static void draw_axes(andrea_image *im, const frame *f, const andrea_plot *p) {
    char buf[32];
    double sx = tick_step(f->x1 - f->x0, 8), sy = tick_step(f->y1 - f->y0, 6);
    for (double v = ceil(f->y0 / sy) * sy; v <= f->y1 + sy * 1e-9; v += sy) {
        int y = (int)lround(fy(f, v));
        andrea_img_rect(im, f->px0, y, f->px1 - f->px0, 1, GRID);
        andrea_img_rect(im, f->px0 - 4, y, 4, 1, AXIS);
        fmt_tick(v, sy, buf, sizeof buf);
        int tw = andrea_img_text_width(buf) * ANDREA_GLYPH_W;
        andrea_img_text(im, f->px0 - 7 - tw, y - 3, buf, 12, ANDREA_BLACK);
    }
    for (double v = ceil(f->x0 / sx) * sx; v <= f->x1 + sx * 1e-9; v += sx) {
        int x = (int)lround(fx(f, v));
        andrea_img_rect(im, x, f->py0, 1, f->py1 - f->py0, GRID);
        andrea_img_rect(im, x, f->py1, 1, 4, AXIS);
        fmt_tick(v, sx, buf, sizeof buf);
        int tw = andrea_img_text_width(buf) * ANDREA_GLYPH_W;
        andrea_img_text(im, x - tw / 2, f->py1 + 8, buf, 12, ANDREA_BLACK);
    }
    /* the frame */
    andrea_img_rect(im, f->px0, f->py0, f->px1 - f->px0 + 1, 1, AXIS);
    andrea_img_rect(im, f->px0, f->py1, f->px1 - f->px0 + 1, 1, AXIS);
    andrea_img_rect(im, f->px0, f->py0, 1, f->py1 - f->py0 + 1, AXIS);
    andrea_img_rect(im, f->px1, f->py0, 1, f->py1 - f->py0 + 1, AXIS);
    int tw = andrea_img_text_width(p->title) * ANDREA_GLYPH_W;
    andrea_img_text(im, (W - tw) / 2, 12, p->title, 120, ANDREA_BLACK);
    if (p->xlabel) {
        tw = andrea_img_text_width(p->xlabel) * ANDREA_GLYPH_W;
        andrea_img_text(im, f->px0 + (f->px1 - f->px0 - tw) / 2, H - 16, p->xlabel, 80, ANDREA_BLACK);
    }
    if (p->ylabel) andrea_img_text_down(im, 4, f->py0 + 10, 10, p->ylabel, 40, ANDREA_BLACK);
}

static void draw_series(andrea_image *im, const frame *f, const andrea_plot_series *s) {
    andrea_rgb c = PALETTE[s->color % 10];
    int width = s->width;
    for (int i = 0; i < s->n; i++) {
        double x = fx(f, s->x[i]), y = fy(f, s->y[i]);
        if (!isfinite(s->y[i])) continue;
        if (s->markers && inside(f, x, y)) andrea_img_rect(im, (int)lround(x) - 2, (int)lround(y) - 2, 5, 5, c);
        if (width <= 0 || i == 0 || !isfinite(s->y[i - 1])) continue;
        double px = fx(f, s->x[i - 1]), py = fy(f, s->y[i - 1]);
        /* a segment leaving the frame (a fixed y range) is left out */
        if (!inside(f, x, y) || !inside(f, px, py)) continue;
        andrea_img_line(im, px, py, x, y, width, c);
    }
}

static void draw_legend(andrea_image *im, const frame *f, const andrea_plot *p) {
    int n = 0, wmax = 0;
    for (int s = 0; s < p->n_series; s++) {
        if (!p->series[s].name || !p->series[s].n) continue;
        int w = andrea_img_label_chars(p->series[s].name, 40);
        if (w > wmax) wmax = w;
        n++;
    }
    if (p->has_ref && p->ref_label) {
        int w = andrea_img_label_chars(p->ref_label, 40);
        if (w > wmax) wmax = w;
        n++;
    }
    if (!n) return;
    int bw = 30 + wmax * ANDREA_GLYPH_W + 8, bh = n * 13 + 8;
    /* the corner whose box hides the fewest points: upper right, upper left, lower right,
     * lower left */
    int best = -1, x = 0, y = 0;
    for (int c = 0; c < 4; c++) {
        int cx = c % 2 ? f->px0 + 6 : f->px1 - bw - 6, cy = c < 2 ? f->py0 + 6 : f->py1 - bh - 6;
        int hidden = 0;
        for (int s = 0; s < p->n_series; s++)
            for (int i = 0; i < p->series[s].n; i++) {
                double px = fx(f, p->series[s].x[i]), py = fy(f, p->series[s].y[i]);
                hidden += px >= cx && px <= cx + bw && py >= cy && py <= cy + bh;
            }
        if (best < 0 || hidden < best) best = hidden, x = cx, y = cy;
    }
    andrea_img_rect(im, x, y, bw, bh, (andrea_rgb){255, 255, 255});
    andrea_img_rect(im, x, y, bw, 1, AXIS), andrea_img_rect(im, x, y + bh, bw + 1, 1, AXIS);
    andrea_img_rect(im, x, y, 1, bh, AXIS), andrea_img_rect(im, x + bw, y, 1, bh, AXIS);
    int row = 0;
    for (int s = 0; s < p->n_series; s++) {
        const andrea_plot_series *ps = &p->series[s];
        if (!ps->name || !ps->n) continue;
        int yy = y + 6 + 13 * row++;
        andrea_img_rect(im, x + 6, yy + 3, 18, 2, PALETTE[ps->color % 10]);
        andrea_img_text(im, x + 30, yy, ps->name, 40, ANDREA_BLACK);
    }
    if (p->has_ref && p->ref_label) {
        int yy = y + 6 + 13 * row;
        for (int k = 0; k < 18; k += 6) andrea_img_rect(im, x + 6 + k, yy + 3, 4, 2, REF);
        andrea_img_text(im, x + 30, yy, p->ref_label, 40, ANDREA_BLACK);
    }
}

int andrea_plot_png(const andrea_plot *p, andrea_writer *w) {
    frame f;
    data_range(p, &f.x0, &f.x1, &f.y0, &f.y1);
    if (!isfinite(f.x0) || !isfinite(f.y0)) return andrea_set_error("plot '%s': no data", p->title);
    f.px0 = LEFT, f.px1 = W - RIGHT, f.py0 = TOP, f.py1 = H - BOTTOM;
    andrea_image im;
    if (andrea_img_init(&im, W, H)) return andrea_set_error("plot: out of memory");
    draw_axes(&im, &f, p);
    for (int k = 0; k < p->n_vx; k++) { /* a 40% tint: behind the data, never hiding it */
        andrea_rgb c = PALETTE[(p->vx_color ? p->vx_color[k] : 7) % 10];
        c = (andrea_rgb){(uint8_t)(153 + c.r * 2 / 5), (uint8_t)(153 + c.g * 2 / 5),
                         (uint8_t)(153 + c.b * 2 / 5)};
        double x = fx(&f, p->vx[k]);
        if (x >= f.px0 && x <= f.px1) andrea_img_rect(&im, (int)lround(x), f.py0 + 1, 1, f.py1 - f.py0 - 1, c);
    }
    if (p->has_ref) {
        int y = (int)lround(fy(&f, p->ref));
        for (int x = f.px0; x < f.px1; x += 10) andrea_img_rect(&im, x, y, 6, 2, REF);
    }
    for (int s = 0; s < p->n_series; s++) draw_series(&im, &f, &p->series[s]);
    draw_legend(&im, &f, p);
    int rc = andrea_img_encode(&im, w, "plot PNG");
    andrea_img_free(&im);
    return rc;
}

#else /* no libpng */
int andrea_plot_png(const andrea_plot *p, andrea_writer *w) {
    (void)w;
    return andrea_set_error("plot '%s': andrea was built without libpng (apt install "
                            "libpng-dev and rebuild)", p->title);
}
#endif
