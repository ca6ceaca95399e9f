/*
 * plot: the plot driver (docs/design.md#analysis-and-plots). A plot is built in memory, then
 * plot_write() writes, in the output folder,
 *   NAME.dat  the data (gnuplot blocks, '#' header lines naming columns and units),
 *   NAME.gp   a gnuplot script that reads NAME.dat and writes NAME.png (or .pdf, .svg, .eps,
 *             .tex + .eps: the output format, below),
 * and runs `gnuplot NAME.gp` in that folder. When gnuplot is not on PATH the data and the
 * script are still written, *rendered is false and the caller warns once (plot never
 * prints): "gnuplot not found: run 'gnuplot NAME.gp' in DIR to render".
 *
 * The look is the same for every figure (built-in or `acceltrace plot`): the Okabe-Ito
 * colour-blind-safe palette of 8 colours, then the same 8 dashed, then dotted, so series
 * 9.. stay distinct; legends outside the data (right of it, or below it when long);
 * reference bands (plot_band) filled translucent with a solid border and a legend entry
 * naming their source; heatmaps with axes and a colour bar.
 *
 * Text: gnuplot's enhanced mode is on. A string holding "_{" or "^{" is markup: "r_{min}",
 * "x_{k+1}" print as sub/superscripts and its other '_', '^', '@', '&', '~' print as
 * written; any other string is literal (gnuplot's noenhanced), so energy_j prints as written.
 * For epslatex the same rule writes LaTeX ($x_{k+1}$, \_).
 *
 * Kinds:
 *   PLOT_LINE     series of (x, y) points as lines with points; optional panels (a grid of
 *                 sub-plots, each with its own title and axis labels: plot_panel)
 *   PLOT_SCATTER  series of (x, y) points
 *   PLOT_HEATMAP  z over an nx x ny grid (plot_heatmap), optional overlay curves
 *                 (plot_series on the same plot) drawn on top, optional cell labels
 *   PLOT_HIST     pre-binned histograms (plot_hist_bins) or raw values (plot_hist_values)
 *   PLOT_BARS     grouped or stacked bars: categories on x, one series per stack part/group
 *   PLOT_GANTT    a timeline: one row per track (top down, in order of first use), spans
 *                 [t0, t1] coloured by class with a legend entry per class (plot_gantt_span)
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

enum plot_kind { PLOT_LINE, PLOT_SCATTER, PLOT_HEATMAP, PLOT_HIST, PLOT_BARS, PLOT_GANTT };

/*
 * Output formats and their gnuplot terminals: png (pngcairo), pdf (pdfcairo), svg (svg),
 * eps (epscairo), epslatex (epslatex color: NAME.tex with the text, NAME.eps the drawing).
 */
enum plot_format { PLOT_FMT_PNG, PLOT_FMT_PDF, PLOT_FMT_SVG, PLOT_FMT_EPS, PLOT_FMT_EPSLATEX };

/* The format named s ("png", "pdf", "svg", "eps", "epslatex"): 0, or ERR_USAGE. */
int plot_format_parse(const char *s, enum plot_format *f);
/* The format's name and the extension of the file it writes ("png", ..., "tex"). */
const char *plot_format_name(enum plot_format f);
const char *plot_format_ext(enum plot_format f);

/*
 * Parses a size "WxH" with an optional unit "px", "in" or "cm" (e.g. "1200x800",
 * "6x4in", "15x10cm") into pixels at 100 px per inch; a bare number is pixels for png and
 * inches for the vector formats. 0, or ERR_USAGE (each side 1..100 in, 100..10000 px).
 */
int plot_size_parse(const char *s, enum plot_format f, int *width_px, int *height_px);

/*
 * The output of every plot this process writes (process-wide; set once by the CLI before
 * any plot is written, read by plot_write): the format (default png) and, when width_px >
 * 0, the size of a default-sized plot; a plot with a size of its own (plot_size) is scaled
 * by the same factors. Vector formats are sized at 100 px per inch.
 */
struct plot_output {
    enum plot_format format;
    int width_px, height_px; /* 0: each plot's own size */
};
void plot_set_output(const struct plot_output *o);
void plot_get_output(struct plot_output *o);

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
/* This plot's format, over the process-wide one of plot_set_output. */
void plot_format(struct plot *p, enum plot_format f);

/*
 * A reference band (e.g. a paper's range): the rectangle x0..x1 by y0..y1 in data units
 * (x0 or x1 NaN: the whole width), drawn behind the data, translucent fill and solid
 * border in palette colour `colour` (0..7; -1: the next one), with a legend entry `label`
 * (e.g. "paper Fig. 18a, CTR: 3.41-4.01x"; bands with equal labels share one entry; NULL
 * for none). On bar plots category c sits at x = c. 0, ERR_USAGE (y0 > y1, more than
 * PLOT_MAX_BANDS) or ERR_NOMEM.
 */
#define PLOT_MAX_BANDS 64
int plot_band(struct plot *p, double x0, double x1, double y0, double y1, int colour,
              const char *label);

/*
 * A sentinel x value (line and scatter plots): points at x == value mean `label` (e.g.
 * retention 0 = "the trace's selections"), not a position on the axis. They are drawn as a
 * category left of the numeric range, with the label as its tic, a dashed separator and
 * no line joining them to the numeric points. Up to 4 per plot; 0 or ERR_USAGE.
 */
int plot_xcategory(struct plot *p, double value, const char *label);

/* Heatmap rows top-down: y[0] at the top, as in an image (default: at the bottom). */
void plot_heatmap_image_rows(struct plot *p);

/* Heatmap colours: sequential (viridis, the default) or cyclic (hue, for phases). */
enum plot_palette { PLOT_PAL_SEQUENTIAL = 0, PLOT_PAL_CYCLIC };
void plot_palette(struct plot *p, enum plot_palette pal);

/*
 * Panels (PLOT_LINE/PLOT_SCATTER): rows x cols sub-plots; panel i (row-major) gets its own
 * title and labels. Without a call there is one panel using the plot's labels.
 */
#define PLOT_MAX_PANELS 64
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
 * Sets the colour (palette index, taken mod 8) and dash (0 solid, 1 dashed, 2 dotted, 3
 * dash-dot; mod 4) of the series added last, e.g. colour by one key and dash by another.
 * -1 keeps the default: series i gets colour i mod 8 and dash (i / 8) mod 4. 0 or ERR_USAGE.
 */
int plot_series_style(struct plot *p, int colour, int dash);

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
 * Gantt plots: a span from t0 to t1 (x units, t0 <= t1) on row `track`, coloured by `cls`
 * (at most 8 classes get distinct colours, more reuse them; PLOT_GANTT_MAX_TRACKS rows).
 * Rows and classes are created by name on first use. 0, ERR_USAGE (not a Gantt plot, too
 * many rows, t1 < t0) or ERR_NOMEM.
 */
#define PLOT_GANTT_MAX_TRACKS 32
int plot_gantt_span(struct plot *p, const char *track, const char *cls, double t0, double t1);

/*
 * Writes DIR/NAME.dat and DIR/NAME.gp and renders DIR/NAME.png (or the output format's
 * file) with gnuplot when it is on PATH. *rendered (may be NULL) tells whether the image
 * was made. 0 or a negative enum err.
 */
int plot_write(struct plot *p, const char *dir, bool *rendered);
const char *plot_errmsg(const struct plot *p);

/* True when a `gnuplot` executable is on PATH (checked once per process). */
bool plot_gnuplot_available(void);

#endif
