/*
 * plot_gp: writes a plot (analysis/plot.h) as NAME.dat, NAME.gp and, through gnuplot,
 * NAME.png: every data set is a block of NAME.dat, one script per plot kind.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/plot_impl.h"
#include "common/buf.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"

/*
 * The script and data builders below append to a struct buf as plain statements: its error
 * is sticky (common/buf.h), so each builder returns buf_err() once at the end.
 */

/* The Okabe-Ito palette (Okabe and Ito 2008, "Color Universal Design"), in the order that
 * keeps neighbours apart; black last, yellow (weak on white) second to last. */
static const char *const okabe_ito[8] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                         "#E69F00", "#56B4E9", "#F0E442", "#000000"};
static const int dash_types[4] = {1, 2, 3, 4}; /* solid, dashed, dotted, dash-dot */
static const int point_types[8] = {7, 5, 9, 11, 13, 6, 4, 8};
#define PLOT_N_LT 32

/* Linetypes 1..32: colour i mod 8, dash (i / 8) mod 4, a point type per (colour, dash). */
static void palette_lines(struct buf *g)
{
    for (int i = 0; i < PLOT_N_LT; i++)
        buf_printf(g, "set linetype %d lc rgb '%s' lw 1.5 dt %d pt %d\n", i + 1, okabe_ito[i % 8],
                   dash_types[(i / 8) % 4], point_types[(i + i / 8) % 8]);
    buf_printf(g, "set linetype cycle %d\n", PLOT_N_LT);
}

/* The linetype (1..32) of series s, the idx-th of its panel. */
static int series_lt(const struct series *s, size_t idx)
{
    int c = s->colour >= 0 ? s->colour : (int)(idx % 8);
    int d = s->dash >= 0 ? s->dash : (int)((idx / 8) % 4);
    return 1 + c + 8 * d;
}

/* A plot style with linetype lt first, so the style's own point type and width win. */
static void with_lt(struct buf *g, const char *style, int lt)
{
    size_t n = strcspn(style, " ");
    buf_printf(g, "%.*s lt %d%s", (int)n, style, lt, style + n);
}

/* Bands: translucent rectangles with their border, behind the lines of a line plot and in
 * front of the bars of a bar plot (behind a bar, a range is hidden where it matters). */
static void band_objects(const struct plot *p, struct buf *g)
{
    char a[40], b[40], c[40], d[40];
    for (size_t i = 0; i < p->n_bands; i++) {
        const struct band *q = &p->bands[i];
        plot_num(c, sizeof c, q->y0);
        plot_num(d, sizeof d, q->y1);
        if (isfinite(q->x0) && isfinite(q->x1)) {
            plot_num(a, sizeof a, q->x0);
            plot_num(b, sizeof b, q->x1);
            buf_printf(g, "set object %zu rect from first %s, first %s to first %s, first %s",
                       101 + i, a, c, b, d);
        } else {
            buf_printf(g, "set object %zu rect from graph 0, first %s to graph 1, first %s",
                       101 + i, c, d);
        }
        buf_printf(g, " %s fc rgb '%s' fs transparent solid %s border lc rgb '%s' lw %s dt 2\n",
                   p->kind == PLOT_BARS ? "front" : "behind", okabe_ito[q->colour],
                   p->kind == PLOT_BARS ? "0.12" : "0.22", okabe_ito[q->colour],
                   p->kind == PLOT_BARS ? "2.5" : "1.5");
    }
}

/* The legend entries of the bands (one per distinct label), appended to a plot command;
 * `first`: nothing precedes them in the command. */
static void band_keys(const struct plot *p, struct buf *g, bool first)
{
    for (size_t i = 0; i < p->n_bands; i++) {
        const struct band *q = &p->bands[i];
        bool seen = !q->label;
        for (size_t j = 0; j < i && !seen; j++)
            seen = p->bands[j].label && !strcmp(p->bands[j].label, q->label);
        if (seen)
            continue;
        buf_printf(g,
                   "%skeyentry with boxes lc rgb '%s' fs transparent solid 0.22 border lc rgb "
                   "'%s' title ",
                   first ? "plot " : ", \\\n    ", okabe_ito[q->colour], okabe_ito[q->colour]);
        plot_gtext(g, q->label);
        first = false;
    }
}

