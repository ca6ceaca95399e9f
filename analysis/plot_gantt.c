/*
 * plot_gantt: the Gantt kind of the plot driver (analysis/plot.h, PLOT_GANTT): rows by
 * track, spans coloured by class, drawn with gnuplot's boxxyerror in the driver's palette.
 */
#include <string.h>

#include "analysis/plot_impl.h"
#include "common/buf.h"
#include "common/grow.h"
#include "common/mem.h"

/* Index of name in v[0..*n), appending a copy when absent (cap: -1 when full). */
static int name_index(char **v, size_t *n, size_t cap, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(v[i], name))
            return (int)i;
    if (*n >= cap)
        return -1;
    size_t len = strlen(name) + 1;
    if (!(v[*n] = mem_alloc(len)))
        return -2;
    memcpy(v[*n], name, len);
    return (int)(*n)++;
}

int plot_gantt_span(struct plot *p, const char *track, const char *cls, double t0, double t1)
{
    if (p->kind != PLOT_GANTT || !(t1 >= t0))
        return errmsg_set(&p->err, ERR_USAGE, "plot '%s': bad gantt span", p->name);
    int tr = name_index(p->g_tracks, &p->n_gtrack, PLOT_GANTT_MAX_TRACKS, track);
    if (tr == -1)
        return errmsg_set(&p->err, ERR_USAGE, "plot '%s': more than %d gantt rows", p->name,
                          PLOT_GANTT_MAX_TRACKS);
    if (!(p->n_gclass % 8)) {
        char **q = mem_realloc(p->g_classes, (p->n_gclass + 8) * sizeof *q);
        if (!q)
            return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
        p->g_classes = q;
    }
    int c = tr < 0 ? -2 : name_index(p->g_classes, &p->n_gclass, p->n_gclass + 1, cls);
    if (c < 0)
        return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    if (grow((void **)&p->g_spans, &p->cap_gspan, p->n_gspan + 1, sizeof *p->g_spans))
        return errmsg_set(&p->err, ERR_NOMEM, "out of memory");
    p->g_spans[p->n_gspan++] = (struct gantt_span){t0, t1, (unsigned)tr, (unsigned)c};
    return 0;
}

void plot_gantt_release(struct plot *p)
{
    for (size_t i = 0; i < p->n_gtrack; i++)
        mem_free(p->g_tracks[i]);
    for (size_t i = 0; i < p->n_gclass; i++)
        mem_free(p->g_classes[i]);
    mem_free(p->g_classes);
    mem_free(p->g_spans);
}

/* Row of track i: the first track at the top. */
static double row_y(const struct plot *p, unsigned track)
{
    return (double)(p->n_gtrack - 1 - track);
}

int plot_gantt_dat(const struct plot *p, struct buf *d)
{
    char a[40], b[40];
    buf_printf(d, "# %s: data for %s.gp (blocks separated by two blank lines)\n", p->name, p->name);
    for (size_t t = 0; t < p->n_gtrack; t++)
        buf_printf(d, "# row %g: %s\n", row_y(p, (unsigned)t), p->g_tracks[t]);
    for (size_t c = 0; c < p->n_gclass && !buf_err(d); c++) {
        buf_printf(d, "%s# block %zu: %s (t0, t1, row)\n", c ? "\n\n" : "", c, p->g_classes[c]);
        for (size_t i = 0; i < p->n_gspan; i++) {
            const struct gantt_span *s = &p->g_spans[i];
            if (s->cls != c)
                continue;
            plot_num(a, sizeof a, s->t0);
            plot_num(b, sizeof b, s->t1);
            buf_printf(d, "%s %s %g\n", a, b, row_y(p, s->track));
        }
        if (!buf_err(d))
            buf_printf(d, "%g %g %g\n", 0.0, 0.0, -10.0); /* keeps an empty block plottable */
    }
    return buf_err(d);
}

int plot_gantt_gp(const struct plot *p, struct buf *g, const char *dat)
{
    plot_label_line(g, "xlabel", p->xlabel, p->xunit);
    buf_printf(g, "set yrange [-0.6:%g]\nset ytics (", (double)p->n_gtrack - 0.4);
    for (size_t t = 0; t < p->n_gtrack; t++) {
        buf_printf(g, "%s", t ? ", " : "");
        plot_gq(g, p->g_tracks[t]);
        buf_printf(g, " %g", row_y(p, (unsigned)t));
    }
    buf_printf(g, ")\nset grid noytics\nset key below\nset bmargin 6\n");
    for (size_t c = 0; c < p->n_gclass; c++) {
        buf_printf(g,
                   "%s %s index %zu using (($1+$2)/2):3:1:2:($3-0.38):($3+0.38) with "
                   "boxxyerror fs solid 0.85 noborder lt %zu title ",
                   c ? ", \\\n    " : "plot", dat, c, c % 8 + 1);
        plot_gtext(g, p->g_classes[c]);
    }
    if (!p->n_gclass)
        buf_printf(g, "plot 0 notitle");
    buf_printf(g, "\n");
    return buf_err(g);
}
