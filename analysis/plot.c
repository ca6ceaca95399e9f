/*
 * plot: data + gnuplot script + PNG (see plot.h). Every data set is a gnuplot block of
 * NAME.dat (blocks separated by two blank lines, addressed with `index`), so the script
 * reads one file. Text goes out with the terminal's enhanced mode off, so names such as
 * energy_j print as written.
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

#include "analysis/plot.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/mem.h"
#include "formats/csv.h"

#define PLOT_MAX_PANELS 64
#define PLOT_MAX_SERIES 256

struct series {
    char *name;
    int panel;
    double *x, *y;   /* (n); histogram: x = bin centres, y = counts, w = widths */
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
    double bar_top; /* > 0: the y axis reaches at least this value */
    bool *bar_hatch; /* (n_bar) series drawn hatched instead of solid */
    struct errmsg err;
};

static char *dup_or_null(const char *s)
{
    return s ? mem_strdup(s) : NULL;
}

static void set_str(char **dst, const char *s)
{
    mem_free(*dst);
    *dst = dup_or_null(s);
}

struct plot *plot_new(const char *name, enum plot_kind kind)
{
    struct plot *p = mem_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (!(p->name = mem_strdup(name))) {
        mem_free(p);
        return NULL;
    }
    p->kind = kind;
    p->width = 800;
    p->height = 560;
    p->rows = p->cols = 1;
    return p;
}

void plot_free(struct plot *p)
{
    if (!p)
        return;
    mem_free(p->name);
    mem_free(p->title);
    mem_free(p->xlabel);
    mem_free(p->xunit);
    mem_free(p->ylabel);
    mem_free(p->yunit);
    mem_free(p->zlabel);
    mem_free(p->zunit);
    for (size_t i = 0; i < p->n_extra; i++)
        mem_free(p->extra[i]);
    mem_free(p->extra);
    for (int i = 0; i < PLOT_MAX_PANELS; i++) {
        mem_free(p->panels[i].title);
        mem_free(p->panels[i].xlabel);
        mem_free(p->panels[i].xunit);
        mem_free(p->panels[i].ylabel);
        mem_free(p->panels[i].yunit);
    }
    for (size_t i = 0; i < p->n_series; i++) {
        mem_free(p->series[i].name);
        mem_free(p->series[i].x);
        mem_free(p->series[i].y);
        mem_free(p->series[i].w);
    }
    mem_free(p->series);
    mem_free(p->hx);
    mem_free(p->hy);
    mem_free(p->hz);
    mem_free(p->label_fmt);
    for (size_t i = 0; i < p->n_cat; i++)
        mem_free(p->cats[i]);
    for (size_t i = 0; i < p->n_bar; i++)
        mem_free(p->bar_names[i]);
    mem_free(p->cats);
    mem_free(p->bar_names);
    mem_free(p->bar_vals);
    mem_free(p->bar_hatch);
    mem_free(p);
}

void plot_title(struct plot *p, const char *title)
{
    set_str(&p->title, title);
}

void plot_xlabel(struct plot *p, const char *label, const char *unit)
{
    set_str(&p->xlabel, label);
    set_str(&p->xunit, unit);
}

void plot_ylabel(struct plot *p, const char *label, const char *unit)
{
    set_str(&p->ylabel, label);
    set_str(&p->yunit, unit);
}

void plot_zlabel(struct plot *p, const char *label, const char *unit)
{
    set_str(&p->zlabel, label);
    set_str(&p->zunit, unit);
}

void plot_logscale(struct plot *p, bool logx, bool logy)
{
    p->logx = logx;
    p->logy = logy;
}

void plot_size(struct plot *p, int width_px, int height_px)
{
    if (width_px >= 100 && width_px <= 10000)
        p->width = width_px;
    if (height_px >= 100 && height_px <= 10000)
        p->height = height_px;
}

void plot_extra(struct plot *p, const char *line)
{
    char **n = mem_realloc(p->extra, (p->n_extra + 1) * sizeof *n);
    if (!n)
        return;
    p->extra = n;
    if ((n[p->n_extra] = mem_strdup(line)))
        p->n_extra++;
}

int plot_panels(struct plot *p, int rows, int cols)
{
    if (rows < 1 || cols < 1 || rows * cols > PLOT_MAX_PANELS ||
        (p->kind != PLOT_LINE && p->kind != PLOT_SCATTER))
        return errmsg_set(&p->err, ERR_USAGE, "bad panel layout %dx%d for plot '%s'", rows, cols,
                          p->name);
    p->rows = rows;
    p->cols = cols;
    return 0;
}

