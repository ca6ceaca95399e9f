/*
 * cmd_plot_generic: the generic figures of `acceltrace plot` (see cmd_plot.c): every count
 * and metric against the first swept numeric config key, one series per value of the
 * other swept keys and labels, panels (facets) when there are too many series, bars when
 * nothing numeric is swept.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/plot.h"
#include "cli/cli.h"
#include "cli/cmd_plot_impl.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/mem.h"
#include "replay/model_registry.h"

/* Whether "gnuplot not found" was said (once per run). */
static bool warned_gnuplot;

/* Writes figure p into dir (rendered when gnuplot is there); *n_png counts PNGs. */
static int finish_plot(struct plot *p, const char *dir, int *n_png)
{
    bool rendered;
    int rc = plot_write(p, dir, &rendered);
    if (rc) {
        cli_error("%s", plot_errmsg(p));
        return rc;
    }
    if (rendered)
        (*n_png)++;
    else if (!warned_gnuplot) {
        cli_warn("gnuplot not found: data and scripts written; run 'gnuplot NAME.gp' in '%s' "
                 "to render",
                 dir);
        warned_gnuplot = true;
    }
    return 0;
}

static double jnum(const json_t *v, bool *ok)
{
    *ok = true;
    if (json_is_number(v))
        return json_number_value(v);
    if (json_is_boolean(v))
        return json_is_true(v);
    *ok = false;
    return NAN;
}

/* Sorts series points by x (insertion sort: series are short). */
static void sort_xy(double *x, double *y, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        double a = x[i], b = y[i];
        size_t j = i;
        while (j && x[j - 1] > a) {
            x[j] = x[j - 1];
            y[j] = y[j - 1];
            j--;
        }
        x[j] = a;
        y[j] = b;
    }
}

/*
 * True when label `key` tells apart rows of one config (as the disc model's "mode" does):
 * only such labels make series. A label that is one more result of its config (a
 * bottleneck name) would otherwise split every curve into single points.
 */
static bool label_splits_config(json_t *rows, const char *key)
{
    size_t n = json_array_size(rows);
    for (size_t i = 0; i < n; i++) {
        json_t *ri = json_array_get(rows, i);
        json_t *hi = json_object_get(ri, "config_hash");
        json_t *li = json_object_get(json_object_get(ri, "labels"), key);
        for (size_t j = i + 1; j < n; j++) {
            json_t *rj = json_array_get(rows, j);
            if (!json_equal(hi, json_object_get(rj, "config_hash")))
                continue;
            json_t *lj = json_object_get(json_object_get(rj, "labels"), key);
            if (!json_equal(li, lj))
                return true;
        }
    }
    return false;
}

/* The y value of a row: its metric y, else its count y. */
static json_t *row_y(json_t *row, const char *y)
{
    json_t *jy = json_object_get(json_object_get(row, "metrics"), y);
    return jy ? jy : json_object_get(json_object_get(row, "counts"), y);
}

#define MAX_KEYS 160
#define MAX_PER_PANEL 8

/* What the plots of one results set share: rows, the x key and the keys that tell rows
 * apart (the swept config keys but x, then the labels that split a config). */
struct gen_plots {
    json_t *rows;
    size_t n;
    const char *model, *xkey;
    char xunit[64];
    char sentinel[128]; /* x = 0 means this (from the key's schema doc), "" for none */
    json_t *units;
    const struct plot_opts *o;
    const char *keys[MAX_KEYS];
    size_t nk;
    char **val;      /* (n, nk) value text of key k in row i */
    bool *facet;     /* (nk) keys that make panels */
    int *panel;      /* (n) panel of each row */
    int *sid;        /* (n) series of each row: the first row of its series */
    double *xs, *yv; /* n + 1 points of scratch */
    char where[400]; /* "; where k=v, ..." for titles */
    bool *by_name;   /* (nk) keys whose value the row's sweep name determines */
};

/* The sweep name of row i (grids with named rows, README.md "Named sweep rows"), or NULL. */
static const char *row_name(const struct gen_plots *g, size_t i)
{
    return json_string_value(json_object_get(json_array_get(g->rows, i), "name"));
}

