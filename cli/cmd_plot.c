/*
 * cmd_plot: `acceltrace plot RESULTS -o DIR`: figures of a results folder. Every model
 * gets the generic figures (each count and metric against the first swept numeric config
 * key, one series per value of the other swept keys and labels; bars when nothing numeric
 * is swept). A model may add its own figures through one row of `model_plots` below.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/plot.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/suggest.h"
#include "formats/jsonl.h"
#include "replay/model_registry.h"

/* Memory the kept rows of results.jsonl may take (--mem-limit). */
#define PLOT_DEFAULT_MEM_LIMIT ((uint64_t)8 << 30)

#define VERB "plot"
#define MAX_Y 64

/*
 * Model-specific figures: fn(results_dir, out_dir) writes its plots into out_dir and
 * returns an exit status. Rows: {"model", fn}.
 */
struct model_plot {
    const char *model;
    int (*fn)(const char *results_dir, const char *out_dir);
};

static const struct model_plot model_plots[] = {
    /* rows: {"disc", cmd_plot_disc}, */
    {NULL, NULL},
};

enum {
    OPT_X = 1,
    OPT_Y,
    OPT_WHERE,
    OPT_FORMAT,
    OPT_SIZE,
    OPT_LOGX,
    OPT_LOGY,
    OPT_SERIES,
    OPT_STYLE,
    OPT_FACET
};

static const struct cli_opt opts[] = {
    {OPT_X, "x", 0, CLI_ARG_STRING, "KEY",
     "x axis: a swept config key (default: the first numeric)", 0},
    {OPT_Y, "y", 0, CLI_ARG_STRING, "NAME", "a count or metric to plot (default: all)",
     CLI_OPT_REPEATABLE},
    {OPT_WHERE, "where", 0, CLI_ARG_STRING, "KEY=VALUE", "keep only the rows where KEY is VALUE",
     CLI_OPT_REPEATABLE},
    {OPT_SERIES, "series", 0, CLI_ARG_STRING, "KEY", "colour the series by this key's value", 0},
    {OPT_STYLE, "style", 0, CLI_ARG_STRING, "KEY", "dash (and mark) the series by this key's value",
     0},
    {OPT_FACET, "facet", 0, CLI_ARG_STRING, "KEY",
     "one panel per value of this key (default: by the key\nthat keeps a panel at 8 series or "
     "fewer, "
     "when needed)",
     0},
    {OPT_LOGX, "logx", 0, CLI_ARG_NONE, NULL, "logarithmic x axis", 0},
    {OPT_LOGY, "logy", 0, CLI_ARG_NONE, NULL, "logarithmic y axis", 0},
    CLI_OPT_PLOT_FORMAT,
    CLI_OPT_PLOT_SIZE,
    CLI_OPT_OUTPUT("DIR", "the figures' folder (required; created)"),
    CLI_OPT_MEM_LIMIT("memory the kept rows may take (default 8GiB)"),
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_plot_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace plot RESULTS [--x KEY] [--y NAME]... [--where KEY=VALUE]...\n"
             "                       [--series KEY] [--style KEY] [--facet KEY] [--logx] [--logy]\n"
             "                       [--format png|pdf|svg|eps|epslatex] [--size WxH] -o DIR\n"
             "\n"
             "RESULTS is a results folder (results.jsonl). For each count and metric (or each\n"
             "--y), writes DIR/<y>.dat, .gp and the figure (gnuplot; png by default): y against\n"
             "the swept config key --x (default: the first swept numeric key), one series per\n"
             "value of the other swept keys and labels, coloured by --series KEY and dashed by\n"
             "--style KEY when given. A panel holds at most 8 series: more make one panel per\n"
             "value of --facet KEY, or of the key that brings them to 8 or fewer; when none does,\n"
             "exit 2 naming the keys and their value counts. x = 0 of a key whose meaning is\n"
             "special (retention 0 = the trace's selections) is drawn as a category apart.\n"
             "--where keeps only the rows whose config key or label KEY equals VALUE (numbers\n"
             "compare by value; shown in the title); repeat it to narrow further. --size WxH:\n"
             "pixels for png, inches for the vector formats, or with a unit (px, in, cm).\n"
             "Rows stream through the filters; the kept ones must fit --mem-limit SIZE\n"
             "(default 8GiB, estimated from their text). Without gnuplot the data and scripts\n"
             "are still written with a warning.\n",
    .opts = opts,
    .positional = "DIR",
};