int plot_panel(struct plot *p, int panel, const char *title, const char *xlabel,
               const char *xunit, const char *ylabel, const char *yunit)
{
    if (panel < 0 || panel >= p->rows * p->cols)
        return errmsg_set(&p->err, ERR_USAGE, "no panel %d in plot '%s'", panel, p->name);
    struct panel *q = &p->panels[panel];
    set_str(&q->title, title);
    set_str(&q->xlabel, xlabel);
    set_str(&q->xunit, xunit);
    set_str(&q->ylabel, ylabel);
    set_str(&q->yunit, yunit);
    return 0;
}

static int add_series(struct plot *p, int panel, const char *name, const double *x,
                      const double *y, const double *w, size_t n)
{
    if (p->n_series >= PLOT_MAX_SERIES)
        return errmsg_set(&p->err, ERR_LIMIT, "too many series in plot '%s'", p->name);
    struct series *ns = mem_realloc(p->series, (p->n_series + 1) * sizeof *ns);
    if (!ns)
        return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    p->series = ns;
    struct series *s = &ns[p->n_series];
    memset(s, 0, sizeof *s);
    s->name = mem_strdup(name ? name : "");
    s->panel = panel;
    s->n = n;
    s->x = mem_alloc((n + 1) * sizeof *s->x);
    s->y = mem_alloc((n + 1) * sizeof *s->y);
    if (w)
        s->w = mem_alloc((n + 1) * sizeof *s->w);
    if (!s->name || !s->x || !s->y || (w && !s->w)) {
        mem_free(s->name);
        mem_free(s->x);
        mem_free(s->y);
        mem_free(s->w);
        return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    }
    if (n) {
        memcpy(s->x, x, n * sizeof *x);
        memcpy(s->y, y, n * sizeof *y);
        if (w)
            memcpy(s->w, w, n * sizeof *w);
    }
    p->n_series++;
    return 0;
}

int plot_series(struct plot *p, int panel, const char *name, const double *x, const double *y,
                size_t n)
{
    if (p->kind == PLOT_HIST || p->kind == PLOT_BARS)
        return errmsg_set(&p->err, ERR_USAGE, "plot_series on a %s plot '%s'",
                          p->kind == PLOT_HIST ? "histogram" : "bar", p->name);
    if (panel < 0 || panel >= p->rows * p->cols)
        return errmsg_set(&p->err, ERR_USAGE, "no panel %d in plot '%s'", panel, p->name);
    return add_series(p, panel, name, x, y, NULL, n);
}

int plot_series_marker(struct plot *p, enum plot_marker marker)
{
    if (p->kind == PLOT_HIST || p->kind == PLOT_BARS || !p->n_series)
        return errmsg_set(&p->err, ERR_USAGE, "plot_series_marker without a series in plot '%s'",
                          p->name);
    if (marker != PLOT_MARK_DEFAULT && marker != PLOT_MARK_OPEN && marker != PLOT_MARK_FILLED)
        return errmsg_set(&p->err, ERR_USAGE, "bad marker %d for plot '%s'", (int)marker,
                          p->name);
    p->series[p->n_series - 1].marker = marker;
    return 0;
}

int plot_heatmap(struct plot *p, const double *x, size_t nx, const double *y, size_t ny,
                 const double *z, const char *label_fmt)
{
    if (p->kind != PLOT_HEATMAP || !nx || !ny)
        return errmsg_set(&p->err, ERR_USAGE, "plot_heatmap on plot '%s'", p->name);
    size_t nz;
    if (!mem_mul(nx, ny, &nz))
        return errmsg_set(&p->err, ERR_LIMIT, "heatmap too large");
    mem_free(p->hx);
    mem_free(p->hy);
    mem_free(p->hz);
    p->hx = mem_alloc(nx * sizeof *x);
    p->hy = mem_alloc(ny * sizeof *y);
    p->hz = mem_alloc(nz * sizeof *z);
    if (!p->hx || !p->hy || !p->hz)
        return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    memcpy(p->hx, x, nx * sizeof *x);
    memcpy(p->hy, y, ny * sizeof *y);
    memcpy(p->hz, z, nz * sizeof *z);
    p->nx = nx;
    p->ny = ny;
    set_str(&p->label_fmt, label_fmt);
    return 0;
}