/* The value of key k in row i. */
static const char *gv(const struct gen_plots *g, size_t i, size_t k)
{
    return g->val[i * g->nk + k];
}

/* Row i and row j belong to the same panel (equal on every facet key). */
static bool same_panel(const struct gen_plots *g, size_t i, size_t j)
{
    for (size_t k = 0; k < g->nk; k++)
        if (g->facet[k] && strcmp(gv(g, i, k), gv(g, j, k)))
            return false;
    return true;
}

/* Row i and row j draw one series (equal on every key but the facet keys). */
static bool same_series(const struct gen_plots *g, size_t i, size_t j)
{
    for (size_t k = 0; k < g->nk; k++)
        if (!g->facet[k] && strcmp(gv(g, i, k), gv(g, j, k)))
            return false;
    return true;
}

/* Assigns panel and series of every row; returns the panel count, *most: the largest number
 * of series in one panel. */
static int assign(struct gen_plots *g, size_t *most)
{
    int np = 0;
    *most = 0;
    for (size_t i = 0; i < g->n; i++) {
        g->panel[i] = -1;
        for (size_t j = 0; j < i && g->panel[i] < 0; j++)
            if (same_panel(g, i, j))
                g->panel[i] = g->panel[j];
        if (g->panel[i] < 0)
            g->panel[i] = np++;
        g->sid[i] = (int)i;
        for (size_t j = 0; j < i; j++)
            if (g->panel[j] == g->panel[i] && same_series(g, i, j)) {
                g->sid[i] = g->sid[j];
                break;
            }
    }
    for (int pn = 0; pn < np; pn++) {
        size_t c = 0;
        for (size_t i = 0; i < g->n; i++)
            c += g->panel[i] == pn && g->sid[i] == (int)i;
        *most = c > *most ? c : *most;
    }
    return np;
}

/* The number of distinct values of key k. */
static size_t n_values(const struct gen_plots *g, size_t k)
{
    size_t c = 0;
    for (size_t i = 0; i < g->n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(gv(g, i, k), gv(g, j, k));
        c += !seen;
    }
    return c;
}

/*
 * The facets: the --facet key, or, when a panel would hold more than 8 series, the key
 * (then the pair of keys) that leaves the fewest series per panel (ties: fewer panels).
 * 0, or a usage error naming the keys and their value counts.
 */
static int choose_facets(struct gen_plots *g, const char *name, int *np)
{
    size_t most;
    if (g->o->facet) {
        for (size_t k = 0; k < g->nk; k++)
            g->facet[k] = !strcmp(g->keys[k], g->o->facet);
    }
    *np = assign(g, &most);
    if (!g->o->facet && most > MAX_PER_PANEL) {
        size_t best = most, bp = 0, b1 = g->nk, b2 = g->nk;
        for (size_t k1 = 0; k1 < g->nk; k1++)
            for (size_t k2 = k1; k2 < g->nk; k2++) {
                if (k2 != k1 && best <= MAX_PER_PANEL)
                    break; /* one key did it: no pairs */
                g->facet[k1] = g->facet[k2] = true;
                size_t m;
                int p = assign(g, &m);
                g->facet[k1] = g->facet[k2] = false;
                if (p <= PLOT_MAX_PANELS && (m < best || (m == best && (size_t)p < bp))) {
                    best = m;
                    bp = (size_t)p;
                    b1 = k1;
                    b2 = k2;
                }
            }
        if (b1 < g->nk)
            g->facet[b1] = g->facet[b2] = true;
        *np = assign(g, &most);
    }
    if (most <= MAX_PER_PANEL && *np <= PLOT_MAX_PANELS)
        return 0;
    char keys[1024] = "";
    size_t len = 0;
    for (size_t k = 0; k < g->nk && len < sizeof keys; k++)
        len += (size_t)snprintf(keys + len, sizeof keys - len, "%s%s (%zu values)", k ? ", " : "",
                                g->keys[k], n_values(g, k));
    return cli_usage_error(CMD_PLOT_VERB,
                           "plot '%s' would draw %zu series in one panel (%d panels; keys %s): "
                           "choose them with --facet KEY, --where KEY=VALUE or --x KEY",
                           name, most, *np, keys);
}