/* The number of legend entries and the longest one's length. */
static size_t key_entries(const struct plot *p, size_t *longest)
{
    size_t n = 0;
    *longest = 0;
    if (p->kind == PLOT_BARS) {
        for (size_t i = 0; i < p->n_bar; i++, n++)
            *longest = strlen(p->bar_names[i]) > *longest ? strlen(p->bar_names[i]) : *longest;
    } else { /* the fullest panel: each panel has its own legend */
        for (int pn = 0; pn < p->rows * p->cols; pn++) {
            size_t m = 0;
            for (size_t i = 0; i < p->n_series; i++) {
                if (p->series[i].panel != pn || !*p->series[i].name)
                    continue;
                m++;
                size_t len = strlen(p->series[i].name);
                *longest = len > *longest ? len : *longest;
            }
            n = m > n ? m : n;
        }
    }
    for (size_t i = 0; i < p->n_bands; i++)
        if (p->bands[i].label) {
            n++;
            *longest = strlen(p->bands[i].label) > *longest ? strlen(p->bands[i].label) : *longest;
        }
    return n;
}

static int write_file(const char *path, const struct buf *b, struct errmsg *e)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return errmsg_set(e, ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    size_t w = fwrite(b->data, 1, b->len, f);
    int en = w != b->len ? errno : 0;
    if (fclose(f) && !en)
        en = errno;
    if (en || w != b->len)
        return errmsg_set(e, ERR_IO, "cannot write '%s': %s", path, strerror(en ? en : EIO));
    return 0;
}

int plot_xcat_of(const struct plot *p, double v)
{
    for (size_t i = 0; i < p->n_xcats; i++)
        if (p->xcats[i].value == v)
            return (int)i;
    return -1;
}

/*
 * Where the x categories are drawn: pos[i] left of the numeric x values (lo..hi), a
 * separator at *sep, the axis from *left; *step and *start: numeric tics from start on,
 * so none falls among the categories. Log axes step by factors.
 */
struct xcat_layout {
    double pos[PLOT_MAX_XCAT], sep, left, start, step;
};

static double nice_step(double span)
{
    double m = pow(10, floor(log10(span))), f = span / m;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * m;
}

/* Layout values to 6 significant digits, so the script reads 0.01, not 0.00999999. */
static double r6(double v)
{
    char t[40];
    snprintf(t, sizeof t, "%.6g", v);
    return strtod(t, NULL);
}

static void round_layout(struct xcat_layout *L, size_t n)
{
    for (size_t i = 0; i < n; i++)
        L->pos[i] = r6(L->pos[i]);
    L->sep = r6(L->sep);
    L->left = r6(L->left);
    L->start = r6(L->start);
    L->step = r6(L->step);
}

static void xcat_layout(const struct plot *p, struct xcat_layout *L)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t s = 0; s < p->n_series; s++)
        for (size_t i = 0; i < p->series[s].n; i++) {
            double x = p->series[s].x[i];
            if (isfinite(x) && plot_xcat_of(p, x) < 0 && (!p->logx || x > 0)) {
                lo = fmin(lo, x);
                hi = fmax(hi, x);
            }
        }
    size_t n = p->n_xcats;
    if (p->logx) {
        if (!(lo <= hi))
            lo = hi = 1;
        double f = fmax(2.0, pow(hi / lo, 0.2));
        for (size_t i = 0; i < n; i++)
            L->pos[i] = lo / pow(f, (double)(n - i));
        L->sep = lo / sqrt(f);
        L->left = L->pos[0] / sqrt(f);
        L->start = pow(10, ceil(log10(lo) - 1e-9));
        L->step = 10;
        round_layout(L, n);
        return;
    }
    if (!(lo <= hi))
        lo = hi = 0;
    double span = hi > lo ? hi - lo : (lo ? fabs(lo) : 1);
    double gap = 0.25 * span;
    for (size_t i = 0; i < n; i++)
        L->pos[i] = lo - gap * (double)(n - i);
    L->sep = lo - 0.5 * gap;
    L->left = L->pos[0] - 0.5 * gap;
    L->step = nice_step(span / 5);
    L->start = ceil(lo / L->step - 1e-9) * L->step;
    round_layout(L, n);
}