int plot_hist_bins(struct plot *p, const char *name, const double *edges, const double *counts,
                   size_t n_bins)
{
    if (p->kind != PLOT_HIST || !n_bins)
        return errmsg_set(&p->err, ERR_USAGE, "plot_hist_bins on plot '%s'", p->name);
    double *c = mem_alloc(n_bins * sizeof *c), *w = mem_alloc(n_bins * sizeof *w);
    int rc;
    if (!c || !w) {
        rc = errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    } else {
        for (size_t i = 0; i < n_bins; i++) {
            c[i] = 0.5 * (edges[i] + edges[i + 1]);
            w[i] = edges[i + 1] - edges[i];
        }
        rc = add_series(p, 0, name, c, counts, w, n_bins);
    }
    mem_free(c);
    mem_free(w);
    return rc;
}

int plot_hist_values(struct plot *p, const char *name, const double *v, size_t n, double lo,
                     double hi, size_t n_bins)
{
    if (!(hi > lo) || !n_bins || n_bins > 1000000)
        return errmsg_set(&p->err, ERR_USAGE, "bad histogram range for plot '%s'", p->name);
    double *edges = mem_alloc((n_bins + 1) * sizeof *edges);
    double *counts = mem_calloc(n_bins, sizeof *counts);
    int rc;
    if (!edges || !counts) {
        rc = errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    } else {
        for (size_t i = 0; i <= n_bins; i++)
            edges[i] = lo + (hi - lo) * (double)i / (double)n_bins;
        for (size_t i = 0; i < n; i++) {
            if (!(v[i] >= lo && v[i] <= hi))
                continue;
            size_t b = (size_t)((v[i] - lo) / (hi - lo) * (double)n_bins);
            counts[b < n_bins ? b : n_bins - 1] += 1;
        }
        rc = plot_hist_bins(p, name, edges, counts, n_bins);
    }
    mem_free(edges);
    mem_free(counts);
    return rc;
}

void plot_bars_top(struct plot *p, double top)
{
    if (p && isfinite(top) && top > 0)
        p->bar_top = top;
}

int plot_bars(struct plot *p, const char *const *categories, size_t n_cat,
              const char *const *series, size_t n_series, const double *values, bool stacked)
{
    if (p->kind != PLOT_BARS || !n_cat || !n_series)
        return errmsg_set(&p->err, ERR_USAGE, "plot_bars on plot '%s'", p->name);
    size_t nv;
    if (!mem_mul(n_cat, n_series, &nv))
        return errmsg_set(&p->err, ERR_LIMIT, "too many bars");
    p->cats = mem_calloc(n_cat, sizeof *p->cats);
    p->bar_names = mem_calloc(n_series, sizeof *p->bar_names);
    p->bar_vals = mem_alloc(nv * sizeof *values);
    p->bar_hatch = mem_calloc(n_series, sizeof *p->bar_hatch);
    if (!p->cats || !p->bar_names || !p->bar_vals || !p->bar_hatch)
        return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    p->n_cat = n_cat;
    p->n_bar = n_series;
    for (size_t i = 0; i < n_cat; i++)
        if (!(p->cats[i] = mem_strdup(categories[i])))
            return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n_series; i++)
        if (!(p->bar_names[i] = mem_strdup(series[i])))
            return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    memcpy(p->bar_vals, values, nv * sizeof *values);
    p->stacked = stacked;
    return 0;
}

int plot_bars_hatch(struct plot *p, size_t series)
{
    if (p->kind != PLOT_BARS || !p->bar_hatch || series >= p->n_bar)
        return errmsg_set(&p->err, ERR_USAGE, "plot_bars_hatch on plot '%s'", p->name);
    p->bar_hatch[series] = true;
    return 0;
}

const char *plot_errmsg(const struct plot *p)
{
    return errmsg_text(&p->err);
}

bool plot_gnuplot_available(void)
{
    static int cached = -1;
    if (cached >= 0)
        return cached;
    const char *path = getenv("PATH");
    cached = 0;
    if (!path)
        return false;
    char dir[4096];
    for (const char *p = path; *p;) {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        snprintf(dir, sizeof dir, "%.*s/gnuplot", (int)n, n ? p : ".");
        if (!access(dir, X_OK)) {
            cached = 1;
            break;
        }
        if (!c)
            break;
        p = c + 1;
    }
    return cached;
}

/* ---- writing ---- */