/* The value text of key `key` in row i ("" when the key is none of the row keys). */
static const char *key_value(const struct gen_plots *g, size_t i, const char *key)
{
    for (size_t k = 0; key && k < g->nk; k++)
        if (!strcmp(g->keys[k], key))
            return gv(g, i, k);
    return "";
}

/* The rank of row i's value of `key` among the values of the rows of `among` (-1 none). */
static int value_rank(const struct gen_plots *g, size_t i, const char *key)
{
    const char *v = key_value(g, i, key);
    int r = 0;
    for (size_t j = 0; j < g->n; j++) {
        if (!strcmp(key_value(g, j, key), v))
            return r;
        bool first = true;
        for (size_t m = 0; m < j && first; m++)
            first = strcmp(key_value(g, m, key), key_value(g, j, key)) != 0;
        r += first;
    }
    return r;
}

/* The name of series i in its panel: the keys that vary among the panel's rows ("" when
 * none does). When the rows carry sweep names that vary in the panel, the name comes
 * first and stands for the keys it determines. */
static void series_name(const struct gen_plots *g, size_t i, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    const char *nm = row_name(g, i);
    bool use_name = false, one_name = true;
    for (size_t j = 0; nm && j < g->n; j++) {
        const char *nj = row_name(g, j);
        bool differs = !nj || strcmp(nj, nm);
        use_name = use_name || (g->panel[j] == g->panel[i] && differs);
        one_name = one_name && !(g->sid[j] == g->sid[i] && differs);
    }
    use_name = use_name && one_name; /* the series is one name's, and names tell series apart */
    if (use_name)
        len += (size_t)snprintf(buf, cap, "%s", nm);
    for (size_t k = 0; k < g->nk; k++) {
        if (g->facet[k] || (use_name && g->by_name[k]))
            continue;
        bool varies = false;
        for (size_t j = 0; j < g->n && !varies; j++)
            varies = g->panel[j] == g->panel[i] && strcmp(gv(g, j, k), gv(g, i, k));
        if (varies && len < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s=%s", len ? " " : "", g->keys[k],
                                    gv(g, i, k));
    }
    /* nothing varies: the panel's one series needs no legend entry (empty title) */
}

/* The title of panel pn: its facet keys and values. */
static void panel_title(const struct gen_plots *g, int pn, char *buf, size_t cap)
{
    size_t i = 0, len = 0;
    while (i < g->n && g->panel[i] != pn)
        i++;
    buf[0] = 0;
    for (size_t k = 0; k < g->nk && i < g->n; k++)
        if (g->facet[k] && len < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s=%s", len ? " " : "", g->keys[k],
                                    gv(g, i, k));
}

/* The points of series `sid` into g->xs, g->yv, sorted by x; their count. */
static size_t series_points(struct gen_plots *g, int sid, const char *y)
{
    size_t m = 0;
    for (size_t j = 0; j < g->n; j++) {
        if (g->sid[j] != sid)
            continue;
        json_t *row = json_array_get(g->rows, j);
        bool okx, oky;
        double xv = jnum(json_object_get(json_object_get(row, "config"), g->xkey), &okx);
        double yy = jnum(row_y(row, y), &oky);
        if (!okx)
            continue;
        g->xs[m] = xv;
        g->yv[m] = oky ? yy : NAN;
        m++;
    }
    sort_xy(g->xs, g->yv, m);
    return m;
}

/* The line plot of y over the x key: a panel per facet, a series per other key values,
 * coloured by --series and dashed by --style; NULL after the message (*rc set). */
