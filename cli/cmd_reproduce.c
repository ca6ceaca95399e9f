/*
 * cmd_reproduce: `acceltrace reproduce [disc|salca|kura|all] [--quick] [--full|--paper-scale]
 * -o DIR`: every
 * headline number of the three papers beside ours, with how ours was obtained
 * (analysis/reproduce.h), into DIR/reproduce.csv and DIR/reproduce.md. The runs are
 * in-process (capture, replay models, solvers); traces go to DIR/work.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/reproduce.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/reproduce_runs.h"
#include "common/progress.h"

#define VERB "reproduce"

enum { OPT_QUICK = 1, OPT_FULL, OPT_PAPER_SCALE };

static const struct cli_opt opts[] = {
    {OPT_QUICK, "quick", 0, CLI_ARG_NONE, NULL,
     "smaller captures (tiny DiT, 2 Salca layers x 4 steps): about a\nminute on 2 cores; without "
     "it pixart-sigma-xl shapes at 512 px\n(10 steps) and 4 Salca layers x 16 steps, under 20 "
     "minutes",
     0},
    {OPT_FULL, "full", 0, CLI_ARG_NONE, NULL,
     "also capture DiSC at 1k (4x the tokens) and replay that capture for\nthe 1k rows instead "
     "of the 512 px statistics scaled to 1k (a 1k\npixart-sigma-xl capture takes tens of minutes "
     "on 2 cores); and Salca at the\npaper's decode geometry (32 layers x 32 heads) at 32K and "
     "128K, 2 steps,\nfor the rows marked [32 layers, 32K/128K] (with --quick: 2K and 8K)",
     0},
    {OPT_PAPER_SCALE, "paper-scale", 0, CLI_ARG_NONE, NULL,
     "--full and the 2k capture too (16,384 tokens: hours on 2 cores)", 0},
    CLI_OPT_THREADS("capture threads (default: the CPU count)"),
    CLI_OPT_OUTPUT("DIR", "output folder: new, empty, or made by an earlier reproduce"),
    CLI_OPT_QUIET,
    CLI_OPT_JSON,
    CLI_OPT_END,
};

const struct cli_spec cmd_reproduce_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace reproduce [disc|salca|kura|all] [options] -o DIR\n\n"
             "Runs the headline experiments of the three papers at the papers' own settings\n"
             "where this machine can, and writes DIR/reproduce.csv and DIR/reproduce.md: one row\n"
             "per paper number (paper value or range, ours, ratio) with its status and basis:\n"
             "  predicted     our model, from inputs not fitted to this number\n"
             "  recomputed    the paper's formula on the paper's inputs (checks arithmetic)\n"
             "  calibrated    a parameter of ours was solved for it (basis names it)\n"
             "  input         equals a setting we chose\n"
             "  not-modelled  nothing of ours computes it (basis says why)\n"
             "and the acceltrace command that recomputes ours. The condition column says what\n"
             "differs from the paper (weights, steps, resolution, heads).\n\n"
             "  WORKLOAD      disc, salca, kura or all (default all)\n",
    .opts = opts,
    .epilog = "--json prints the rows as one JSON array (the columns of reproduce.csv) on stdout\n"
              "(docs/models.md, section on status labels)\n",
    .positional = "WORKLOAD",
};

/* Repository root: "." when configs/ is here, else the parent of the program's folder. */
static void find_root(char *root, size_t n)
{
    struct stat sb;
    snprintf(root, n, ".");
    if (!stat("configs", &sb) && S_ISDIR(sb.st_mode))
        return;
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return;
    self[sl] = 0;
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = 0;
    }
    snprintf(root, n, "%s", self);
}

/* The rows as one JSON array on stdout, one object per row with the columns of the CSV
 * (numbers missing on either side are null). */
