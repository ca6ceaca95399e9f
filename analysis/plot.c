/*
 * plot: building a plot in memory (see plot.h); plot_gp.c writes it. Also the
 * process-wide output settings (format, size) that the CLI sets once.
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

#include "common/buf.h"
#include "common/err.h"
#include "common/mem.h"
#include "formats/csv.h"

#include "analysis/plot_impl.h"

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
    plot_gantt_release(p);
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
    for (size_t i = 0; i < p->n_bands; i++)
        mem_free(p->bands[i].label);
    for (size_t i = 0; i < p->n_xcats; i++)
        mem_free(p->xcats[i].label);
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
    p->own_size = true;
}

void plot_format(struct plot *p, enum plot_format f)
{
    p->format = f;
    p->has_format = true;
}

void plot_heatmap_image_rows(struct plot *p)
{
    p->image_rows = true;
}

void plot_palette(struct plot *p, enum plot_palette pal)
{
    p->palette = pal;
}

int plot_band(struct plot *p, double x0, double x1, double y0, double y1, int colour,
              const char *label)
{
    if (!(y0 <= y1) || !isfinite(y0) || !isfinite(y1) || p->n_bands >= PLOT_MAX_BANDS ||
        (isfinite(x0) && isfinite(x1) && x0 > x1))
        return errmsg_set(&p->err, ERR_USAGE, "bad band %g..%g in plot '%s'", y0, y1, p->name);
    struct band *b = &p->bands[p->n_bands];
    b->label = NULL;
    if (label && !(b->label = mem_strdup(label)))
        return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    b->x0 = x0;
    b->x1 = x1;
    b->y0 = y0;
    b->y1 = y1;
    b->colour = colour >= 0 ? colour % 8 : (int)(p->n_bands % 8);
    p->n_bands++;
    return 0;
}

int plot_xcategory(struct plot *p, double value, const char *label)
{
    if ((p->kind != PLOT_LINE && p->kind != PLOT_SCATTER) || p->n_xcats >= PLOT_MAX_XCAT ||
        !isfinite(value) || !label)
        return errmsg_set(&p->err, ERR_USAGE, "bad x category in plot '%s'", p->name);
    for (size_t i = 0; i < p->n_xcats; i++)
        if (p->xcats[i].value == value)
            return 0;
    if (!(p->xcats[p->n_xcats].label = mem_strdup(label)))
        return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    p->xcats[p->n_xcats++].value = value;
    return 0;
}

/* The output of every plot of this process (plot_set_output). */
static struct plot_output g_output = {PLOT_FMT_PNG, 0, 0};

void plot_set_output(const struct plot_output *o)
{
    g_output = *o;
}

void plot_get_output(struct plot_output *o)
{
    *o = g_output;
}

static const char *const fmt_names[] = {"png", "pdf", "svg", "eps", "epslatex"};
static const char *const fmt_exts[] = {"png", "pdf", "svg", "eps", "tex"};

int plot_format_parse(const char *s, enum plot_format *f)
{
    for (int i = 0; i < 5; i++)
        if (s && !strcmp(s, fmt_names[i])) {
            *f = (enum plot_format)i;
            return 0;
        }
    return ERR_USAGE;
}

const char *plot_format_name(enum plot_format f)
{
    return (unsigned)f < 5 ? fmt_names[f] : "?";
}

const char *plot_format_ext(enum plot_format f)
{
    return (unsigned)f < 5 ? fmt_exts[f] : "?";
}

int plot_size_parse(const char *s, enum plot_format f, int *width_px, int *height_px)
{
    char *end;
    errno = 0;
    double w = strtod(s, &end);
    if (end == s || (*end != 'x' && *end != 'X'))
        return ERR_USAGE;
    const char *hs = end + 1;
    double h = strtod(hs, &end);
    if (end == hs || errno)
        return ERR_USAGE;
    double per = f == PLOT_FMT_PNG ? 1.0 : 100.0; /* px per unit of a bare number */
    if (!strcmp(end, "px"))
        per = 1.0;
    else if (!strcmp(end, "in"))
        per = 100.0;
    else if (!strcmp(end, "cm"))
        per = 100.0 / 2.54;
    else if (*end)
        return ERR_USAGE;
    w *= per;
    h *= per;
    if (!(w >= 100 && w <= 10000 && h >= 100 && h <= 10000))
        return ERR_USAGE;
    *width_px = (int)lround(w);
    *height_px = (int)lround(h);
    return 0;
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

int plot_panel(struct plot *p, int panel, const char *title, const char *xlabel, const char *xunit,
               const char *ylabel, const char *yunit)
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

static int add_series(struct plot *p, int panel, const char *name, const double *x, const double *y,
                      const double *w, size_t n)
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
    s->colour = s->dash = -1;
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
        return errmsg_set(&p->err, ERR_USAGE, "bad marker %d for plot '%s'", (int)marker, p->name);
    p->series[p->n_series - 1].marker = marker;
    return 0;
}

int plot_series_style(struct plot *p, int colour, int dash)
{
    if (p->kind == PLOT_HIST || p->kind == PLOT_BARS || !p->n_series)
        return errmsg_set(&p->err, ERR_USAGE, "plot_series_style without a series in plot '%s'",
                          p->name);
    p->series[p->n_series - 1].colour = colour < 0 ? -1 : colour % 8;
    p->series[p->n_series - 1].dash = dash < 0 ? -1 : dash % 4;
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