static struct plot *line_plot(struct gen_plots *g, const char *y, const char *yunit, int *rc)
{
    char title[900], name[300], sname[512];
    snprintf(name, sizeof name, "%s_vs_%s", y, g->xkey);
    for (char *c = name; *c; c++)
        if (*c == '.')
            *c = '_';
    int np;
    if ((*rc = choose_facets(g, name, &np)))
        return NULL;
    snprintf(title, sizeof title, "%s vs %s (model %s, %zu rows%s)", y, g->xkey,
             g->model ? g->model : "?", g->n, g->where);
    struct plot *p = plot_new(name, PLOT_LINE);
    if (!p) {
        *rc = cli_fail(ERR_NOMEM, "out of memory");
        return NULL;
    }
    plot_title(p, title);
    plot_xlabel(p, g->xkey, g->xunit);
    plot_ylabel(p, y, yunit);
    plot_logscale(p, g->o->logx, g->o->logy);
    if (g->sentinel[0])
        plot_xcategory(p, 0, g->sentinel);
    if (np > 1) {
        int cols = (int)ceil(sqrt((double)np)), rows = (np + cols - 1) / cols;
        plot_panels(p, rows, cols);
        plot_size(p, 520 * cols, 400 * rows + 40);
        for (int pn = 0; pn < np; pn++) {
            panel_title(g, pn, sname, sizeof sname);
            plot_panel(p, pn, sname, g->xkey, g->xunit, y, yunit);
        }
    }
    for (size_t i = 0; i < g->n && !*rc; i++) {
        if (g->sid[i] != (int)i)
            continue;
        size_t m = series_points(g, (int)i, y);
        series_name(g, i, sname, sizeof sname);
        int colour = g->o->series ? value_rank(g, i, g->o->series) : -1;
        int dash = g->o->style ? value_rank(g, i, g->o->style) : -1;
        if (plot_series(p, g->panel[i], sname, g->xs, g->yv, m) ||
            ((colour >= 0 || dash >= 0) && plot_series_style(p, colour, dash)))
            *rc = cli_fail(ERR_USAGE, plot_errmsg(p));
    }
    return p;
}

/* The bar plot of y per config (no x key); NULL after the message (*rc set) on an error. */
static struct plot *bar_plot(struct gen_plots *g, const char *y, const char *yunit, int *rc)
{
    char title[600], name[300];
    snprintf(name, sizeof name, "%s", y);
    snprintf(title, sizeof title, "%s per config (model %s%s)", y, g->model ? g->model : "?",
             g->where);
    struct plot *p = plot_new(name, PLOT_BARS);
    char **cats = mem_calloc(g->n + 1, sizeof *cats);
    if (!p || !cats) {
        plot_free(p);
        mem_free(cats);
        *rc = cli_fail(ERR_NOMEM, "out of memory");
        return NULL;
    }
    plot_title(p, title);
    plot_xlabel(p, "config", "");
    plot_ylabel(p, y, yunit);
    plot_logscale(p, false, g->o->logy);
    for (size_t i = 0; i < g->n && !*rc; i++) {
        bool ok;
        g->yv[i] = jnum(row_y(json_array_get(g->rows, i), y), &ok);
        char sname[512];
        series_name(g, i, sname, sizeof sname);
        if (!sname[0])
            snprintf(sname, sizeof sname, "config %zu", i);
        if (!(cats[i] = mem_strdup(sname)))
            *rc = cli_fail(ERR_NOMEM, "out of memory");
    }
    const char *series[] = {y};
    if (!*rc && plot_bars(p, (const char *const *)cats, g->n, series, 1, g->yv, false))
        *rc = cli_fail(ERR_USAGE, plot_errmsg(p));
    for (size_t i = 0; i < g->n; i++)
        mem_free(cats[i]);
    mem_free(cats);
    return p;
}

/* The meaning of x = 0 from a schema doc such as "0: the trace's selections; > 0: ..." or
 * "requests per slot; 0 = h_att [decision]"; "" when the doc gives none. */
