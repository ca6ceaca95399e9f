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

#define PLOT_MAX_SERIES 256

struct buf;

struct series {
    char *name;
    int panel;
    double *x, *y; /* (n); histogram: x = bin centres, y = counts, w = widths */
    double *w;
    size_t n;
    enum plot_marker marker;
    int colour, dash; /* -1: by series index */
};

struct band {
    double x0, x1, y0, y1; /* data units; x NaN: the whole width */
    int colour;
    char *label;
};

struct xcat {
    double value;
    char *label;
};
#define PLOT_MAX_XCAT 4

struct panel {
    char *title, *xlabel, *xunit, *ylabel, *yunit;
};

/* Legends with more entries than this, or longer ones, are drawn below the plot. */
#define PLOT_KEY_RIGHT_MAX 8
#define PLOT_KEY_RIGHT_CHARS 28

struct plot {
    char *name;
    enum plot_kind kind;
    char *title, *xlabel, *xunit, *ylabel, *yunit, *zlabel, *zunit;
    bool logx, logy;
    int width, height;
    bool own_size;
    bool has_format;
    enum plot_format format;
    enum plot_palette palette;
    bool image_rows; /* heatmap y[0] at the top */
    struct band bands[PLOT_MAX_BANDS];
    size_t n_bands;
    struct xcat xcats[PLOT_MAX_XCAT];
    size_t n_xcats;
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
    /* gantt (plot_gantt.c) */
    char *g_tracks[PLOT_GANTT_MAX_TRACKS];
    size_t n_gtrack;
    char **g_classes;
    size_t n_gclass;
    struct gantt_span *g_spans;
    size_t n_gspan, cap_gspan;
    struct errmsg err;
};

struct gantt_span {
    double t0, t1;
    unsigned track, cls;
};

/* plot_gantt.c: the data blocks (one per class: t0 t1 row) and the plot command. */
int plot_gantt_dat(const struct plot *p, struct buf *d);
int plot_gantt_gp(const struct plot *p, struct buf *g, const char *dat);
void plot_gantt_release(struct plot *p);

/* plot_text.c: script text. The buf's error is sticky (common/buf.h). */
extern bool plot_text_latex;                /* text of the plot being written is LaTeX (epslatex) */
void plot_gq(struct buf *b, const char *s); /* a gnuplot double-quoted string */
void plot_num(char *t, size_t n, double v); /* shortest round-trip, "NaN" */
void plot_gtext_mode(struct buf *b, const char *s, bool escaped); /* rendered text */
void plot_gtext(struct buf *b, const char *s);                    /* plot_gtext_mode(b, s, false) */
void plot_label_line(struct buf *b, const char *cmd, const char *label, const char *unit);

/*
 * plot_axis.c: the range and tics of a data axis of line and scatter plots, chosen from
 * the data (docs/models.md#axes). set is false when there is nothing to place.
 */
#define PLOT_AXIS_MAX_TICS 24
#define PLOT_MIN_REL_SPAN 0.05 /* a linear axis spans at least 5% of its largest value */
struct plot_tic {
    double v;      /* position, data units */
    bool sci;      /* label is text times 10^e ("" text: 10^e alone) */
    int e;         /* power of ten of a sci label */
    char text[32]; /* the number, or the mantissa of a sci label */
};
struct plot_axis {
    bool set;
    double lo, hi; /* the range */
    struct plot_tic tics[PLOT_AXIS_MAX_TICS];
    size_t n_tics;
    int exp10; /* linear: tic labels are multiples of 10^exp10 (0: as written) */
};
/* Lays out an axis over data lo..hi (log: positive values only); integer: whole-numbered
 * data (tics at least 1 apart); pad: the margin beyond the data, a fraction of the span. */
void plot_axis_layout(double lo, double hi, bool log, bool integer, double pad,
                      struct plot_axis *a);
/* "set Xrange [..]" and "set Xtics (..)" for axis "x" or "y". */
void plot_axis_write(struct buf *g, const char *axis, const struct plot_axis *a);
/* True when one of the caller's extra lines (plot_extra) starts with prefix. */
bool plot_has_extra(const struct plot *p, const char *prefix);
/* The y axis of a bar plot (set false: gnuplot's autoscale, e.g. on a log axis). */
void plot_bars_axis(const struct plot *p, struct plot_axis *y);
/* True when a heatmap is drawn with a log colour scale (positive, two decades or more). */
bool plot_heat_log_cb(const struct plot *p);

/* What a panel's data spans, and how its series and axes are drawn (plot_panel_layout). */
struct panel_layout {
    struct plot_axis x, y;
    int overlaps[PLOT_MAX_SERIES]; /* series drawn on top of series overlaps[s], or -1 */
    bool one_point;                /* no series has two points: values written beside them */
};

/* The index of x value v among the plot's categories, or -1 (plot_gp.c). */
int plot_xcat_of(const struct plot *p, double v);
/* plot_panel.c: panel pn's axes and overlapping series; its axis labels with the common
 * power of ten of the tics ("E [×10^{-9} J]"); labels beside one-point series (tags 900..,
 * returns one past the last tag used). */
void plot_panel_layout(const struct plot *p, int pn, struct panel_layout *L);
void plot_axis_label(struct buf *g, const char *cmd, const char *label, const char *unit,
                     const struct plot_axis *a);
int plot_one_point_labels(const struct plot *p, struct buf *g, int pn);

#endif