static bool warned_gnuplot;

static const char *opt_format, *opt_size;

int cli_plot_output_opt(const char *verb, int id, const char *arg)
{
    if (id == CLI_ID_PLOT_FORMAT) {
        opt_format = arg;
        return 0;
    }
    if (id == CLI_ID_PLOT_SIZE) {
        opt_size = arg;
        return 0;
    }
    struct plot_output o = {PLOT_FMT_PNG, 0, 0};
    if (opt_format && plot_format_parse(opt_format, &o.format))
        return cli_usage_error(verb, "bad --format '%s' (png, pdf, svg, eps or epslatex)",
                               opt_format);
    if (opt_size && plot_size_parse(opt_size, o.format, &o.width_px, &o.height_px))
        return cli_usage_error(verb,
                               "bad --size '%s' (WxH: px for png, inches for vector formats, or "
                               "with px, in, cm; 1 to 100 in)",
                               opt_size);
    plot_set_output(&o);
    return 0;
}

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

static char *value_text(const json_t *v)
{
    if (json_is_string(v))
        return mem_strdup(json_string_value(v));
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10));
    char *d = s ? mem_strdup(s) : NULL;
    free(s);
    return d;
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

/* How the generic figures are drawn (the options of one plot run). */
struct plot_opts {
    const char *xkey, *series, *style, *facet;
    bool logx, logy;
    const char **where;
    size_t n_where;
};

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
    return cli_usage_error(VERB,
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
            char *t = jv ? value_text(jv) : mem_strdup("?");
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
            return cli_usage_error(VERB,
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

/*
 * Refuses name (a --y, --x or --where key) that none of the objects of groups holds (the
 * members of row's groups[i]), with the closest name or the list of them: exit 2.
 */
static int unknown_name(const char *what, const char *name, size_t len, const json_t *row,
                        const char *const *groups, size_t n_groups)
{
    struct suggest sg;
    struct buf names;
    buf_init(&names);
    suggest_init(&sg, name, len);
    for (size_t gi = 0; gi < n_groups; gi++) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(row, groups[gi]), k, v)
        {
            suggest_add(&sg, k);
            buf_printf(&names, "%s%s", names.len ? ", " : "", k);
        }
    }
    const char *best = suggest_result(&sg);
    int rc = best
                 ? cli_usage_error(VERB, "unknown %s '%.*s'; did you mean '%s'?", what, (int)len,
                                   name, best)
                 : cli_usage_error(VERB, "unknown %s '%.*s' (the results have: %s)", what, (int)len,
                                   name, names.data ? (const char *)names.data : "nothing");
    buf_release(&names);
    return rc;
}

/* True when one of row's groups holds member name (len bytes). */
static bool row_has(const json_t *row, const char *name, size_t len, const char *const *groups,
                    size_t n_groups)
{
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(len < 255 ? len : 255), name);
    for (size_t gi = 0; gi < n_groups; gi++)
        if (json_object_get(json_object_get(row, groups[gi]), key))
            return true;
    return false;
}

