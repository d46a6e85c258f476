/* plot.h - line charts as PNG (plot.c): axes with round-number ticks, a legend, lines
 * and an optional horizontal reference line (the gate's threshold). Internal: the run
 * report (src/report) draws its training plots with it. */
#ifndef ANDREA_RASTER_PLOT_H
#define ANDREA_RASTER_PLOT_H

#include "andrea_writer.h"

typedef struct {
    const char *name;     /* legend entry */
    const double *x, *y;  /* (n) points in x order; NaN y leaves a gap */
    int n;
    int color;            /* index into the palette (10 colours, repeating) */
    int width;            /* line width in pixels (1 or 2); 0: no line, markers only */
    int markers;          /* 1: a dot at every point (few points, e.g. validation) */
} andrea_plot_series;

typedef struct {
    const char *title, *xlabel, *ylabel;
    const andrea_plot_series *series;
    int n_series;
    int has_ref;          /* a dashed horizontal line at ref, labelled ref_label */
    double ref;
    const char *ref_label;
    int fixed_y;          /* 1: the y axis is [y0, y1] instead of the data's range */
    double y0, y1;
    const double *vx;     /* (n_vx) vertical marks behind the lines (source switches, the */
    const int *vx_color;  /* gate's arm step), each a light tint of its palette colour */
    int n_vx;
} andrea_plot;

#include "raster/image.h"
/* The palette's colour i (mod 10): other charts of a run use the same colours. */
andrea_rgb andrea_plot_color(int i);

/* Renders p as a PNG into w. 0, or -1 with andrea_error() (no libpng, no data, I/O). */
int andrea_plot_png(const andrea_plot *p, andrea_writer *w);

#endif