/* Text inside a '#' comment line of NAME.dat: a newline or carriage return in a name or
 * label is written as \n or \r, so the line stays one comment (numpy.loadtxt and
 * pandas.read_csv(comment='#') read the file). */
static void dat_text(struct buf *d, const char *s)
{
    for (; s && *s && !buf_err(d); s++) {
        if (*s == '\n')
            buf_append(d, "\\n", 2);
        else if (*s == '\r')
            buf_append(d, "\\r", 2);
        else
            buf_append(d, s, 1);
    }
}

/* Data blocks: series (lines/scatter/overlays/hist), heatmap block, bars table. */
static int build_dat(struct plot *p, struct buf *d, size_t *heat_index)
{
    buf_printf(d, "# %s: data for %s.gp (blocks separated by two blank lines)\n", p->name, p->name);
    char a[40], b[40], c[40];
    size_t block = 0;
    if (p->kind == PLOT_GANTT)
        return plot_gantt_dat(p, d);
    if (p->kind == PLOT_BARS) {
        buf_printf(d, "# category");
        for (size_t s = 0; s < p->n_bar; s++) {
            buf_append(d, " ", 1);
            plot_gq(d, p->bar_names[s]);
        }
        buf_printf(d, "\n");
        for (size_t i = 0; i < p->n_cat && !buf_err(d); i++) {
            plot_gq(d, p->cats[i]);
            for (size_t s = 0; s < p->n_bar; s++) {
                plot_num(a, sizeof a, p->bar_vals[s * p->n_cat + i]);
                buf_printf(d, " %s", a);
            }
            buf_append(d, "\n", 1);
        }
        return buf_err(d);
    }
    struct xcat_layout L;
    if (p->n_xcats)
        xcat_layout(p, &L);
    for (size_t i = 0; i < p->n_xcats; i++) {
        plot_num(a, sizeof a, p->xcats[i].value);
        plot_num(b, sizeof b, L.pos[i]);
        buf_printf(d, "# x = %s (", a);
        dat_text(d, p->xcats[i].label);
        buf_printf(d, ") is a category, drawn at x = %s after a blank line\n", b);
    }
    for (size_t s = 0; s < p->n_series && !buf_err(d); s++, block++) {
        const struct series *q = &p->series[s];
        buf_printf(d, "%s# block %zu: ", block ? "\n\n" : "", block);
        dat_text(d, q->name);
        buf_printf(d, " (%s)\n", q->w ? "bin centre, count, bin width" : "x, y");
        for (size_t i = 0; i < q->n && !buf_err(d); i++) {
            if (p->n_xcats && plot_xcat_of(p, q->x[i]) >= 0)
                continue; /* categories after the numeric points, apart from their line */
            plot_num(a, sizeof a, q->x[i]);
            plot_num(b, sizeof b, q->y[i]);
            if (q->w) {
                plot_num(c, sizeof c, q->w[i]);
                buf_printf(d, "%s %s %s\n", a, b, c);
            } else {
                buf_printf(d, "%s %s\n", a, b);
            }
        }
        for (size_t k = 0; k < p->n_xcats; k++)
            for (size_t i = 0; i < q->n && !buf_err(d); i++)
                if (q->x[i] == p->xcats[k].value) {
                    plot_num(a, sizeof a, L.pos[k]);
                    plot_num(b, sizeof b, q->y[i]);
                    buf_printf(d, "\n%s %s\n", a, b);
                }
    }
    if (p->kind == PLOT_HEATMAP && p->hz && !buf_err(d)) {
        *heat_index = block;
        buf_printf(d, "%s# block %zu: heatmap (x, y, z)\n", block ? "\n\n" : "", block);
        for (size_t iy = 0; iy < p->ny && !buf_err(d); iy++) {
            for (size_t ix = 0; ix < p->nx; ix++) {
                plot_num(a, sizeof a, p->hx[ix]);
                plot_num(b, sizeof b, p->hy[iy]);
                plot_num(c, sizeof c, p->hz[iy * p->nx + ix]);
                buf_printf(d, "%s %s %s\n", a, b, c);
            }
            buf_append(d, "\n", 1);
        }
    }
    return buf_err(d);
}

/* The gnuplot style of series s, dflt when it has no marker of its own. */
static const char *series_style(const struct series *s, const char *dflt)
{
    switch (s->marker) {
    case PLOT_MARK_OPEN:
        return "points pt 6 ps 1.2";
    case PLOT_MARK_FILLED:
        return "points pt 7 ps 0.6";
    default:
        return dflt;
    }
}