static int generic_plots(json_t *rows, const struct plot_opts *o, const char **ys, size_t n_ys,
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
            return unknown_name("--x config key", o->xkey, strlen(o->xkey), r0, cgroup, 1);
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
    const char *yname[MAX_Y];
    size_t ny = 0;
    if (n_ys) {
        for (size_t i = 0; i < n_ys && ny < MAX_Y; i++)
            yname[ny++] = ys[i];
    } else {
        const char *groups[] = {"counts", "metrics"};
        for (int gi = 0; gi < 2; gi++)
            json_object_foreach(json_object_get(r0, groups[gi]), k, v) if (ny < MAX_Y) yname[ny++] =
                k;
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

/* True when row's config key or label `key` equals `want` (numerically when both parse). */
static bool row_matches(json_t *row, const char *key, const char *want)
{
    json_t *v = json_object_get(json_object_get(row, "config"), key);
    if (!v)
        v = json_object_get(json_object_get(row, "labels"), key);
    if (!v && !strcmp(key, "name"))
        v = json_object_get(row, "name"); /* a sweep row's name */
    if (!v)
        return false;
    char *t = value_text(v);
    bool eq = false;
    if (t) {
        double a, b;
        if (cli_parse_f64(t, &a) && cli_parse_f64(want, &b))
            eq = a == b;
        else
            eq = !strcmp(t, want);
    }
    mem_free(t);
    return eq;
}

/* Replaces *rows by the rows matching every KEY=VALUE filter; usage error if none match. */
/* The --where filters of one plot run, applied to each row as results.jsonl streams. */
struct where_filter {
    const char **where;
    size_t n_where;
    json_t *first; /* the first row read, kept or not (its keys check the filters) */
};

static bool where_keep(const json_t *row, void *ctx)
{
    struct where_filter *f = ctx;
    if (!f->first)
        f->first = json_deep_copy(row);
    for (size_t w = 0; w < f->n_where; w++) {
        char key[256];
        const char *eq = strchr(f->where[w], '=');
        size_t kl = (size_t)(eq - f->where[w]);
        if (kl >= sizeof key)
            kl = sizeof key - 1;
        memcpy(key, f->where[w], kl);
        key[kl] = 0;
        if (!row_matches((json_t *)row, key, eq + 1))
            return false;
    }
    return true;
}

/* The checks of --y and --where names against the results' first row; 0 or exit 2. */
static int check_names(const json_t *row, const char **ys, size_t n_ys, const char **where,
                       size_t n_where)
{
    static const char *const ygroups[] = {"counts", "metrics"};
    static const char *const wgroups[] = {"config", "labels"};
    for (size_t i = 0; i < n_ys; i++)
        if (!row_has(row, ys[i], strlen(ys[i]), ygroups, 2))
            return unknown_name("count or metric", ys[i], strlen(ys[i]), row, ygroups, 2);
    for (size_t i = 0; i < n_where; i++) {
        size_t kl = strcspn(where[i], "=");
        bool by_name = kl == 4 && !strncmp(where[i], "name", 4) && json_object_get(row, "name");
        if (!by_name && !row_has(row, where[i], kl, wgroups, 2))
            return unknown_name("--where key", where[i], kl, row, wgroups, 2);
    }
    return 0;
}

/*
 * The results folder of the positional argument: a folder as is; a results.jsonl or
 * results.csv file stands for its folder (written to dir). 0, or exit 2 for another file.
 */
static int results_folder(const char *in, char *dir, size_t n)
{
    struct stat st;
    snprintf(dir, n, "%s", in);
    if (stat(in, &st) != 0 || S_ISDIR(st.st_mode))
        return 0;
    const char *slash = strrchr(in, '/');
    const char *base = slash ? slash + 1 : in;
    if (strcmp(base, "results.jsonl") && strcmp(base, "results.csv"))
        return cli_usage_error(VERB,
                               "'%s' is a file: give the results folder (the one holding "
                               "results.jsonl)",
                               in);
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == in)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - in), in);
    return 0;
}

