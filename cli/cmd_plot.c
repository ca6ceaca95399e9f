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

#include "analysis/plot.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/err.h"
#include "common/io.h"
#include "common/mem.h"
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

enum { OPT_X = 1, OPT_Y, OPT_WHERE };

static const struct cli_opt opts[] = {
    {OPT_X, "x", 0, CLI_ARG_STRING, "KEY",
     "x axis: a swept config key (default: the first numeric)", 0},
    {OPT_Y, "y", 0, CLI_ARG_STRING, "NAME", "a count or metric to plot (default: all)",
     CLI_OPT_REPEATABLE},
    {OPT_WHERE, "where", 0, CLI_ARG_STRING, "KEY=VALUE", "keep only the rows where KEY is VALUE",
     CLI_OPT_REPEATABLE},
    CLI_OPT_OUTPUT("DIR", "the figures' folder (required; created)"),
    CLI_OPT_MEM_LIMIT("memory the kept rows may take (default 8GiB)"),
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_plot_spec = {
    .verb = VERB,
    .usage =
        "usage: acceltrace plot RESULTS [--x KEY] [--y NAME]... [--where KEY=VALUE]... -o DIR\n"
        "\n"
        "RESULTS is a results folder (results.jsonl). For each count and metric (or each\n"
        "--y), writes DIR/<y>.dat, .gp and .png (gnuplot pngcairo): y against the swept\n"
        "config key --x (default: the first swept numeric key), one series per value of\n"
        "the other swept keys and labels. --where keeps only the rows whose config key or\n"
        "label KEY equals VALUE (numbers compare by value); repeat it to narrow further.\n"
        "Rows stream through the filters; the kept ones must fit --mem-limit SIZE\n"
        "(default 8GiB, estimated from their text). Without gnuplot the data and scripts\n"
        "are still written with a warning.\n",
    .opts = opts,
    .positional = "DIR",
};

static bool warned_gnuplot;

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

/* What the plots of one results set share: rows, the x key and the series of each row. */
struct gen_plots {
    json_t *rows;
    size_t n;
    const char *model, *xkey;
    char xunit[64];
    json_t *units;
    char **skey;     /* series key of each row: the other swept keys and the labels */
    double *xs, *yv; /* n + 1 points of scratch */
};

/* The series key of each row into g->skey: the swept keys but the x key, then the labels
 * that split a config. 0 or an exit status. */
static int series_keys(struct gen_plots *g, const char *const *swept, size_t n_swept)
{
    const char *k;
    json_t *v;
    for (size_t i = 0; i < g->n; i++) {
        json_t *row = json_array_get(g->rows, i);
        char buf[512] = "";
        size_t len = 0;
        for (size_t s = 0; s < n_swept; s++) {
            if (g->xkey && !strcmp(swept[s], g->xkey))
                continue;
            char *t = value_text(json_object_get(json_object_get(row, "config"), swept[s]));
            len += (size_t)snprintf(buf + len, len < sizeof buf ? sizeof buf - len : 0, "%s%s=%s",
                                    len ? " " : "", swept[s], t ? t : "?");
            mem_free(t);
        }
        json_object_foreach(json_object_get(row, "labels"), k, v)
        {
            if (!label_splits_config(g->rows, k))
                continue;
            len += (size_t)snprintf(buf + len, len < sizeof buf ? sizeof buf - len : 0, "%s%s=%s",
                                    len ? " " : "", k, json_string_value(v));
        }
        if (len >= sizeof buf)
            len = sizeof buf - 1;
        g->skey[i] = mem_strdup(buf[0] ? buf : (g->model ? g->model : "results"));
        if (!g->skey[i])
            return cli_fail(ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* The y value of a row: its metric y, else its count y. */
static json_t *row_y(json_t *row, const char *y)
{
    json_t *jy = json_object_get(json_object_get(row, "metrics"), y);
    return jy ? jy : json_object_get(json_object_get(row, "counts"), y);
}

/* The line plot of y over the x key, one series per series key in first-appearance
 * order; NULL after the message (*rc set) on an error. */
static struct plot *line_plot(struct gen_plots *g, const char *y, const char *yunit, int *rc)
{
    char title[400], name[300];
    snprintf(name, sizeof name, "%s_vs_%s", y, g->xkey);
    for (char *c = name; *c; c++)
        if (*c == '.')
            *c = '_';
    snprintf(title, sizeof title, "%s vs %s (model %s, %zu rows)", y, g->xkey,
             g->model ? g->model : "?", g->n);
    struct plot *p = plot_new(name, PLOT_LINE);
    if (!p) {
        *rc = cli_fail(ERR_NOMEM, "out of memory");
        return NULL;
    }
    plot_title(p, title);
    plot_xlabel(p, g->xkey, g->xunit);
    plot_ylabel(p, y, yunit);
    for (size_t i = 0; i < g->n && !*rc; i++) {
        bool first = true;
        for (size_t j = 0; j < i && first; j++)
            first = strcmp(g->skey[i], g->skey[j]) != 0;
        if (!first)
            continue;
        size_t m = 0;
        for (size_t j = i; j < g->n; j++) {
            if (strcmp(g->skey[i], g->skey[j]))
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
        if (plot_series(p, 0, g->skey[i], g->xs, g->yv, m))
            *rc = cli_fail(ERR_USAGE, plot_errmsg(p));
    }
    return p;
}

/* The bar plot of y per config (no x key); NULL after the message (*rc set) on an error. */
static struct plot *bar_plot(struct gen_plots *g, const char *y, const char *yunit, int *rc)
{
    char title[400], name[300];
    snprintf(name, sizeof name, "%s", y);
    snprintf(title, sizeof title, "%s per config (model %s)", y, g->model ? g->model : "?");
    struct plot *p = plot_new(name, PLOT_BARS);
    if (!p) {
        *rc = cli_fail(ERR_NOMEM, "out of memory");
        return NULL;
    }
    plot_title(p, title);
    plot_xlabel(p, "config", "");
    plot_ylabel(p, y, yunit);
    for (size_t i = 0; i < g->n; i++) {
        bool ok;
        g->yv[i] = jnum(row_y(json_array_get(g->rows, i), y), &ok);
    }
    const char *series[] = {y};
    if (plot_bars(p, (const char *const *)g->skey, g->n, series, 1, g->yv, false))
        *rc = cli_fail(ERR_USAGE, plot_errmsg(p));
    return p;
}

static int generic_plots(json_t *rows, const char *xkey_opt, const char **ys, size_t n_ys,
                         const char *out, int *n_png)
{
    struct gen_plots g = {.rows = rows, .n = json_array_size(rows)};
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
    if (xkey_opt) {
        if (!json_object_get(cfg0, xkey_opt))
            return cli_usage_error(VERB, "no config key '%s' in the results", xkey_opt);
        g.xkey = xkey_opt;
    } else {
        for (size_t i = 0; i < n_swept && !g.xkey; i++) {
            bool ok;
            jnum(json_object_get(cfg0, swept[i]), &ok);
            if (ok)
                g.xkey = swept[i];
        }
    }
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
    }
    g.skey = mem_calloc(n + 1, sizeof *g.skey);
    g.xs = mem_calloc(n + 1, sizeof *g.xs);
    g.yv = mem_calloc(n + 1, sizeof *g.yv);
    int rc = 0;
    if (!g.skey || !g.xs || !g.yv)
        rc = cli_fail(ERR_NOMEM, "out of memory");
    else
        rc = series_keys(&g, swept, n_swept);
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
    for (size_t i = 0; g.skey && i < n; i++)
        mem_free(g.skey[i]);
    mem_free(g.skey);
    mem_free(g.xs);
    mem_free(g.yv);
    return rc;
}

/* True when row's config key or label `key` equals `want` (numerically when both parse). */
static bool row_matches(json_t *row, const char *key, const char *want)
{
    json_t *v = json_object_get(json_object_get(row, "config"), key);
    if (!v)
        v = json_object_get(json_object_get(row, "labels"), key);
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
};

static bool where_keep(const json_t *row, void *ctx)
{
    const struct where_filter *f = ctx;
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

int cmd_plot(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *xkey = NULL;
    const char *ys[MAX_Y], *where[MAX_Y];
    size_t n_ys = 0, n_where = 0;
    uint64_t mem_limit = PLOT_DEFAULT_MEM_LIMIT;
    bool json = false, quiet = false;
    struct cli_parser p;
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
            xkey = p.arg;
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
    char path[4096];
    snprintf(path, sizeof path, "%s/results.jsonl", in);
    json_t *rows;
    struct errmsg e = {0};
    struct where_filter wf = {where, n_where};
    size_t valid = 0;
    /* rows stream through the filters; only the kept ones count against the budget */
    int rc = jsonl_load_filtered(&rows, path, where_keep, &wf, mem_limit / JSONL_MEM_PER_TEXT_BYTE,
                                 &valid, &e);
    if (rc == ERR_LIMIT) {
        char lim[32], msg[1024];
        snprintf(msg, sizeof msg,
                 "%s: at about %u bytes of memory per byte of text they need more than "
                 "--mem-limit %s; narrow the rows with --where or raise --mem-limit",
                 errmsg_text(&e), (unsigned)JSONL_MEM_PER_TEXT_BYTE,
                 mem_size_text(mem_limit, lim, sizeof lim));
        return cli_fail(ERR_LIMIT, msg);
    }
    if (rc)
        return cli_fail(rc == ERR_IO ? ERR_DATA : rc, errmsg_text(&e));
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
    rc = generic_plots(rows, xkey, ys, n_ys, out, &n_png);
    const char *model = json_string_value(json_object_get(json_array_get(rows, 0), "model"));
    for (const struct model_plot *mp = model_plots; !rc && mp->model; mp++)
        if (model && !strcmp(mp->model, model))
            rc = mp->fn(in, out);
    json_decref(rows);
    if (!rc && json)
        rc = cli_print_json(json_pack("{s:s,s:s,s:i,s:b}", "results", in, "output", out, "png",
                                      n_png, "rendered", n_png > 0));
    else if (!rc && !quiet)
        fprintf(stderr, "acceltrace: plots of '%s' -> %s (%d png)\n", in, out, n_png);
    return rc;
}
