/*
 * cmd_energy: `acceltrace energy RESULTS --table E.json [-o OUT.csv]`: recomputes the
 * energy columns of a results folder (every table, .csv and .jsonl alike, and its
 * manifest) or of one results CSV from the activity counts, without replaying (the table
 * convention is in replay/energy.h and docs/models.md).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/err.h"
#include "replay/energy.h"
#include "replay/results.h"

#define VERB "energy"

static const struct cli_opt opts[] = {
    {1, "table", 0, CLI_ARG_STRING, "E.json", "the energy table (required; docs/models.md)", 0},
    CLI_OPT_OUTPUT("OUT.csv", "write only the recomputed CSV there, RESULTS untouched"),
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_energy_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace energy RESULTS --table E.json [-o OUT.csv]\n"
             "\n"
             "RESULTS is a results folder or a results CSV (results.csv, ops.csv, ...). The\n"
             "energy columns (energy_j and energy_<component>_j, in J) are replaced by the\n"
             "table's: E = 1e-12 * sum(count * pj) + sum(watts * time); every other column\n"
             "(energy_gain_vs_dense among them) is kept. Rows lacking a count the table names\n"
             "get empty energy cells. A folder is rewritten in place, locked: every table's\n"
             ".csv and .jsonl (what plot reads), and its manifest names the new table, so a\n"
             "later 'replay --energy E.json' into it resumes. With -o only the CSV (the\n"
             "folder's results.csv) is written to OUT.csv.\n",
    .opts = opts,
    .positional = "FILE",
};

int cmd_energy(int argc, char **argv)
{
    const char *in = NULL, *table = NULL, *out = NULL;
    bool json = false, quiet = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_energy_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == 1) {
            table = p.arg;
        } else if (id == CLI_POSITIONAL) {
            if (in)
                return cli_usage_error(VERB, "more than one results table ('%s')", p.arg);
            in = p.arg;
        }
    }
    out = p.common.output;
    json = p.common.json;
    quiet = p.common.quiet;
    if (!in || !table)
        return cli_usage_error(VERB, "need RESULTS and --table E.json");
    char path[4096];
    struct stat st;
    bool is_dir = !stat(in, &st) && S_ISDIR(st.st_mode);
    if (is_dir)
        snprintf(path, sizeof path, "%s/results.csv", in);
    else
        snprintf(path, sizeof path, "%s", in);
    size_t len = strlen(path);
    if (!is_dir && !out && len > 4 && !strcmp(path + len - 4, ".csv")) {
        /* a table of a results folder: its .jsonl must change with it */
        char jp[4200];
        snprintf(jp, sizeof jp, "%.*s.jsonl", (int)(len - 4), path);
        if (!stat(jp, &st))
            return cli_usage_error(VERB,
                                   "'%s' is a table of a results folder (beside '%s'): give "
                                   "the folder, so .csv and .jsonl change together",
                                   in, jp);
    }
    struct energy_table t;
    struct errmsg e = {0};
    char hash[RESULTS_HASH_HEX];
    int rc = energy_table_load(&t, table, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    size_t rows = 0;
    if (is_dir && !out) {
        if (!(rc = energy_check_csv(&t, path, &e)) &&
            !(rc = results_hash_json_file(table, hash, &e)))
            rc = results_energy(in, &t, hash, &rows, &e);
    } else {
        rc = energy_recompute_csv(path, &t, out ? out : path, &e);
    }
    energy_table_release(&t);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    if (json)
        return cli_print_json(json_pack("{s:s,s:s,s:s,s:I}", "table", table, "input", in, "output",
                                        out      ? out
                                        : is_dir ? in
                                                 : path,
                                        "rows", (json_int_t)rows));
    if (quiet)
        return 0;
    if (is_dir && !out)
        fprintf(stderr, "acceltrace: energy from '%s' -> %zu rows of %s (.csv and .jsonl)\n", table,
                rows, in);
    else
        fprintf(stderr, "acceltrace: energy from '%s' -> %s\n", table, out ? out : path);
    return 0;
}
