/*
 * run_strip.c - sources.png: which source each step drew, as a strip per source (one row
 * each, a tick in its colour at every step it was chosen). A curriculum switches sources
 * whole steps at a time: lines of shares over windows drew mixing that never happened.
 */
#include <stdio.h>
#include <string.h>

#include "report/run_plots.h"
#include "util/error.h"

#ifdef ANDREA_HAVE_PNG
#include "raster/image.h"
#include "raster/plot.h"

enum { SW = 860, LABEL = 110, RIGHT = 20, TOP = 34, ROW = 16, BOTTOM = 40 };

int andrea_run_strip_png(const andrea_run_log *log, andrea_writer *w) {
    const andrea_xy *c = &log->choice;
    if (!c->n || !log->n_src) return andrea_set_error("sources strip: no steps with a source");
    double x0 = 0, x1 = c->x[c->n - 1] > 0 ? c->x[c->n - 1] : 1;
    int h = TOP + ROW * log->n_src + BOTTOM, px0 = LABEL, px1 = SW - RIGHT;
    andrea_image im;
    if (andrea_img_init(&im, SW, h)) return andrea_set_error("sources strip: out of memory");
    const char *title = "Source drawn at each step (one row per source)";
    andrea_img_text(&im, (SW - andrea_img_text_width(title) * ANDREA_GLYPH_W) / 2, 12, title, 120,
                    ANDREA_BLACK);
    for (int i = 0; i < log->n_src; i++) {
        int y = TOP + ROW * i;
        char label[96];
        snprintf(label, sizeof label, "%s", log->src[i].name);
        andrea_img_text(&im, 6, y + 4, label, 17, ANDREA_BLACK);
        andrea_img_rect(&im, px0, y + ROW - 1, px1 - px0, 1, (andrea_rgb){232, 232, 232});
    }
    for (int k = 0; k < c->n; k++) { /* each step: a column of its width, at least 1 px */
        int i = (int)c->y[k];
        double a = px0 + (c->x[k] - 1 - x0) / (x1 - x0) * (px1 - px0);
        double b = px0 + (c->x[k] - x0) / (x1 - x0) * (px1 - px0);
        int xa = (int)a, wd = (int)b - xa > 1 ? (int)b - xa : 1;
        andrea_img_rect(&im, xa, TOP + ROW * i + 2, wd, ROW - 4, andrea_plot_color(i));
    }
    andrea_rgb axis = {90, 90, 90};
    int ybase = TOP + ROW * log->n_src + 2;
    andrea_img_rect(&im, px0, ybase, px1 - px0 + 1, 1, axis);
    for (int t = 0; t <= 4; t++) { /* five ticks: 0, a quarter, ..., the last step */
        double v = x0 + (x1 - x0) * t / 4;
        int x = px0 + (int)((px1 - px0) * t / 4);
        char buf[32];
        snprintf(buf, sizeof buf, "%.0f", v);
        andrea_img_rect(&im, x, ybase, 1, 4, axis);
        andrea_img_text(&im, x - andrea_img_text_width(buf) * ANDREA_GLYPH_W / 2, ybase + 8, buf, 12,
                        ANDREA_BLACK);
    }
    andrea_img_text(&im, px0 + (px1 - px0) / 2 - 12, h - 14, "step", 8, ANDREA_BLACK);
    int rc = andrea_img_encode(&im, w, "sources PNG");
    andrea_img_free(&im);
    return rc;
}
#else
int andrea_run_strip_png(const andrea_run_log *log, andrea_writer *w) {
    (void)log, (void)w;
    return andrea_set_error("sources strip: andrea was built without libpng (apt install "
                            "libpng-dev and rebuild)");
}
#endif