int cmd_plot(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    struct plot_opts po = {0};
    const char *ys[MAX_Y], *where[MAX_Y];
    size_t n_ys = 0, n_where = 0;
    uint64_t mem_limit = PLOT_DEFAULT_MEM_LIMIT;
    bool json = false, quiet = false;
    struct cli_parser p;
    int rc;
    cli_parser_init(&p, &cmd_plot_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        switch (id) {
        case CLI_HELP:
        case CLI_BAD:
            return cli_next_exit(id);
        case CLI_ID_OUTPUT:
            out = p.arg;
            break;
        case OPT_X:
            po.xkey = p.arg;
            break;
        case OPT_SERIES:
            po.series = p.arg;
            break;
        case OPT_STYLE:
            po.style = p.arg;
            break;
        case OPT_FACET:
            po.facet = p.arg;
            break;
        case OPT_LOGX:
            po.logx = true;
            break;
        case OPT_LOGY:
            po.logy = true;
            break;
        case CLI_ID_PLOT_FORMAT:
        case CLI_ID_PLOT_SIZE:
            if ((rc = cli_plot_output_opt(VERB, id, p.arg)))
                return rc;
            break;
        case OPT_Y:
            if (n_ys == MAX_Y)
                return cli_usage_error(VERB, "more than %d --y", MAX_Y);
            ys[n_ys++] = p.arg;
            break;
        case OPT_WHERE:
            if (n_where == MAX_Y)
                return cli_usage_error(VERB, "more than %d --where", MAX_Y);
            if (!strchr(p.arg, '=') || p.arg[0] == '=')
                return cli_usage_error(VERB, "--where wants KEY=VALUE, not '%s'", p.arg);
            where[n_where++] = p.arg;
            break;
        case CLI_ID_MEM_LIMIT:
            if (!p.u64)
                return cli_usage_error(VERB, "bad --mem-limit '%s' (a size such as 4GiB)", p.arg);
            mem_limit = p.u64;
            break;
        case CLI_ID_JSON:
            json = true;
            break;
        case CLI_ID_QUIET:
            quiet = true;
            break;
        case CLI_POSITIONAL:
            if (in)
                return cli_usage_error(VERB, "more than one results folder ('%s')", p.arg);
            in = p.arg;
            break;
        default:
            break;
        }
    }
    if (!in || !out)
        return cli_usage_error(VERB, "need a results folder and -o DIR");
    if ((rc = cli_plot_output_opt(VERB, 0, NULL)))
        return rc;
    char in_dir[4096];
    if ((rc = results_folder(in, in_dir, sizeof in_dir)))
        return rc;
    in = in_dir;
    char path[4096 + 16];
    snprintf(path, sizeof path, "%s/results.jsonl", in);
    json_t *rows;
    struct errmsg e = {0};
    struct where_filter wf = {where, n_where, NULL};
    size_t valid = 0;
    /* rows stream through the filters; only the kept ones count against the budget */
    rc = jsonl_load_filtered(&rows, path, where_keep, &wf, mem_limit / JSONL_MEM_PER_TEXT_BYTE,
                             &valid, &e);
    if (rc == ERR_LIMIT) {
        json_decref(wf.first);
        char lim[32], msg[1024];
        snprintf(msg, sizeof msg,
                 "%s: at about %u bytes of memory per byte of text they need more than "
                 "--mem-limit %s; narrow the rows with --where or raise --mem-limit",
                 errmsg_text(&e), (unsigned)JSONL_MEM_PER_TEXT_BYTE,
                 mem_size_text(mem_limit, lim, sizeof lim));
        return cli_fail(ERR_LIMIT, msg);
    }
    if (rc) {
        json_decref(wf.first);
        return cli_fail(rc == ERR_IO ? ERR_DATA : rc, errmsg_text(&e));
    }
    rc = wf.first ? check_names(wf.first, ys, n_ys, where, n_where) : 0;
    json_decref(wf.first);
    if (rc) {
        json_decref(rows);
        return rc;
    }
    if (!json_array_size(rows)) {
        json_decref(rows);
        if (!valid)
            return cli_fail(ERR_DATA, "no rows in results");
        return cli_usage_error(VERB, "no results row matches the --where filters");
    }
    struct errmsg me = {0};
    if ((rc = io_mkdir_p(out, 0755, &me)) != 0) {
        json_decref(rows);
        return cli_fail(rc, errmsg_text(&me));
    }
    int n_png = 0;
    po.where = where;
    po.n_where = n_where;
    if (po.facet && po.xkey && !strcmp(po.facet, po.xkey))
        rc = cli_usage_error(VERB, "--facet '%s' is the x key", po.facet);
    else
        rc = generic_plots(rows, &po, ys, n_ys, out, &n_png);
    const char *model = json_string_value(json_object_get(json_array_get(rows, 0), "model"));
    for (const struct model_plot *mp = model_plots; !rc && mp->model; mp++)
        if (model && !strcmp(mp->model, model))
            rc = mp->fn(in, out);
    json_decref(rows);
    if (!rc) /* what made the figures, for the report */
        rc = cli_write_output_manifest("plot", out, in, NULL, 0);
    struct plot_output po_out;
    plot_get_output(&po_out);
    const char *ext = plot_format_ext(po_out.format);
    if (!rc && json)
        rc = cli_print_json(json_pack("{s:s,s:s,s:i,s:s,s:i,s:b}", "results", in, "output", out,
                                      "png", po_out.format == PLOT_FMT_PNG ? n_png : 0, "format",
                                      plot_format_name(po_out.format), "figures", n_png, "rendered",
                                      n_png > 0));
    else if (!rc && !quiet)
        fprintf(stderr, "acceltrace: plots of '%s' -> %s (%d %s)\n", in, out, n_png, ext);
    return rc;
}