/*
 * True when a series of panel pn has a point gnuplot can place (x and y finite, positive
 * on a log axis). Otherwise false, with ranges = " [x0:x1] [y0:y1]" for the panel's plot
 * command: x over the finite x values when there are any (widened around a single one),
 * else [0:1]; y [0:1]; [1:10] on log axes.
 */
static bool panel_drawable(const struct plot *p, int pn, char *ranges, size_t len)
{
    double x0 = INFINITY, x1 = -INFINITY;
    for (size_t s = 0; s < p->n_series; s++) {
        const struct series *q = &p->series[s];
        if (q->panel != pn)
            continue;
        for (size_t i = 0; i < q->n; i++) {
            bool xok = isfinite(q->x[i]) && (!p->logx || q->x[i] > 0);
            if (xok && isfinite(q->y[i]) && (!p->logy || q->y[i] > 0))
                return true;
            if (xok) {
                x0 = fmin(x0, q->x[i]);
                x1 = fmax(x1, q->x[i]);
            }
        }
    }
    char a[40], b[40];
    if (x0 == x1) { /* one x value: a range around it */
        x0 = p->logx ? x0 / 2 : x0 - 1;
        x1 = p->logx ? x1 * 2 : x1 + 1;
    }
    if (x0 < x1) {
        plot_num(a, sizeof a, x0);
        plot_num(b, sizeof b, x1);
    } else {
        snprintf(a, sizeof a, "%s", p->logx ? "1" : "0");
        snprintf(b, sizeof b, "%s", p->logx ? "10" : "1");
    }
    snprintf(ranges, len, " [%s:%s] [%s]", a, b, p->logy ? "1:10" : "0:1");
    return false;
}

/* Panel pn's series: the plot command (after its ranges), each series in its style; a
 * series that would hide behind an earlier one gets open markers, a dash and a note. */
static void panel_series(const struct plot *p, struct buf *g, const char *dat, int pn,
                         const char *ranges, const struct panel_layout *L)
{
    static const char *const open_pts[4] = {"6 ps 1.8", "4 ps 1.8", "8 ps 1.8", "12 ps 2"};
    const char *style = p->kind == PLOT_LINE ? "linespoints" : "points pt 7 ps 0.6";
    bool first = true;
    size_t idx = 0, n_over = 0;
    for (size_t s = 0; s < p->n_series; s++) {
        const struct series *q = &p->series[s];
        if (q->panel != pn)
            continue;
        buf_printf(g, "%s%s %s index %zu using 1:2 with ", first ? "plot" : ", \\\n    ",
                   first ? ranges : "", dat, s);
        if (L->overlaps[s] >= 0) {
            char st[80];
            snprintf(st, sizeof st, "%s dt 2 pt %s",
                     p->kind == PLOT_LINE ? "linespoints" : "points", open_pts[n_over++ % 4]);
            with_lt(g, st, series_lt(q, idx++));
            char t[600];
            snprintf(t, sizeof t, "%s (overlaps %s)", q->name, p->series[L->overlaps[s]].name);
            buf_printf(g, " title ");
            plot_gtext(g, t);
        } else {
            with_lt(g, series_style(q, style), series_lt(q, idx++));
            buf_printf(g, " title ");
            plot_gtext(g, q->name);
        }
        first = false;
    }
    if (first) /* an empty panel still gets its frame */
        buf_printf(g, "plot%s NaN notitle", ranges);
}

