/*
 * plot_panel: how a panel of a line or scatter plot is laid out from its data
 * (analysis/plot_impl.h): its axes (plot_axis.c), the series that would hide behind
 * another, the values of one-point series. Rules: docs/models.md#axes.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/plot_impl.h"
#include "common/buf.h"

/* The finite points of series q that an axis can place (positive on log axes). */
static bool point_ok(const struct plot *p, const struct series *q, size_t i)
{
    return isfinite(q->x[i]) && isfinite(q->y[i]) && (!p->logx || q->x[i] > 0) &&
           (!p->logy || q->y[i] > 0) && !(p->n_xcats && plot_xcat_of(p, q->x[i]) >= 0);
}

/* True when default-styled series a and b have the same x values and y values within 1%
 * of the y axis: drawn as one line, one of them would be hidden. */
static bool series_overlap(const struct plot *p, const struct series *a, const struct series *b,
                           const struct plot_axis *y)
{
    if (a->n != b->n || a->n < 2 || a->marker != PLOT_MARK_DEFAULT ||
        b->marker != PLOT_MARK_DEFAULT || !y->set)
        return false;
    double span = p->logy ? log(y->hi / y->lo) : y->hi - y->lo;
    for (size_t i = 0; i < a->n; i++) {
        if (a->x[i] != b->x[i])
            return false;
        double d = p->logy ? fabs(log(a->y[i] / b->y[i])) : fabs(a->y[i] - b->y[i]);
        if (!(d <= 0.01 * span))
            return false;
    }
    return true;
}

/*
 * The axes of panel pn from its data (and, on a one-panel plot, its bands): unless a
 * caller's extra sets the range, tics, log scale or offsets (margins that need gnuplot's
 * autoscale), or x categories lay out the x axis. Then the series that would hide behind
 * an earlier one.
 */
void plot_panel_layout(const struct plot *p, int pn, struct panel_layout *L)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    bool integer = true;
    size_t most = 0;
    for (size_t s = 0; s < p->n_series; s++) {
        const struct series *q = &p->series[s];
        if (q->panel != pn)
            continue;
        size_t k = 0;
        for (size_t i = 0; i < q->n; i++) {
            if (!point_ok(p, q, i))
                continue;
            k++;
            x0 = fmin(x0, q->x[i]);
            x1 = fmax(x1, q->x[i]);
            y0 = fmin(y0, q->y[i]);
            y1 = fmax(y1, q->y[i]);
            integer &= q->x[i] == floor(q->x[i]);
        }
        most = k > most ? k : most;
    }
    for (size_t i = 0; i < p->n_bands && p->rows * p->cols == 1 && y0 <= y1; i++)
        if (!p->logy || p->bands[i].y0 > 0) {
            y0 = fmin(y0, p->bands[i].y0);
            y1 = fmax(y1, p->bands[i].y1);
        }
    memset(L, 0, sizeof *L);
    L->one_point = most == 1;
    bool offsets = plot_has_extra(p, "set offsets"); /* the caller's margins need autoscale */
    if (!p->n_xcats && !offsets && !plot_has_extra(p, "set xrange") &&
        !plot_has_extra(p, "set xtics") && !plot_has_extra(p, "set logscale x"))
        plot_axis_layout(x0, x1, p->logx, integer && x1 - x0 <= 100, 0.03, &L->x);
    if (!offsets && !plot_has_extra(p, "set yrange") && !plot_has_extra(p, "set ytics") &&
        !plot_has_extra(p, "set logscale y"))
        plot_axis_layout(y0, y1, p->logy, false, 0.05, &L->y);
    for (size_t s = 0; s < p->n_series; s++) {
        L->overlaps[s] = -1;
        for (size_t t = 0; t < s && L->overlaps[s] < 0 && p->series[s].panel == pn; t++)
            if (p->series[t].panel == pn && L->overlaps[t] < 0 &&
                series_overlap(p, &p->series[s], &p->series[t], &L->y))
                L->overlaps[s] = (int)t;
    }
}

/* The axis label with the common power of ten of its tics: "E [×10^{-9} J]". */
void plot_axis_label(struct buf *g, const char *cmd, const char *label, const char *unit,
                     const struct plot_axis *a)
{
    if (!a->set || !a->exp10 || !label || !*label) {
        plot_label_line(g, cmd, label, unit);
        return;
    }
    char t[600];
    bool dimless = !unit || !*unit || !strcmp(unit, "1");
    snprintf(t, sizeof t, "%s [×10^{%d}%s%s]", label, a->exp10, dimless ? "" : " ",
             dimless ? "" : unit);
    buf_printf(g, "set %s ", cmd);
    plot_gtext(g, t);
    buf_append(g, "\n", 1);
}

/* A panel whose series have one point each: the value beside each point, and a note. */
int plot_one_point_labels(const struct plot *p, struct buf *g, int pn)
{
    int tag = 900;
    char a[40], b[40], v[40];
    for (size_t s = 0; s < p->n_series && tag < 990; s++) {
        const struct series *q = &p->series[s];
        for (size_t i = 0; q->panel == pn && i < q->n && tag < 990; i++) {
            if (!point_ok(p, q, i))
                continue;
            plot_num(a, sizeof a, q->x[i]);
            plot_num(b, sizeof b, q->y[i]);
            snprintf(v, sizeof v, "%.4g", q->y[i]);
            buf_printf(g, "set label %d \"%s\" at first %s, first %s offset 1.2,0 left front\n",
                       tag++, v, a, b);
        }
    }
    buf_printf(g,
               "set label %d \"one point per series: values written beside them\" at graph "
               "0.02, graph 0.96 left front\n",
               tag++);
    return tag;
}
