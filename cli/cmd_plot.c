/*
 * cmd_plot: `acceltrace plot RESULTS -o DIR`: figures of a results folder. Every model
 * gets the generic figures (each count and metric against the first swept numeric config
 * key, one series per value of the other swept keys and labels; bars when nothing numeric
 * is swept). A model may add its own figures through one row of `model_plots` below.
 * The generic figures are drawn in cmd_plot_generic.c (cmd_plot_impl.h).
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
#include "cli/cmd_plot_impl.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/suggest.h"
#include "formats/jsonl.h"
#include "replay/model_registry.h"

/* Memory the kept rows of results.jsonl may take (--mem-limit). */
#define PLOT_DEFAULT_MEM_LIMIT ((uint64_t)8 << 30)

#define VERB CMD_PLOT_VERB

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

/* A JSON value as text (strings unquoted); caller frees with mem_free. */
char *cmd_plot_value_text(const json_t *v)
{
    if (json_is_string(v))
        return mem_strdup(json_string_value(v));
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10));
    char *d = s ? mem_strdup(s) : NULL;
    free(s);
    return d;
}

/*
 * Refuses name (a --y, --x or --where key) that none of the objects of groups holds (the
 * members of row's groups[i]), with the closest name or the list of them: exit 2.
 */
int cmd_plot_unknown_name(const char *what, const char *name, size_t len, const json_t *row,
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
bool cmd_plot_row_has(const json_t *row, const char *name, size_t len, const char *const *groups,
                      size_t n_groups)
{
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(len < 255 ? len : 255), name);
    for (size_t gi = 0; gi < n_groups; gi++)
        if (json_object_get(json_object_get(row, groups[gi]), key))
            return true;
    return false;
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
    char *t = cmd_plot_value_text(v);
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
        if (!cmd_plot_row_has(row, ys[i], strlen(ys[i]), ygroups, 2))
            return cmd_plot_unknown_name("count or metric", ys[i], strlen(ys[i]), row, ygroups, 2);
    for (size_t i = 0; i < n_where; i++) {
        size_t kl = strcspn(where[i], "=");
        bool by_name = kl == 4 && !strncmp(where[i], "name", 4) && json_object_get(row, "name");
        if (!by_name && !cmd_plot_row_has(row, where[i], kl, wgroups, 2))
            return cmd_plot_unknown_name("--where key", where[i], kl, row, wgroups, 2);
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
    const char *ys[CMD_PLOT_MAX_Y], *where[CMD_PLOT_MAX_Y];
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
            if (n_ys == CMD_PLOT_MAX_Y)
                return cli_usage_error(VERB, "more than %d --y", CMD_PLOT_MAX_Y);
            ys[n_ys++] = p.arg;
            break;
        case OPT_WHERE:
            if (n_where == CMD_PLOT_MAX_Y)
                return cli_usage_error(VERB, "more than %d --where", CMD_PLOT_MAX_Y);
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
        rc = cmd_plot_generic(rows, &po, ys, n_ys, out, &n_png);
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
