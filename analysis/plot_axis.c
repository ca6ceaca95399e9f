/*
 * plot_axis: the range and tics of a data axis (analysis/plot_impl.h), chosen here rather
 * than by gnuplot's autoscale, whose choices a paper cannot use: a 0.01-point change zoomed
 * to fill the axis, log ranges padded to whole decades beyond the data, and tic labels
 * that mix "500000" with "5x10^6" on one axis. The rules are in docs/models.md#axes.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/plot_impl.h"
#include "common/buf.h"

/* 1, 2 or 5 times a power of ten near span (the tic step of a linear axis). */
static double nice_step(double span)
{
    double m = pow(10, floor(log10(span))), f = span / m;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * m;
}

/* Decimals that print multiples of step (in units of 10^e) exactly: 0.25 -> 2. */
static int step_decimals(double step)
{
    int d = 0;
    while (d < 9 &&
           fabs(step * pow(10, d) - nearbyint(step * pow(10, d))) > 1e-6 * step * pow(10, d))
        d++;
    return d;
}

/* Adds tic v labelled `text`, times 10^e when sci ("" text: 10^e alone). */
static void add_tic(struct plot_axis *a, double v, const char *text, bool sci, int e)
{
    if (a->n_tics >= PLOT_AXIS_MAX_TICS)
        return;
    struct plot_tic *t = &a->tics[a->n_tics++];
    t->v = v;
    t->sci = sci;
    t->e = e;
    snprintf(t->text, sizeof t->text, "%s", text);
}

/*
 * Linear: a span of at least PLOT_MIN_REL_SPAN of the largest magnitude (a flat line reads
 * as flat), `pad` of the span beyond the data on each side, tics at a 1-2-5 step (at
 * least 1 for whole-numbered data), and one label format: plain numbers, or mantissas of
 * a common 10^e written in the axis label when the values reach 10^5 or stay below 10^-2.
 */
static void linear_layout(double lo, double hi, bool integer, double pad, struct plot_axis *a)
{
    double m = fmax(fabs(lo), fabs(hi));
    double min_span = m > 0 ? PLOT_MIN_REL_SPAN * m : 1.0;
    if (hi - lo < min_span) {
        double c = 0.5 * (lo + hi);
        bool nonneg = lo >= 0;
        lo = c - 0.5 * min_span;
        hi = c + 0.5 * min_span;
        if (nonneg && lo < 0) { /* counts and ratios stay on their side of zero */
            hi -= lo;
            lo = 0;
        }
    }
    double span = hi - lo;
    double step = nice_step(span / 5);
    if (integer && step < 1)
        step = 1;
    a->lo = lo - pad * span;
    a->hi = hi + pad * span;
    if (integer && a->hi - a->lo < 2) { /* a whole-numbered axis shows whole tics */
        a->lo = fmin(a->lo, floor(lo) - 0.5);
        a->hi = fmax(a->hi, ceil(hi) + 0.5);
    }
    double big = fmax(fabs(a->lo), fabs(a->hi));
    a->exp10 = 0;
    if (big >= 1e5 || big < 1e-2)
        a->exp10 = (int)floor(log10(big));
    double unit = pow(10, a->exp10);
    int dec = step_decimals(step / unit);
    double first = ceil(a->lo / step - 1e-9) * step;
    for (double v = first; v <= a->hi + 1e-9 * step && a->n_tics < PLOT_AXIS_MAX_TICS; v += step) {
        double t = fabs(v) < 1e-9 * step ? 0 : v; /* no "-0" */
        char s[32];
        snprintf(s, sizeof s, "%.*f", dec, t / unit);
        add_tic(a, t, s, false, 0);
    }
}

/* A log tic: plain below 10^5 and from 10^-3 on, else "m×10^e" (10^e alone for m = 1). */
static void log_tic(struct plot_axis *a, double v, bool sci)
{
    int e = (int)floor(log10(v) + 1e-9);
    double m = nearbyint(v / pow(10, e) * 10) / 10;
    char s[32] = "";
    if (!sci)
        snprintf(s, sizeof s, "%g", v);
    else if (fabs(m - 1) > 1e-9)
        snprintf(s, sizeof s, "%g", m);
    add_tic(a, v, s, sci, e);
}

/*
 * Log: the data's range widened by a few percent (not to whole decades), at least a
 * factor 2 wide; tics at decades when three or more fall inside, else at 1-2-5, else at
 * every whole multiple of the decades it covers.
 */
