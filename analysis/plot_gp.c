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

/* A gnuplot double-quoted string. */
static void gq(struct buf *b, const char *s)
{
    buf_append(b, "\"", 1);
    for (; !buf_err(b) && s && *s; s++) {
        if (*s == '"' || *s == '\\')
            buf_append(b, "\\", 1);
        buf_append(b, *s == '\n' ? " " : s, 1);
    }
    buf_append(b, "\"", 1);
}

static void label_line(struct buf *b, const char *cmd, const char *label, const char *unit)
{
    if (!label || !*label)
        return;
    char t[512];
    if (unit && *unit)
        snprintf(t, sizeof t, "%s [%s]", label, unit);
    else
        snprintf(t, sizeof t, "%s", label);
    buf_printf(b, "set %s ", cmd);
    gq(b, t);
    buf_append(b, "\n", 1);
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
    buf_printf(d, "# %s: data for %s.gp (blocks separated by two blank lines)\n", p->name, p->name);
    char a[40], b[40], c[40];
    size_t block = 0;
    if (p->kind == PLOT_BARS) {
        buf_printf(d, "# category");
        for (size_t s = 0; s < p->n_bar; s++) {
            buf_append(d, " ", 1);
            gq(d, p->bar_names[s]);
        }
        buf_printf(d, "\n");
        for (size_t i = 0; i < p->n_cat && !buf_err(d); i++) {
            gq(d, p->cats[i]);
            for (size_t s = 0; s < p->n_bar; s++) {
                num(a, sizeof a, p->bar_vals[s * p->n_cat + i]);
                buf_printf(d, " %s", a);
            }
            buf_append(d, "\n", 1);
        }
        return buf_err(d);
    }
    for (size_t s = 0; s < p->n_series && !buf_err(d); s++, block++) {
        const struct series *q = &p->series[s];
        buf_printf(d, "%s# block %zu: %s (%s%s%s)\n", block ? "\n\n" : "", block, q->name,
                   q->w ? "bin centre, count, bin width" : "x, y", "", "");
        for (size_t i = 0; i < q->n && !buf_err(d); i++) {
            num(a, sizeof a, q->x[i]);
            num(b, sizeof b, q->y[i]);
            if (q->w) {
                num(c, sizeof c, q->w[i]);
                buf_printf(d, "%s %s %s\n", a, b, c);
            } else {
                buf_printf(d, "%s %s\n", a, b);
            }
        }
    }
    if (p->kind == PLOT_HEATMAP && p->hz && !buf_err(d)) {
        *heat_index = block;
        buf_printf(d, "%s# block %zu: heatmap (x, y, z)\n", block ? "\n\n" : "", block);
        for (size_t iy = 0; iy < p->ny && !buf_err(d); iy++) {
            for (size_t ix = 0; ix < p->nx; ix++) {
                num(a, sizeof a, p->hx[ix]);
                num(b, sizeof b, p->hy[iy]);
                num(c, sizeof c, p->hz[iy * p->nx + ix]);
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
        num(a, sizeof a, x0);
        num(b, sizeof b, x1);
    } else {
        snprintf(a, sizeof a, "%s", p->logx ? "1" : "0");
        snprintf(b, sizeof b, "%s", p->logx ? "10" : "1");
    }
    snprintf(ranges, len, " [%s:%s] [%s]", a, b, p->logy ? "1:10" : "0:1");
    return false;
}

/* Line and scatter plots: one plot command per panel (a multiplot with several). */
static int gp_lines(struct plot *p, struct buf *g, const char *dat)
{
    bool multi = p->rows * p->cols > 1;
    const char *style = p->kind == PLOT_LINE ? "linespoints" : "points pt 7 ps 0.6";
    if (multi) {
        buf_printf(g, "set multiplot layout %d,%d", p->rows, p->cols);
        if (p->title) {
            buf_printf(g, " title ");
            gq(g, p->title);
        }
        buf_append(g, "\n", 1);
    }
    for (int pn = 0; pn < p->rows * p->cols && !buf_err(g); pn++) {
        const struct panel *q = &p->panels[pn];
        if (multi) {
            buf_printf(g, "set title ");
            gq(g, q->title ? q->title : "");
            buf_append(g, "\n", 1);
        }
        label_line(g, "xlabel", q->xlabel ? q->xlabel : p->xlabel, q->xlabel ? q->xunit : p->xunit);
        label_line(g, "ylabel", q->ylabel ? q->ylabel : p->ylabel, q->ylabel ? q->yunit : p->yunit);
        /*
         * gnuplot fails ("all points y value undefined") when nothing in a plot command
         * can be placed: such a panel (no series, or only NaN / non-positive-on-log
         * values) gets fixed ranges of its own plot command and a "no finite values"
         * label, so the other figures of a run still render.
         */
        char ranges[120] = "";
        if (!panel_drawable(p, pn, ranges, sizeof ranges))
            buf_printf(g, "set label 999 \"no finite values\" at graph 0.5, graph 0.5 "
                          "center\n");
        bool first = true;
        for (size_t s = 0; s < p->n_series; s++) {
            if (p->series[s].panel != pn)
                continue;
            buf_printf(g, "%s%s %s index %zu using 1:2 with %s title ",
                       first ? "plot" : ", \\\n    ", first ? ranges : "", dat, s,
                       series_style(&p->series[s], style));
            gq(g, p->series[s].name);
            first = false;
        }
        if (first) /* an empty panel still gets its frame */
            buf_printf(g, "plot%s NaN notitle", ranges);
        buf_append(g, "\n", 1);
        if (*ranges)
            buf_printf(g, "unset label 999\n");
    }
    if (multi)
        buf_printf(g, "unset multiplot\n");
    return buf_err(g);
}

/* A heatmap: the cells as an image, optional value labels, overlaid series. */
static int gp_heatmap(struct plot *p, struct buf *g, const char *dat, size_t heat_index)
{
    label_line(g, "xlabel", p->xlabel, p->xunit);
    label_line(g, "ylabel", p->ylabel, p->yunit);
    label_line(g, "cblabel", p->zlabel, p->zunit);
    buf_printf(g, "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 "
                  "'#21908d', 0.75 '#5dc963', 1 '#fde725')\n"
                  "set key outside top center horizontal\n");
    if (buf_err(g))
        return buf_err(g);
    if (!p->hz)
        return ERR_USAGE;
    {
        /* Frame the cells exactly: half a step beyond the first and last centres. */
        double hx = p->nx > 1 ? 0.5 * (p->hx[1] - p->hx[0]) : 0.5;
        double hy = p->ny > 1 ? 0.5 * (p->hy[1] - p->hy[0]) : 0.5;
        char a[40], b[40], c[40], d[40];
        num(a, sizeof a, p->hx[0] - hx);
        num(b, sizeof b, p->hx[p->nx - 1] + hx);
        num(c, sizeof c, p->hy[0] - hy);
        num(d, sizeof d, p->hy[p->ny - 1] + hy);
        buf_printf(g, "set xrange [%s:%s]\nset yrange [%s:%s]\n", a, b, c, d);
    }
    buf_printf(g, "plot %s index %zu using 1:2:3 with image notitle", dat, heat_index);
    if (p->label_fmt) {
        buf_printf(g, ", \\\n    %s index %zu using 1:2:(sprintf(", dat, heat_index);
        gq(g, p->label_fmt);
        buf_printf(g, ", $3)) with labels textcolor rgb \"white\" notitle");
    }
    for (size_t s = 0; s < p->n_series; s++) {
        buf_printf(g, ", \\\n    %s index %zu using 1:2 with %s title ", dat, s,
                   series_style(&p->series[s], "linespoints lw 2"));
        gq(g, p->series[s].name);
    }
    buf_append(g, "\n", 1);
    return buf_err(g);
}

/* A histogram: one boxes series per data set. */
static int gp_hist(struct plot *p, struct buf *g, const char *dat)
{
    label_line(g, "xlabel", p->xlabel, p->xunit);
    label_line(g, "ylabel", p->ylabel ? p->ylabel : "count", p->yunit);
    buf_printf(g, "set style fill transparent solid 0.5 border\n");
    for (size_t s = 0; s < p->n_series; s++) {
        buf_printf(g, "%s %s index %zu using 1:2:3 with boxes title ", s ? ", \\\n    " : "plot",
                   dat, s);
        gq(g, p->series[s].name);
    }
    if (!p->n_series)
        buf_printf(g, "plot NaN notitle");
    buf_append(g, "\n", 1);
    return buf_err(g);
}

/* Bars: clustered or stacked gnuplot histograms of the category table. */
static int gp_bars(struct plot *p, struct buf *g, const char *dat)
{
    label_line(g, "xlabel", p->xlabel, p->xunit);
    label_line(g, "ylabel", p->ylabel, p->yunit);
    buf_printf(g,
               "set style data histograms\nset style histogram %s\n"
               "set style fill solid 0.8 border -1\nset boxwidth 0.8\n",
               p->stacked ? "rowstacked" : "clustered gap 1");
    bool own_xtics = false; /* a caller's "set xtics ..." extra wins over the default */
    for (size_t i = 0; i < p->n_extra; i++)
        own_xtics |= !strncmp(p->extra[i], "set xtics", 9);
    if (!own_xtics)
        buf_printf(g, "set xtics rotate by -30\n");
    /* autoscaled top, at least bar_top when set (gnuplot's "min < *" limit) */
    if (p->bar_top > 0)
        buf_printf(g, "set yrange [0:%.17g<*]\n", p->bar_top);
    else
        buf_printf(g, "set yrange [0:*]\n");
    for (size_t s = 0; s < p->n_bar; s++) {
        buf_printf(g, "%s %s using %zu%s title ", s ? ", \\\n    " : "plot", s ? "''" : dat, s + 2,
                   s ? "" : ":xtic(1)");
        gq(g, p->bar_names[s]);
        if (p->bar_hatch[s]) /* diagonal hatch in the series colour */
            buf_printf(g, " fs pattern 5 border -1");
    }
    buf_append(g, "\n", 1);
    return buf_err(g);
}

static int build_gp(struct plot *p, struct buf *g, size_t heat_index)
{
    buf_printf(g,
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
    if (p->title && !multi) {
        buf_printf(g, "set title ");
        gq(g, p->title);
        buf_append(g, "\n", 1);
    }
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