/* A gnuplot double-quoted string. */
static int gq(struct buf *b, const char *s)
{
    int rc = buf_append(b, "\"", 1);
    for (; !rc && s && *s; s++) {
        if (*s == '"' || *s == '\\')
            rc = buf_append(b, "\\", 1);
        if (!rc)
            rc = buf_append(b, *s == '\n' ? " " : s, 1);
    }
    return rc ? rc : buf_append(b, "\"", 1);
}

static int label_line(struct buf *b, const char *cmd, const char *label, const char *unit)
{
    if (!label || !*label)
        return 0;
    char t[512];
    if (unit && *unit)
        snprintf(t, sizeof t, "%s [%s]", label, unit);
    else
        snprintf(t, sizeof t, "%s", label);
    int rc = buf_printf(b, "set %s ", cmd);
    if (!rc)
        rc = gq(b, t);
    return rc ? rc : buf_append(b, "\n", 1);
}

static void num(char *t, size_t n, double v)
{
    if (isnan(v))
        snprintf(t, n, "NaN");
    else
        csv_format_f64(v, t, n);
}

static int write_file(const char *path, const struct buf *b, struct errmsg *e)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return errmsg_set(e, ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    size_t w = fwrite(b->data, 1, b->len, f);
    if (fclose(f) || w != b->len)
        return errmsg_set(e, ERR_IO, "cannot write '%s'", path);
    return 0;
}

/* Data blocks: series (lines/scatter/overlays/hist), heatmap block, bars table. */
static int build_dat(struct plot *p, struct buf *d, size_t *heat_index)
{
    int rc = buf_printf(d, "# %s: data for %s.gp (blocks separated by two blank lines)\n",
                        p->name, p->name);
    char a[40], b[40], c[40];
    size_t block = 0;
    if (p->kind == PLOT_BARS) {
        rc = rc ? rc : buf_printf(d, "# category");
        for (size_t s = 0; s < p->n_bar && !rc; s++) {
            rc = buf_append(d, " ", 1);
            if (!rc)
                rc = gq(d, p->bar_names[s]);
        }
        rc = rc ? rc : buf_printf(d, "\n");
        for (size_t i = 0; i < p->n_cat && !rc; i++) {
            rc = gq(d, p->cats[i]);
            for (size_t s = 0; s < p->n_bar && !rc; s++) {
                num(a, sizeof a, p->bar_vals[s * p->n_cat + i]);
                rc = buf_printf(d, " %s", a);
            }
            rc = rc ? rc : buf_append(d, "\n", 1);
        }
        return rc;
    }
    for (size_t s = 0; s < p->n_series && !rc; s++, block++) {
        const struct series *q = &p->series[s];
        rc = buf_printf(d, "%s# block %zu: %s (%s%s%s)\n", block ? "\n\n" : "", block, q->name,
                        q->w ? "bin centre, count, bin width" : "x, y", "", "");
        for (size_t i = 0; i < q->n && !rc; i++) {
            num(a, sizeof a, q->x[i]);
            num(b, sizeof b, q->y[i]);
            if (q->w) {
                num(c, sizeof c, q->w[i]);
                rc = buf_printf(d, "%s %s %s\n", a, b, c);
            } else {
                rc = buf_printf(d, "%s %s\n", a, b);
            }
        }
    }
    if (p->kind == PLOT_HEATMAP && p->hz && !rc) {
        *heat_index = block;
        rc = buf_printf(d, "%s# block %zu: heatmap (x, y, z)\n", block ? "\n\n" : "", block);
        for (size_t iy = 0; iy < p->ny && !rc; iy++) {
            for (size_t ix = 0; ix < p->nx && !rc; ix++) {
                num(a, sizeof a, p->hx[ix]);
                num(b, sizeof b, p->hy[iy]);
                num(c, sizeof c, p->hz[iy * p->nx + ix]);
                rc = buf_printf(d, "%s %s %s\n", a, b, c);
            }
            rc = rc ? rc : buf_append(d, "\n", 1);
        }
    }
    return rc;
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
        num(a, sizeof a, x0);
        num(b, sizeof b, x1);
    } else {
        snprintf(a, sizeof a, "%s", p->logx ? "1" : "0");
        snprintf(b, sizeof b, "%s", p->logx ? "10" : "1");
    }
    snprintf(ranges, len, " [%s:%s] [%s]", a, b, p->logy ? "1:10" : "0:1");
    return false;
}