static void log_layout(double lo, double hi, struct plot_axis *a)
{
    if (hi / lo < 2) {
        double c = sqrt(lo * hi);
        lo = c / sqrt(2.0);
        hi = c * sqrt(2.0);
    }
    double f = fmax(1.12, pow(hi / lo, 0.04));
    a->lo = lo / f;
    a->hi = hi * f;
    a->exp10 = 0;
    int d0 = (int)floor(log10(a->lo)), d1 = (int)ceil(log10(a->hi));
    static const double sets[3][9] = {{1, 0}, {1, 2, 5, 0}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
    static const int set_n[3] = {1, 3, 9};
    double vals[PLOT_AXIS_MAX_TICS];
    size_t nv = 0;
    for (int s = 0; s < 3 && nv < (s == 1 ? 3 : 2); s++) {
        nv = 0;
        int every = s == 0 ? 1 + (d1 - d0) / 9 : 1; /* at most about 9 decade tics */
        for (int d = d0; d <= d1; d++) {
            if (s == 0 && d % every)
                continue;
            for (int k = 0; k < set_n[s] && nv < PLOT_AXIS_MAX_TICS; k++) {
                double v = sets[s][k] * pow(10, d);
                if (v >= a->lo && v <= a->hi)
                    vals[nv++] = v;
            }
        }
    }
    bool sci = false;
    for (size_t i = 0; i < nv; i++)
        sci |= vals[i] >= 1e5 || vals[i] < 1e-3;
    for (size_t i = 0; i < nv; i++)
        log_tic(a, vals[i], sci);
}

void plot_axis_layout(double lo, double hi, bool log, bool integer, double pad, struct plot_axis *a)
{
    memset(a, 0, sizeof *a);
    if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi) || (log && lo <= 0))
        return;
    a->set = true;
    if (log)
        log_layout(lo, hi, a);
    else
        linear_layout(lo, hi, integer, pad, a);
}

/* A tic label: the number, or mantissa and power as enhanced text (LaTeX for epslatex). */
static void tic_label(struct buf *g, const struct plot_tic *t)
{
    char s[64];
    if (!t->sci)
        snprintf(s, sizeof s, "%s", t->text);
    else if (plot_text_latex)
        snprintf(s, sizeof s, "$%s%s10^{%d}$", t->text, t->text[0] ? "\\times " : "", t->e);
    else
        snprintf(s, sizeof s, "%s%s10^{%d}", t->text, t->text[0] ? "×" : "", t->e);
    buf_printf(g, "\"%s\"", s);
}

void plot_axis_write(struct buf *g, const char *axis, const struct plot_axis *a)
{
    char x[40], y[40];
    plot_num(x, sizeof x, a->lo);
    plot_num(y, sizeof y, a->hi);
    buf_printf(g, "set %srange [%s:%s]\nset %stics (", axis, x, y, axis);
    for (size_t i = 0; i < a->n_tics; i++) {
        plot_num(x, sizeof x, a->tics[i].v);
        buf_printf(g, "%s", i ? ", " : "");
        tic_label(g, &a->tics[i]);
        buf_printf(g, " %s", x);
    }
    buf_printf(g, ")\n");
}

/* True when one of the caller's extra lines starts with prefix. */
bool plot_has_extra(const struct plot *p, const char *prefix)
{
    for (size_t i = 0; i < p->n_extra; i++)
        if (!strncmp(p->extra[i], prefix, strlen(prefix)))
            return true;
    return false;
}

/* True when a heatmap's values are all positive and span two decades or more: a linear
 * colour scale would show only the largest cells (docs/models.md#axes). */
bool plot_heat_log_cb(const struct plot *p)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; p->hz && i < p->nx * p->ny; i++) {
        if (isnan(p->hz[i]))
            continue;
        if (!(p->hz[i] > 0) || !isfinite(p->hz[i]))
            return false;
        lo = fmin(lo, p->hz[i]);
        hi = fmax(hi, p->hz[i]);
    }
    return lo <= hi && hi >= 100 * lo;
}

/*
 * The y axis of a bar plot from its bars (stacked: the sums of the positive parts), its
 * bands and bar_top, from zero; unless the axis is logarithmic or an extra sets it.
 */
void plot_bars_axis(const struct plot *p, struct plot_axis *y)
{
    memset(y, 0, sizeof *y);
    if (p->logy || plot_has_extra(p, "set yrange") || plot_has_extra(p, "set ytics"))
        return;
    double lo = 0, hi = p->bar_top > 0 ? p->bar_top : 0;
    for (size_t c = 0; c < p->n_cat; c++) {
        double sum = 0;
        for (size_t s = 0; s < p->n_bar; s++) {
            double v = p->bar_vals[s * p->n_cat + c];
            if (!isfinite(v))
                continue;
            sum += p->stacked && v > 0 ? v : 0;
            hi = fmax(hi, p->stacked ? sum : v);
            lo = fmin(lo, v);
        }
    }
    for (size_t i = 0; i < p->n_bands; i++)
        hi = fmax(hi, p->bands[i].y1);
    if (!(hi > lo))
        return;
    plot_axis_layout(lo, hi, false, false, 0.05, y);
    if (lo == 0 && y->set) { /* bars stand on the axis: no margin, no tic below zero */
        y->lo = 0;
        size_t k = 0;
        for (size_t i = 0; i < y->n_tics; i++)
            if (y->tics[i].v >= 0)
                y->tics[k++] = y->tics[i];
        y->n_tics = k;
    }
}
