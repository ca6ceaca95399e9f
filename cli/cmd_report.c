/*
 * cmd_report: `acceltrace report DIR [--title T]`: writes DIR/report.md linking every
 * figure and table under DIR with a one-line caption (analysis/report.h).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/report.h"
#include "cli/cli.h"

#define VERB "report"

static void usage(FILE *f)
{
    fputs("usage: acceltrace report DIR [--title TEXT]\n"
          "\n"
          "Writes DIR/report.md: every figure (*.png) and table (*.csv) under DIR, grouped by\n"
          "folder, each linked with one line of caption (NAME.caption if present, else the\n"
          "gnuplot title, else the table's size and columns).\n",
          f);
}

int cmd_report(int argc, char **argv);
int cmd_report(int argc, char **argv)
{
    const char *dir = NULL, *title = "acceltrace report";
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--title") && i + 1 < argc) {
            title = argv[++i];
        } else if (argv[i][0] == '-') {
            return cli_usage_error(VERB, "unknown option '%s'", argv[i]);
        } else if (!dir) {
            dir = argv[i];
        } else {
            return cli_usage_error(VERB, "more than one folder ('%s')", argv[i]);
        }
    }
    if (!dir)
        return cli_usage_error(VERB, "no folder given");
    struct report_stats st;
    struct errmsg e = {0};
    int rc = report_write(dir, title, NULL, &st, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    fprintf(stderr, "acceltrace: %s/report.md: %zu figures, %zu tables\n", dir, st.figures,
            st.tables);
    return 0;
}
