/*
 * cmd_report: `acceltrace report DIR [--title T]`: writes DIR/report.md linking every
 * figure and table under DIR with a one-line caption (analysis/report.h).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/report.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"

#define VERB "report"

static const struct cli_opt opts[] = {
    {1, "title", 0, CLI_ARG_STRING, "TEXT", "the report's title (default: acceltrace report)", 0},
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_report_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace report DIR [--title TEXT]\n"
             "\n"
             "Writes DIR/report.md: every figure (*.png) and table (*.csv) under DIR, grouped by\n"
             "folder, each linked with one line of caption (NAME.caption if present, else the\n"
             "gnuplot title, else the table's size and columns).\n",
    .opts = opts,
    .positional = "DIR",
};

int cmd_report(int argc, char **argv)
{
    const char *dir = NULL, *title = "acceltrace report";
    bool json = false, quiet = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_report_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == 1) {
            title = p.arg;
        } else if (id == CLI_ID_JSON) {
            json = true;
        } else if (id == CLI_ID_QUIET) {
            quiet = true;
        } else if (id == CLI_POSITIONAL) {
            if (dir)
                return cli_usage_error(VERB, "more than one folder ('%s')", p.arg);
            dir = p.arg;
        }
    }
    if (!dir)
        return cli_usage_error(VERB, "no folder given");
    struct report_stats st;
    struct errmsg e = {0};
    int rc = report_write(dir, title, NULL, &st, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    if (json)
        return cli_print_json(json_pack("{s:s+,s:I,s:I}", "report", dir, "/report.md", "figures",
                                        (json_int_t)st.figures, "tables", (json_int_t)st.tables));
    if (!quiet)
        fprintf(stderr, "acceltrace: %s/report.md: %zu figures, %zu tables\n", dir, st.figures,
                st.tables);
    return 0;
}