static void sentinel_of(const char *doc, char *out, size_t cap)
{
    out[0] = 0;
    if (!doc)
        return;
    const char *s = NULL;
    if (!strncmp(doc, "0: ", 3))
        s = doc + 3;
    else if ((s = strstr(doc, "; 0 = ")))
        s += 6;
    if (!s)
        return;
    size_t n = strcspn(s, ";[");
    while (n && s[n - 1] == ' ')
        n--;
    snprintf(out, cap, "0: %.*s", (int)n, s);
    /* two lines for the tic: break at the space nearest the middle */
    size_t len = strlen(out), best = 0;
    for (size_t i = 1; len > 14 && i < len; i++)
        if (out[i] == ' ' &&
            (!best || labs((long)(2 * i) - (long)len) < labs((long)(2 * best) - (long)len)))
            best = i;
    if (best)
        out[best] = '\n';
}

/* The keys that tell rows apart: swept config keys (but x), then the splitting labels. */
static int row_keys(struct gen_plots *g, const char *const *swept, size_t n_swept)
{
    const char *k;
    json_t *v;
    for (size_t s = 0; s < n_swept && g->nk < MAX_KEYS; s++)
        if (!g->xkey || strcmp(swept[s], g->xkey))
            g->keys[g->nk++] = swept[s];
    size_t n_conf = g->nk;
    json_object_foreach(json_object_get(json_array_get(g->rows, 0), "labels"), k, v)
    {
        if (g->nk < MAX_KEYS && label_splits_config(g->rows, k))
            g->keys[g->nk++] = k;
    }
    size_t cells;
    if (!mem_mul(g->n, g->nk ? g->nk : 1, &cells))
        return cli_fail(ERR_NOMEM, "out of memory");
    g->val = mem_calloc(cells, sizeof *g->val);
    g->facet = mem_calloc(g->nk + 1, sizeof *g->facet);
    g->panel = mem_calloc(g->n + 1, sizeof *g->panel);
    g->sid = mem_calloc(g->n + 1, sizeof *g->sid);
    g->by_name = mem_calloc(g->nk + 1, sizeof *g->by_name);
    if (!g->val || !g->facet || !g->panel || !g->sid || !g->by_name)
        return cli_fail(ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < g->n; i++) {
        json_t *row = json_array_get(g->rows, i);
        for (size_t c = 0; c < g->nk; c++) {
            json_t *jv = c < n_conf ? json_object_get(json_object_get(row, "config"), g->keys[c])
                                    : json_object_get(json_object_get(row, "labels"), g->keys[c]);
            char *t = jv ? cmd_plot_value_text(jv) : mem_strdup("?");
            if (!t)
                return cli_fail(ERR_NOMEM, "out of memory");
            g->val[i * g->nk + c] = t;
        }
    }
    /* key k is the name's when rows of one name never differ in it (compared with the
     * first row of that name) */
    for (size_t c = 0; c < g->nk && row_name(g, 0); c++)
        g->by_name[c] = true;
    for (size_t i = 1; i < g->n && row_name(g, 0); i++) {
        const char *ni = row_name(g, i);
        size_t f = 0;
        while (f < i && (!ni || !row_name(g, f) || strcmp(row_name(g, f), ni)))
            f++;
        for (size_t c = 0; c < g->nk && f < i; c++)
            g->by_name[c] = g->by_name[c] && !strcmp(gv(g, i, c), gv(g, f, c));
    }
    const char *const named[] = {g->o->series, g->o->style, g->o->facet};
    const char *what[] = {"--series", "--style", "--facet"};
    for (int w = 0; w < 3; w++) {
        bool found = !named[w];
        for (size_t c = 0; c < g->nk && !found; c++)
            found = !strcmp(g->keys[c], named[w]);
        if (!found)
            return cli_usage_error(CMD_PLOT_VERB,
                                   "%s '%s' is not a swept config key or label (other than --x)",
                                   what[w], named[w]);
    }
    return 0;
}

static void gen_release(struct gen_plots *g)
{
    for (size_t i = 0; g->val && i < g->n * g->nk; i++)
        mem_free(g->val[i]);
    mem_free(g->val);
    mem_free(g->facet);
    mem_free(g->panel);
    mem_free(g->sid);
    mem_free(g->by_name);
    mem_free(g->xs);
    mem_free(g->yv);
}