/* Line and scatter plots: one plot command per panel (a multiplot with several). */
static int gp_lines(struct plot *p, struct buf *g, const char *dat)
{
    bool multi = p->rows * p->cols > 1;
    /* no point on the frame: a margin inside the axes (a caller's "set offsets" wins) */
    bool own_offsets = false;
    for (size_t i = 0; i < p->n_extra; i++)
        own_offsets |= !strncmp(p->extra[i], "set offsets", 11);
    if (!own_offsets && !(p->logx && p->logy)) /* linear axes only */
        buf_printf(g, "set offsets graph %s, graph %s, graph %s, graph %s\n",
                   p->logx ? "0" : "0.03", p->logx ? "0" : "0.03", p->logy ? "0" : "0.05",
                   p->logy ? "0" : "0.05");
    if (p->n_xcats) {
        struct xcat_layout L;
        xcat_layout(p, &L);
        char a[40], b[40];
        plot_num(a, sizeof a, L.start);
        plot_num(b, sizeof b, L.step);
        buf_printf(g, "set xtics %s, %s\n", a, b);
        for (size_t i = 0; i < p->n_xcats; i++) {
            plot_num(a, sizeof a, L.pos[i]);
            buf_printf(g, "set xtics add (");
            plot_gtext_mode(g, p->xcats[i].label, true);
            buf_printf(g, " %s)\n", a);
        }
        plot_num(a, sizeof a, L.sep);
        buf_printf(g,
                   "set arrow 100 from first %s, graph 0 to first %s, graph 1 nohead dt 3 "
                   "lc rgb 'gray50'\n",
                   a, a);
        plot_num(a, sizeof a, L.left);
        buf_printf(g, "set xrange [%s:*]\n", a);
    }
    if (multi) {
        buf_printf(g, "set multiplot layout %d,%d", p->rows, p->cols);
        if (p->title) {
            buf_printf(g, " title ");
            plot_gtext(g, p->title);
        }
        buf_append(g, "\n", 1);
    }
    int last_used = -1; /* the last panel with a series or a title */
    for (size_t s = 0; s < p->n_series; s++)
        last_used = p->series[s].panel > last_used ? p->series[s].panel : last_used;
    for (int pn = 0; pn < p->rows * p->cols; pn++)
        if (p->panels[pn].title)
            last_used = pn > last_used ? pn : last_used;
    for (int pn = 0; pn < p->rows * p->cols && !buf_err(g); pn++) {
        const struct panel *q = &p->panels[pn];
        if (multi && pn > last_used) { /* the spare cells of a grid stay blank */
            buf_printf(g, "set multiplot next\n");
            continue;
        }
        if (multi) {
            buf_printf(g, "set title ");
            plot_gtext(g, q->title ? q->title : "");
            buf_append(g, "\n", 1);
        }
        /*
         * gnuplot fails ("all points y value undefined") when nothing in a plot command
         * can be placed: such a panel (no series, or only NaN / non-positive-on-log
         * values) gets fixed ranges of its own plot command and a "no finite values"
         * label, so the other figures of a run still render.
         */
        char ranges[120] = "";
        struct panel_layout *L = mem_calloc(1, sizeof *L);
        if (!L)
            return ERR_NOMEM;
        bool drawable = panel_drawable(p, pn, ranges, sizeof ranges);
        if (drawable)
            plot_panel_layout(p, pn, L);
        else
            buf_printf(g, "set label 999 \"no finite values\" at graph 0.5, graph 0.5 "
                          "center\n");
        plot_axis_label(g, "xlabel", q->xlabel ? q->xlabel : p->xlabel,
                        q->xlabel ? q->xunit : p->xunit, &L->x);
        plot_axis_label(g, "ylabel", q->ylabel ? q->ylabel : p->ylabel,
                        q->ylabel ? q->yunit : p->yunit, &L->y);
        if (L->x.set)
            plot_axis_write(g, "x", &L->x);
        if (L->y.set)
            plot_axis_write(g, "y", &L->y);
        int tags = L->one_point ? plot_one_point_labels(p, g, pn) : 900;
        panel_series(p, g, dat, pn, ranges, L);
        band_keys(p, g, false);
        buf_append(g, "\n", 1);
        if (*ranges)
            buf_printf(g, "unset label 999\n");
        for (int t = 900; t < tags; t++)
            buf_printf(g, "unset label %d\n", t);
        if (multi && L->x.set) /* the next panel lays out its own axes */
            buf_printf(g, "set autoscale x\nset xtics autofreq\n");
        if (multi && L->y.set)
            buf_printf(g, "set autoscale y\nset ytics autofreq\n");
        mem_free(L);
    }
    if (multi)
        buf_printf(g, "unset multiplot\n");
    return buf_err(g);
}

