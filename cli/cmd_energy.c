/*
 * cmd_energy: `acceltrace energy RESULTS --table E.json [-o OUT.csv]`: recomputes the
 * energy columns of a results table from its activity counts, without replaying
 * (DESIGN.md section 1; the table convention is in replay/energy.h and docs/models.md).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/err.h"
#include "replay/energy.h"

#define VERB "energy"

static void usage(FILE *f)
{
    fputs("usage: acceltrace energy RESULTS --table E.json [-o OUT.csv]\n"
          "\n"
          "RESULTS is a results CSV (results.csv, ops.csv, ...) or a results folder (its\n"
          "results.csv). Existing energy_* columns are replaced by energy_<component>_j and\n"
          "energy_j computed from the table: E = 1e-12 * sum(count * pj) + sum(watts * time).\n"
          "Rows lacking a count the table names get empty energy cells. Without -o the file\n"
          "is rewritten in place.\n",
          f);
}

int cmd_energy(int argc, char **argv);
int cmd_energy(int argc, char **argv)
{
    const char *in = NULL, *table = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--table") && i + 1 < argc) {
            table = argv[++i];
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (argv[i][0] == '-') {
            return cli_usage_error(VERB, "unknown option '%s'", argv[i]);
        } else if (!in) {
            in = argv[i];
        } else {
            return cli_usage_error(VERB, "more than one results table ('%s')", argv[i]);
        }
    }
    if (!in || !table)
        return cli_usage_error(VERB, "need RESULTS and --table E.json");
    char path[4096];
    struct stat st;
    if (!stat(in, &st) && S_ISDIR(st.st_mode))
        snprintf(path, sizeof path, "%s/results.csv", in);
    else
        snprintf(path, sizeof path, "%s", in);
    struct energy_table t;
    struct errmsg e = {0};
    int rc = energy_table_load(&t, table, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    rc = energy_recompute_csv(path, &t, out ? out : path, &e);
    energy_table_release(&t);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    fprintf(stderr, "acceltrace: energy from '%s' -> %s\n", table, out ? out : path);
    return 0;
}