/* The number of distinct values of config key `key` among the rows. */
static size_t distinct_values(json_t *rows, const char *key)
{
    size_t n = json_array_size(rows), c = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(json_object_get(json_array_get(rows, i), "config"), key);
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = json_equal(
                v, json_object_get(json_object_get(json_array_get(rows, j), "config"), key));
        c += !seen;
    }
    return c;
}

int cmd_plot_generic(json_t *rows, const struct plot_opts *o, const char **ys, size_t n_ys,
                     const char *out, int *n_png)
{
    struct gen_plots g = {.rows = rows, .n = json_array_size(rows), .o = o};
    size_t n = g.n;
    json_t *r0 = json_array_get(rows, 0);
    json_t *cfg0 = json_object_get(r0, "config");
    g.model = json_string_value(json_object_get(r0, "model"));
    const struct hw_schema *schema = g.model ? model_registry_schema(g.model) : NULL;
    /* swept keys: config values that differ between rows */
    const char *swept[128];
    size_t n_swept = 0;
    const char *k;
    json_t *v;
    json_object_foreach(cfg0, k, v)
    {
        for (size_t i = 1; i < n; i++)
            if (!json_equal(
                    v, json_object_get(json_object_get(json_array_get(rows, i), "config"), k))) {
                if (n_swept < 128)
                    swept[n_swept++] = k;
                break;
            }
    }
    if (o->xkey) {
        if (!json_object_get(cfg0, o->xkey)) {
            static const char *const cgroup[] = {"config"};
            return cmd_plot_unknown_name("--x config key", o->xkey, strlen(o->xkey), r0, cgroup, 1);
        }
        g.xkey = o->xkey;
    } else { /* the numeric swept key with the most values (a curve, not two points) */
        size_t best = 0;
        for (size_t i = 0; i < n_swept; i++) {
            bool ok;
            jnum(json_object_get(cfg0, swept[i]), &ok);
            size_t nv = ok ? distinct_values(rows, swept[i]) : 0;
            if (nv > best) {
                best = nv;
                g.xkey = swept[i];
            }
        }
    }
    size_t wl = 0;
    for (size_t w = 0; w < o->n_where && wl < sizeof g.where; w++)
        wl += (size_t)snprintf(g.where + wl, sizeof g.where - wl, "%s%s", w ? ", " : "; where ",
                               o->where[w]);
    /* y columns: counts then metrics of the first row, or the --y list */
    const char *yname[CMD_PLOT_MAX_Y];
    size_t ny = 0;
    if (n_ys) {
        for (size_t i = 0; i < n_ys && ny < CMD_PLOT_MAX_Y; i++)
            yname[ny++] = ys[i];
    } else {
        const char *groups[] = {"counts", "metrics"};
        for (int gi = 0; gi < 2; gi++)
            json_object_foreach(json_object_get(r0, groups[gi]), k, v) if (ny < CMD_PLOT_MAX_Y)
                yname[ny++] = k;
    }
    g.units = json_object_get(r0, "units");
    if (g.xkey && schema) {
        const struct hw_key *hk = hw_schema_find(schema, g.xkey);
        if (hk && hk->unit)
            snprintf(g.xunit, sizeof g.xunit, "%s", hk->unit);
        if (hk)
            sentinel_of(hk->doc, g.sentinel, sizeof g.sentinel);
    }
    g.xs = mem_calloc(n + 1, sizeof *g.xs);
    g.yv = mem_calloc(n + 1, sizeof *g.yv);
    int rc = 0;
    if (!g.xs || !g.yv)
        rc = cli_fail(ERR_NOMEM, "out of memory");
    else
        rc = row_keys(&g, swept, n_swept);
    for (size_t yi = 0; yi < ny && !rc; yi++) {
        const char *yunit = json_string_value(json_object_get(g.units, yname[yi]));
        struct plot *p =
            g.xkey ? line_plot(&g, yname[yi], yunit, &rc) : bar_plot(&g, yname[yi], yunit, &rc);
        if (!p)
            break;
        if (!rc && (rc = finish_plot(p, out, n_png)))
            rc = err_exit_code(rc);
        plot_free(p);
    }
    gen_release(&g);
    return rc;
}