/* A heatmap: the cells as an image, optional value labels, overlaid series. */
static int gp_heatmap(struct plot *p, struct buf *g, const char *dat, size_t heat_index)
{
    plot_label_line(g, "xlabel", p->xlabel, p->xunit);
    plot_label_line(g, "ylabel", p->ylabel, p->yunit);
    plot_label_line(g, "cblabel", p->zlabel, p->zunit);
    bool own_palette = false; /* a caller's "set palette ..." extra wins over the default */
    for (size_t i = 0; i < p->n_extra; i++)
        own_palette |= !strncmp(p->extra[i], "set palette", 11);
    bool own_xtics = false, int_x = p->nx >= 1 && p->nx <= 30;
    for (size_t i = 0; i < p->n_extra; i++)
        own_xtics |= !strncmp(p->extra[i], "set xtics", 9);
    for (size_t i = 0; int_x && i < p->nx; i++)
        int_x = p->hx[i] == floor(p->hx[i]) && (!i || p->hx[i] == p->hx[i - 1] + 1);
    if (int_x && !own_xtics) /* a few whole-numbered columns (steps): a tic on each */
        buf_printf(g, "set xtics 1\n");
    if (own_palette)
        ;
    else if (p->palette == PLOT_PAL_CYCLIC) /* hue wheel: equal colours at both ends */
        buf_printf(g, "set palette model HSV functions gray, 1, 1\n");
    else
        buf_printf(g, "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 "
                      "'#21908d', 0.75 '#5dc963', 1 '#fde725')\n");
    buf_printf(g, "set colorbox\nset key outside top center horizontal\nunset grid\n");
    if (plot_heat_log_cb(p) && !plot_has_extra(p, "set logscale cb") &&
        !plot_has_extra(p, "set cbrange") && !own_palette && p->palette != PLOT_PAL_CYCLIC)
        buf_printf(g, "set logscale cb\nset format cb \"%%g\"\n");
    if (buf_err(g))
        return buf_err(g);
    if (!p->hz)
        return ERR_USAGE;
    {
        /* Frame the cells exactly: half a step beyond the first and last centres. */
        double hx = p->nx > 1 ? 0.5 * (p->hx[1] - p->hx[0]) : 0.5;
        double hy = p->ny > 1 ? 0.5 * (p->hy[1] - p->hy[0]) : 0.5;
        char a[40], b[40], c[40], d[40];
        plot_num(a, sizeof a, p->hx[0] - hx);
        plot_num(b, sizeof b, p->hx[p->nx - 1] + hx);
        plot_num(c, sizeof c, p->hy[0] - hy);
        plot_num(d, sizeof d, p->hy[p->ny - 1] + hy);
        if (p->image_rows)
            buf_printf(g, "set xrange [%s:%s]\nset yrange [%s:%s]\n", a, b, d, c);
        else
            buf_printf(g, "set xrange [%s:%s]\nset yrange [%s:%s]\n", a, b, c, d);
    }
    buf_printf(g, "plot %s index %zu using 1:2:3 with image notitle", dat, heat_index);
    if (p->label_fmt) {
        buf_printf(g, ", \\\n    %s index %zu using 1:2:(sprintf(", dat, heat_index);
        plot_gq(g, p->label_fmt);
        buf_printf(g, ", $3)) with labels textcolor rgb \"white\" notitle");
    }
    for (size_t s = 0; s < p->n_series; s++) {
        buf_printf(g, ", \\\n    %s index %zu using 1:2 with ", dat, s);
        with_lt(g, series_style(&p->series[s], "linespoints lw 2"), series_lt(&p->series[s], s));
        buf_printf(g, " title ");
        plot_gtext(g, p->series[s].name);
    }
    buf_append(g, "\n", 1);
    return buf_err(g);
}

/* A histogram: one boxes series per data set. */
static int gp_hist(struct plot *p, struct buf *g, const char *dat)
{
    plot_label_line(g, "xlabel", p->xlabel, p->xunit);
    plot_label_line(g, "ylabel", p->ylabel ? p->ylabel : "count", p->yunit);
    buf_printf(g, "set style fill transparent solid 0.5 border\n");
    for (size_t s = 0; s < p->n_series; s++) {
        buf_printf(g, "%s %s index %zu using 1:2:3 with boxes lt %d title ",
                   s ? ", \\\n    " : "plot", dat, s, series_lt(&p->series[s], s));
        plot_gtext(g, p->series[s].name);
    }
    if (!p->n_series)
        buf_printf(g, "plot NaN notitle");
    band_keys(p, g, false);
    buf_append(g, "\n", 1);
    return buf_err(g);
}

