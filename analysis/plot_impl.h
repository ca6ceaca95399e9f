/*
 * plot_impl: the state of a plot (analysis/plot.h), shared by plot.c (building a plot) and
 * plot_gp.c (writing its data, script and PNG). Not for use outside these files.
 */
#ifndef ACCELTRACE_PLOT_IMPL_H
#define ACCELTRACE_PLOT_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/plot.h"
#include "common/err.h"

#define PLOT_MAX_PANELS 64
#define PLOT_MAX_SERIES 256

struct series {
    char *name;
    int panel;
    double *x, *y; /* (n); histogram: x = bin centres, y = counts, w = widths */
    double *w;
    size_t n;
    enum plot_marker marker;
};

struct panel {
    char *title, *xlabel, *xunit, *ylabel, *yunit;
};

/* Legends with more series than this are drawn below the plot. */
#define PLOT_KEY_INSIDE_MAX 6

struct plot {
    char *name;
    enum plot_kind kind;
    char *title, *xlabel, *xunit, *ylabel, *yunit, *zlabel, *zunit;
    bool logx, logy;
    int width, height;
    char **extra;
    size_t n_extra;
    int rows, cols;
    struct panel panels[PLOT_MAX_PANELS];
    struct series *series;
    size_t n_series;
    /* heatmap */
    double *hx, *hy, *hz;
    size_t nx, ny;
    char *label_fmt;
    /* bars */
    char **cats, **bar_names;
    size_t n_cat, n_bar;
    double *bar_vals;
    bool stacked;
    double bar_top;  /* > 0: the y axis reaches at least this value */
    bool *bar_hatch; /* (n_bar) series drawn hatched instead of solid */
    struct errmsg err;
};

#endif
