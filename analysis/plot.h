/*
 * plot: the plot driver (DESIGN.md section 6). A plot is built in memory, then
 * plot_write() writes, in the output folder,
 *   NAME.dat  the data (gnuplot blocks, '#' header lines naming columns and units),
 *   NAME.gp   a gnuplot script (terminal pngcairo) that reads NAME.dat and writes NAME.png,
 * and runs `gnuplot NAME.gp` in that folder. When gnuplot is not on PATH the data and the
 * script are still written, *rendered is false and the caller warns once (plot never
 * prints): "gnuplot not found: run 'gnuplot NAME.gp' in DIR to render".
 *
 * Kinds:
 *   PLOT_LINE     series of (x, y) points as lines with points; optional panels (a grid of
 *                 sub-plots, each with its own title and axis labels: plot_panel)
 *   PLOT_SCATTER  series of (x, y) points
 *   PLOT_HEATMAP  z over an nx x ny grid (plot_heatmap), optional overlay curves
 *                 (plot_series on the same plot) drawn on top, optional cell labels
 *   PLOT_HIST     pre-binned histograms (plot_hist_bins) or raw values (plot_hist_values)
 *   PLOT_BARS     grouped or stacked bars: categories on x, one series per stack part/group
 * Axis labels carry units: plot_xlabel(p, "N_w", "PEs") prints "N_w [PEs]".
 *
 * Strings are copied; arrays are copied. Errors: ERR_NOMEM, ERR_IO (files),
 * ERR_EXTERNAL (gnuplot exited non-zero; the message holds its last stderr line), ERR_USAGE
 * (inconsistent calls, e.g. series on a bar plot). The handle keeps the message.
 */
#ifndef ACCELTRACE_PLOT_H
#define ACCELTRACE_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

enum plot_kind { PLOT_LINE, PLOT_SCATTER, PLOT_HEATMAP, PLOT_HIST, PLOT_BARS };

struct plot;

/* New plot NAME ([A-Za-z0-9_.-]+) of a kind; NULL on allocation failure. */
struct plot *plot_new(const char *name, enum plot_kind kind);
void plot_free(struct plot *p);

/* Title, axis labels (with unit; "" or NULL for none), log axes, size in pixels. */
void plot_title(struct plot *p, const char *title);
void plot_xlabel(struct plot *p, const char *label, const char *unit);
void plot_ylabel(struct plot *p, const char *label, const char *unit);
void plot_zlabel(struct plot *p, const char *label, const char *unit); /* heatmap colour box */
void plot_logscale(struct plot *p, bool logx, bool logy);
void plot_size(struct plot *p, int width_px, int height_px); /* default 800 x 560 */
/* Extra gnuplot command appended before the plot command (e.g. "set key top left"). */
void plot_extra(struct plot *p, const char *gnuplot_line);

/*
 * Panels (PLOT_LINE/PLOT_SCATTER): rows x cols sub-plots; panel i (row-major) gets its own
 * title and labels. Without a call there is one panel using the plot's labels.
 */
int plot_panels(struct plot *p, int rows, int cols);
int plot_panel(struct plot *p, int panel, const char *title, const char *xlabel, const char *xunit,
               const char *ylabel, const char *yunit);

/* A series of n points in panel `panel` (0 without panels). Line, scatter, heatmap overlay. */
int plot_series(struct plot *p, int panel, const char *name, const double *x, const double *y,
                size_t n);

/*
 * How a series is drawn. PLOT_MARK_DEFAULT is the kind's style: lines with points
 * (PLOT_LINE), small filled circles (PLOT_SCATTER), thick lines with points (heatmap
 * overlay). The others draw markers only, no lines: PLOT_MARK_OPEN open circles (gnuplot
 * pt 6), PLOT_MARK_FILLED filled circles (pt 7), e.g. for one series on top of another's
 * lines or to tell two scatter series apart by fill.
 */
enum plot_marker { PLOT_MARK_DEFAULT = 0, PLOT_MARK_OPEN, PLOT_MARK_FILLED };

/*
 * Sets the marker style of the series added last (plot_series). ERR_USAGE when there is
 * none or the plot is a histogram or bar plot.
 */
int plot_series_marker(struct plot *p, enum plot_marker marker);

/*
 * Heatmap: z[iy*nx + ix] at (x[ix], y[iy]); NaN cells are left blank. labels: write the
 * value in each cell with printf format fmt (e.g. "%.1f"), NULL for none.
 */
int plot_heatmap(struct plot *p, const double *x, size_t nx, const double *y, size_t ny,
                 const double *z, const char *label_fmt);

/* Histogram series from bin edges (n_bins + 1) and counts (n_bins). */
int plot_hist_bins(struct plot *p, const char *name, const double *edges, const double *counts,
                   size_t n_bins);
/* Histogram series from raw values binned into n_bins equal bins over [lo, hi]. */
int plot_hist_values(struct plot *p, const char *name, const double *v, size_t n, double lo,
                     double hi, size_t n_bins);

/*
 * Bars: n_cat categories, n_series series, values[s*n_cat + c]. stacked: parts of one bar
 * per category; otherwise grouped bars side by side. Category c sits at x = c.
 */
int plot_bars(struct plot *p, const char *const *categories, size_t n_cat,
              const char *const *series, size_t n_series, const double *values, bool stacked);
/* Draws series `series` of a bar plot (after plot_bars) hatched instead of solid, e.g. a
 * part that is hidden or overlapped. 0 or ERR_USAGE. */
int plot_bars_hatch(struct plot *p, size_t series);

/* The y axis of a bar plot reaches at least top (e.g. to show a reference band drawn with
 * plot_extra above the bars); it still grows with taller bars. Ignored unless top > 0. */
void plot_bars_top(struct plot *p, double top);

/*
 * Writes DIR/NAME.dat and DIR/NAME.gp and renders DIR/NAME.png with gnuplot when it is on
 * PATH. *rendered (may be NULL) tells whether the PNG was made. 0 or a negative enum err.
 */
int plot_write(struct plot *p, const char *dir, bool *rendered);
const char *plot_errmsg(const struct plot *p);

/* True when a `gnuplot` executable is on PATH (checked once per process). */
bool plot_gnuplot_available(void);

#endif