/* Bars: clustered or stacked gnuplot histograms of the category table. */
static int gp_bars(struct plot *p, struct buf *g, const char *dat)
{
    struct plot_axis y;
    plot_bars_axis(p, &y);
    plot_label_line(g, "xlabel", p->xlabel, p->xunit);
    plot_axis_label(g, "ylabel", p->ylabel, p->yunit, &y);
    buf_printf(g,
               "set style data histograms\nset style histogram %s\n"
               "set style fill solid 0.8 border -1\nset boxwidth 0.8\n",
               p->stacked ? "rowstacked" : "clustered gap 1");
    bool own_xtics = false; /* a caller's "set xtics ..." extra wins over the default */
    for (size_t i = 0; i < p->n_extra; i++)
        own_xtics |= !strncmp(p->extra[i], "set xtics", 9);
    if (!own_xtics)
        buf_printf(g, "set xtics rotate by -30\n");
    buf_printf(g, "set xtics noenhanced\n"); /* category names are data, printed as written */
    /* autoscaled top, at least bar_top when set (gnuplot's "min < *" limit) */
    char top[40];
    plot_num(top, sizeof top, p->bar_top);
    if (y.set)
        plot_axis_write(g, "y", &y);
    else if (p->bar_top > 0)
        buf_printf(g, "set yrange [0:%s<*]\n", top);
    else if (!p->logy)
        buf_printf(g, "set yrange [0:*]\n");
    for (size_t s = 0; s < p->n_bar; s++) {
        buf_printf(g, "%s %s using %zu%s title ", s ? ", \\\n    " : "plot", s ? "''" : dat, s + 2,
                   s ? "" : ":xtic(1)");
        plot_gtext(g, p->bar_names[s]);
        buf_printf(g, " lt %d", 1 + (int)(s % PLOT_N_LT));
        if (p->bar_hatch[s]) /* diagonal hatch in the series colour */
            buf_printf(g, " fs pattern 5 border -1");
    }
    band_keys(p, g, false);
    buf_append(g, "\n", 1);
    return buf_err(g);
}

/* The format and size (px) a plot is written in: its own, scaled by plot_set_output. */
static enum plot_format out_format(const struct plot *p, int *w, int *h)
{
    struct plot_output o;
    plot_get_output(&o);
    *w = p->width;
    *h = p->height;
    if (o.width_px > 0 && o.height_px > 0) {
        *w = p->own_size ? (int)lround((double)p->width * o.width_px / 800.0) : o.width_px;
        *h = p->own_size ? (int)lround((double)p->height * o.height_px / 560.0) : o.height_px;
    }
    return p->has_format ? p->format : o.format;
}

/* The terminal line: cairo terminals with enhanced text; vector sizes at 100 px per inch. */
static void terminal_line(struct buf *g, enum plot_format f, int w, int h)
{
    double wi = w / 100.0, hi = h / 100.0;
    switch (f) {
    case PLOT_FMT_PNG:
        buf_printf(g, "set terminal pngcairo enhanced size %d,%d font \"sans,10\"\n", w, h);
        break;
    case PLOT_FMT_PDF:
        buf_printf(g, "set terminal pdfcairo enhanced color size %.2fin,%.2fin font \"sans,8\"\n",
                   wi, hi);
        break;
    case PLOT_FMT_SVG:
        buf_printf(g,
                   "set terminal svg enhanced size %d,%d font \"sans,10\" background "
                   "rgb 'white'\n",
                   w, h);
        break;
    case PLOT_FMT_EPS:
        buf_printf(g, "set terminal epscairo enhanced color size %.2fin,%.2fin font \"sans,8\"\n",
                   wi, hi);
        break;
    case PLOT_FMT_EPSLATEX:
        buf_printf(g, "set terminal epslatex color size %.2fin,%.2fin\n", wi, hi);
        break;
    }
}

/* The legend's place: right of the data when short, below it when long or many. */
static const char *key_place(const struct plot *p)
{
    size_t longest, n = key_entries(p, &longest);
    if (n > PLOT_KEY_RIGHT_MAX || longest > PLOT_KEY_RIGHT_CHARS)
        return "set key below";
    return "set key outside right top vertical";
}