static int build_gp(struct plot *p, struct buf *g, size_t heat_index)
{
    int rc = buf_printf(g,
                        "# %s: gnuplot script written by acceltrace; run 'gnuplot %s.gp' in this "
                        "folder to render %s.png from %s.dat\n"
                        "set terminal pngcairo noenhanced size %d,%d font \"sans,10\"\n"
                        "set output '%s.png'\n"
                        "set grid\n"
                        "%s\n",
                        p->name, p->name, p->name, p->name, p->width, p->height, p->name,
                        /* a long legend goes under the plot instead of over the data */
                        p->n_series > PLOT_KEY_INSIDE_MAX ? "set key below" : "set key top left");
    char dat[300];
    snprintf(dat, sizeof dat, "'%s.dat'", p->name);
    bool multi = p->rows * p->cols > 1;
    if (!rc && p->title && !multi) {
        rc = buf_printf(g, "set title ");
        rc = rc ? rc : gq(g, p->title);
        rc = rc ? rc : buf_append(g, "\n", 1);
    }
    if (!rc && p->logx)
        rc = buf_printf(g, "set logscale x\n");
    if (!rc && p->logy)
        rc = buf_printf(g, "set logscale y\n");
    for (size_t i = 0; i < p->n_extra && !rc; i++)
        rc = buf_printf(g, "%s\n", p->extra[i]);
    if (rc)
        return rc;
    switch (p->kind) {
    case PLOT_LINE:
    case PLOT_SCATTER: {
        const char *style = p->kind == PLOT_LINE ? "linespoints" : "points pt 7 ps 0.6";
        if (multi) {
            rc = buf_printf(g, "set multiplot layout %d,%d", p->rows, p->cols);
            if (!rc && p->title) {
                rc = buf_printf(g, " title ");
                rc = rc ? rc : gq(g, p->title);
            }
            rc = rc ? rc : buf_append(g, "\n", 1);
        }
        for (int pn = 0; pn < p->rows * p->cols && !rc; pn++) {
            const struct panel *q = &p->panels[pn];
            if (multi) {
                rc = buf_printf(g, "set title ");
                rc = rc ? rc : gq(g, q->title ? q->title : "");
                rc = rc ? rc : buf_append(g, "\n", 1);
            }
            rc = rc ? rc
                    : label_line(g, "xlabel", q->xlabel ? q->xlabel : p->xlabel,
                                 q->xlabel ? q->xunit : p->xunit);
            rc = rc ? rc
                    : label_line(g, "ylabel", q->ylabel ? q->ylabel : p->ylabel,
                                 q->ylabel ? q->yunit : p->yunit);
            /*
             * gnuplot fails ("all points y value undefined") when nothing in a plot command
             * can be placed: such a panel (no series, or only NaN / non-positive-on-log
             * values) gets fixed ranges of its own plot command and a "no finite values"
             * label, so the other figures of a run still render.
             */
            char ranges[120] = "";
            if (!rc && !panel_drawable(p, pn, ranges, sizeof ranges))
                rc = buf_printf(g, "set label 999 \"no finite values\" at graph 0.5, graph 0.5 "
                                   "center\n");
            bool first = true;
            for (size_t s = 0; s < p->n_series && !rc; s++) {
                if (p->series[s].panel != pn)
                    continue;
                rc = buf_printf(g, "%s%s %s index %zu using 1:2 with %s title ",
                                first ? "plot" : ", \\\n    ", first ? ranges : "", dat, s,
                                series_style(&p->series[s], style));
                rc = rc ? rc : gq(g, p->series[s].name);
                first = false;
            }
            if (first && !rc) /* an empty panel still gets its frame */
                rc = buf_printf(g, "plot%s NaN notitle", ranges);
            rc = rc ? rc : buf_append(g, "\n", 1);
            if (!rc && *ranges)
                rc = buf_printf(g, "unset label 999\n");
        }
        if (multi && !rc)
            rc = buf_printf(g, "unset multiplot\n");
        break;
    }
    case PLOT_HEATMAP:
        rc = label_line(g, "xlabel", p->xlabel, p->xunit);
        rc = rc ? rc : label_line(g, "ylabel", p->ylabel, p->yunit);
        rc = rc ? rc : label_line(g, "cblabel", p->zlabel, p->zunit);
        rc = rc ? rc : buf_printf(g, "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 "
                                      "'#21908d', 0.75 '#5dc963', 1 '#fde725')\n"
                                      "set key outside top center horizontal\n");
        if (rc)
            break;
        if (!p->hz) {
            rc = ERR_USAGE;
            break;
        }
        {
            /* Frame the cells exactly: half a step beyond the first and last centres. */
            double hx = p->nx > 1 ? 0.5 * (p->hx[1] - p->hx[0]) : 0.5;
            double hy = p->ny > 1 ? 0.5 * (p->hy[1] - p->hy[0]) : 0.5;
            char a[40], b[40], c[40], d[40];
            num(a, sizeof a, p->hx[0] - hx);
            num(b, sizeof b, p->hx[p->nx - 1] + hx);
            num(c, sizeof c, p->hy[0] - hy);
            num(d, sizeof d, p->hy[p->ny - 1] + hy);
            rc = buf_printf(g, "set xrange [%s:%s]\nset yrange [%s:%s]\n", a, b, c, d);
        }
        rc = rc ? rc
                : buf_printf(g, "plot %s index %zu using 1:2:3 with image notitle", dat,
                             heat_index);
        if (!rc && p->label_fmt) {
            rc = buf_printf(g, ", \\\n    %s index %zu using 1:2:(sprintf(", dat, heat_index);
            rc = rc ? rc : gq(g, p->label_fmt);
            rc = rc ? rc : buf_printf(g, ", $3)) with labels textcolor rgb \"white\" notitle");
        }
        for (size_t s = 0; s < p->n_series && !rc; s++) {
            rc = buf_printf(g, ", \\\n    %s index %zu using 1:2 with %s title ", dat, s,
                            series_style(&p->series[s], "linespoints lw 2"));
            rc = rc ? rc : gq(g, p->series[s].name);
        }
        rc = rc ? rc : buf_append(g, "\n", 1);
        break;
    case PLOT_HIST:
        rc = label_line(g, "xlabel", p->xlabel, p->xunit);
        rc = rc ? rc : label_line(g, "ylabel", p->ylabel ? p->ylabel : "count", p->yunit);
        rc = rc ? rc : buf_printf(g, "set style fill transparent solid 0.5 border\n");
        for (size_t s = 0; s < p->n_series && !rc; s++) {
            rc = buf_printf(g, "%s %s index %zu using 1:2:3 with boxes title ",
                            s ? ", \\\n    " : "plot", dat, s);
            rc = rc ? rc : gq(g, p->series[s].name);
        }
        if (!rc && !p->n_series)
            rc = buf_printf(g, "plot NaN notitle");
        rc = rc ? rc : buf_append(g, "\n", 1);
        break;
    case PLOT_BARS:
        rc = label_line(g, "xlabel", p->xlabel, p->xunit);
        rc = rc ? rc : label_line(g, "ylabel", p->ylabel, p->yunit);
        rc = rc ? rc
                : buf_printf(g,
                             "set style data histograms\nset style histogram %s\n"
                             "set style fill solid 0.8 border -1\nset boxwidth 0.8\n",
                             p->stacked ? "rowstacked" : "clustered gap 1");
        bool own_xtics = false; /* a caller's "set xtics ..." extra wins over the default */
        for (size_t i = 0; i < p->n_extra; i++)
            own_xtics |= !strncmp(p->extra[i], "set xtics", 9);
        if (!rc && !own_xtics)
            rc = buf_printf(g, "set xtics rotate by -30\n");
        /* autoscaled top, at least bar_top when set (gnuplot's "min < *" limit) */
        if (!rc && p->bar_top > 0)
            rc = buf_printf(g, "set yrange [0:%.17g<*]\n", p->bar_top);
        else if (!rc)
            rc = buf_printf(g, "set yrange [0:*]\n");
        for (size_t s = 0; s < p->n_bar && !rc; s++) {
            rc = buf_printf(g, "%s %s using %zu%s title ", s ? ", \\\n    " : "plot",
                            s ? "''" : dat, s + 2, s ? "" : ":xtic(1)");
            rc = rc ? rc : gq(g, p->bar_names[s]);
            if (!rc && p->bar_hatch[s]) /* diagonal hatch in the series colour */
                rc = buf_printf(g, " fs pattern 5 border -1");
        }
        rc = rc ? rc : buf_append(g, "\n", 1);
        break;
    }
    return rc;
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
        rc = errmsg_set(&p->err, ERR_EXTERNAL, "gnuplot failed on '%s/%s.gp' (status %d): %s",
                        dir, p->name, WIFEXITED(status) ? WEXITSTATUS(status) : -1, last);
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
    mkdir(dir, 0755);
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