static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* The rows as one JSON array on stdout; 0 or the exit status of a failure. */
static int print_rows_json(const struct repro_table *t)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < t->n; i++) {
        const struct repro_row *r = &t->rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "paper_id", json_string(r->paper_id));
        json_object_set_new(o, "quantity", json_string(r->quantity));
        json_object_set_new(o, "condition", json_string(r->condition));
        json_object_set_new(o, "paper_value", num_or_null(r->paper_value));
        json_object_set_new(o, "paper_lo", num_or_null(r->paper_lo));
        json_object_set_new(o, "paper_hi", num_or_null(r->paper_hi));
        json_object_set_new(o, "ours", num_or_null(r->ours));
        json_object_set_new(o, "unit", json_string(r->unit));
        json_object_set_new(o, "ratio", num_or_null(repro_ratio(r)));
        json_object_set_new(o, "status", json_string(repro_status_name(r->status)));
        json_object_set_new(o, "basis", json_string(r->basis));
        json_object_set_new(o, "command", json_string(r->command));
        json_array_append_new(arr, o);
    }
    return cli_print_json(arr); /* drops the reference */
}

typedef int (*repro_fn)(struct repro_table *, const struct repro_opts *, struct errmsg *);

int cmd_reproduce(int argc, char **argv)
{
    const char *out = NULL, *which = "all";
    struct repro_opts o = {0};
    bool quiet = false, json = false;
    int n_pos = 0;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_reproduce_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == OPT_QUICK) {
            o.quick = true;
        } else if (id == OPT_FULL) {
            o.full = true;
        } else if (id == OPT_PAPER_SCALE) {
            o.full = o.paper_scale = true;
        } else if (id == CLI_ID_THREADS) {
            if (p.i64 < 1 || p.i64 > 256)
                return cli_usage_error(VERB, "bad --threads %lld (1-256)", (long long)p.i64);
            o.threads = (int)p.i64;
        } else if (id == CLI_POSITIONAL) {
            if (n_pos++ || (strcmp(p.arg, "disc") && strcmp(p.arg, "salca") &&
                            strcmp(p.arg, "kura") && strcmp(p.arg, "all")))
                return cli_usage_error(VERB, "unknown argument '%s' (disc, salca, kura or all)",
                                       p.arg);
            which = p.arg;
        }
    }
    out = p.common.output;
    json = p.common.json;
    quiet = o.quiet = p.common.quiet;
    if (!out)
        return cli_usage_error(VERB, "missing -o DIR");
    struct errmsg e = {0};
    int rc = repro_dir_prepare(out, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    char root[PATH_MAX], work[PATH_MAX + 8];
    find_root(root, sizeof root);
    snprintf(work, sizeof work, "%s/work", out);
    o.work = work;
    o.root = root;
    o.dir = out;
    static const struct {
        const char *name;
        repro_fn fn;
    } runs[] = {{"disc", reproduce_disc}, {"salca", reproduce_salca}, {"kura", reproduce_kura}};
    struct repro_table t;
    repro_table_init(&t);
    char pre[1024];
    size_t pl = (size_t)snprintf(pre, sizeof pre,
                                 "Made by `acceltrace reproduce %s%s%s` "
                                 "(acceltrace %s).",
                                 which, o.quick ? " --quick" : "",
                                 o.paper_scale ? " --paper-scale"
                                 : o.full      ? " --full"
                                               : "",
                                 ACCELTRACE_VERSION);
    for (size_t k = 0; k < 3 && !rc; k++) {
        if (strcmp(which, "all") && strcmp(which, runs[k].name))
            continue;
        if (!quiet)
            fprintf(stderr, "reproduce: %s ...\n", runs[k].name);
        double t0 = progress_now_s(), c0 = (double)clock() / CLOCKS_PER_SEC;
        rc = runs[k].fn(&t, &o, &e);
        double wall = progress_now_s() - t0, cpu = (double)clock() / CLOCKS_PER_SEC - c0;
        if (!quiet)
            fprintf(stderr, "reproduce: %s done in %.1f s (%.1f s CPU)\n", runs[k].name, wall, cpu);
        if (pl < sizeof pre)
            pl += (size_t)snprintf(pre + pl, sizeof pre - pl, " %s: %.1f s wall, %.1f s CPU.",
                                   runs[k].name, wall, cpu);
    }
    rc = rc ? rc
            : repro_table_write(&t, out, "Paper numbers beside ours (acceltrace reproduce)", pre,
                                &e);
    if (!rc && !quiet)
        fprintf(stderr, "reproduce: %zu rows in %s/reproduce.csv and %s/reproduce.md\n", t.n, out,
                out);
    int st = !rc && json ? print_rows_json(&t) : 0;
    repro_table_release(&t);
    return rc ? cli_fail(rc, errmsg_text(&e)) : st;
}