static int build_gp(struct plot *p, struct buf *g, size_t heat_index)
{
    int w, h;
    enum plot_format f = out_format(p, &w, &h);
    plot_text_latex = f == PLOT_FMT_EPSLATEX;
    const char *ext = plot_format_ext(f);
    buf_printf(g,
               "# %s: gnuplot script written by acceltrace; run 'gnuplot %s.gp' in this "
               "folder to render %s.%s from %s.dat\n",
               p->name, p->name, p->name, ext, p->name);
    terminal_line(g, f, w, h);
    buf_printf(g, "set output '%s.%s'\nset grid\n%s\n", p->name, ext, key_place(p));
    palette_lines(g);
    char dat[300];
    snprintf(dat, sizeof dat, "'%s.dat'", p->name);
    bool multi = p->rows * p->cols > 1;
    if (p->title && !multi) {
        buf_printf(g, "set title ");
        plot_gtext(g, p->title);
        buf_append(g, "\n", 1);
    }
    band_objects(p, g);
    if (p->logx)
        buf_printf(g, "set logscale x\n");
    if (p->logy)
        buf_printf(g, "set logscale y\n");
    for (size_t i = 0; i < p->n_extra; i++)
        buf_printf(g, "%s\n", p->extra[i]);
    if (buf_err(g))
        return buf_err(g);
    switch (p->kind) {
    case PLOT_LINE:
    case PLOT_SCATTER:
        return gp_lines(p, g, dat);
    case PLOT_HEATMAP:
        return gp_heatmap(p, g, dat, heat_index);
    case PLOT_HIST:
        return gp_hist(p, g, dat);
    case PLOT_BARS:
        return gp_bars(p, g, dat);
    case PLOT_GANTT:
        return plot_gantt_gp(p, g, dat);
    }
    return 0;
}

/* Runs gnuplot NAME.gp in dir; ERR_EXTERNAL with its last stderr line on failure. */
static int run_gnuplot(struct plot *p, const char *dir)
{
    char log[4096];
    snprintf(log, sizeof log, "%s/.%s.gnuplot.log", dir, p->name);
    pid_t pid = fork();
    if (pid < 0)
        return errmsg_set(&p->err, ERR_EXTERNAL, "cannot start gnuplot: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
            close(fd);
        }
        if (chdir(dir))
            _exit(126);
        char gp[300];
        snprintf(gp, sizeof gp, "%s.gp", p->name);
        execlp("gnuplot", "gnuplot", gp, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return errmsg_set(&p->err, ERR_EXTERNAL, "cannot wait for gnuplot");
    int rc = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char last[300] = "";
        FILE *f = fopen(log, "r");
        if (f) {
            char line[300];
            while (fgets(line, sizeof line, f))
                if (line[0] != '\n')
                    snprintf(last, sizeof last, "%s", line);
            fclose(f);
        }
        last[strcspn(last, "\n")] = 0;
        rc = errmsg_set(&p->err, ERR_EXTERNAL, "gnuplot failed on '%s/%s.gp' (status %d): %s", dir,
                        p->name, WIFEXITED(status) ? WEXITSTATUS(status) : -1, last);
    }
    remove(log);
    return rc;
}

int plot_write(struct plot *p, const char *dir, bool *rendered)
{
    if (rendered)
        *rendered = false;
    struct buf d, g;
    buf_init(&d);
    buf_init(&g);
    size_t heat_index = 0;
    int rc = build_dat(p, &d, &heat_index);
    if (!rc)
        rc = build_gp(p, &g, heat_index);
    if (rc) {
        rc = errmsg_set(&p->err, rc, "cannot build plot '%s': %s", p->name, err_str(rc));
        goto done;
    }
    if ((rc = io_mkdir_p(dir, 0755, &p->err)))
        goto done;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.dat", dir, p->name);
    if ((rc = write_file(path, &d, &p->err)))
        goto done;
    snprintf(path, sizeof path, "%s/%s.gp", dir, p->name);
    if ((rc = write_file(path, &g, &p->err)))
        goto done;
    if (!plot_gnuplot_available())
        goto done;
    if ((rc = run_gnuplot(p, dir)))
        goto done;
    if (rendered)
        *rendered = true;
done:
    buf_release(&d);
    buf_release(&g);
    return rc;
}
