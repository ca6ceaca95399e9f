/*
 * cmd_report: `acceltrace report DIR... [-o report.html] [--exclude GLOB]... [--title T]
 * [--inline]`: one self-contained HTML page over the workload folders of DIR..., and its
 * Markdown twin beside it (analysis/report.h).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/report.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"

#define VERB "report"
#define REPORT_MAX_ARGS 256

enum { OPT_TITLE = 1, OPT_EXCLUDE, OPT_INLINE };

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("FILE.html", "the page (default DIR/report.html); FILE.md is written beside"),
    {OPT_TITLE, "title", 0, CLI_ARG_STRING, "TEXT",
     "the report's title (default: acceltrace report)", 0},
    {OPT_EXCLUDE, "exclude", 0, CLI_ARG_STRING, "GLOB",
     "leave out files and folders whose path below DIR\nor whose name matches GLOB",
     CLI_OPT_REPEATABLE},
    {OPT_INLINE, "inline", 0, CLI_ARG_NONE, NULL,
     "embed the images as data: URIs (one portable file)", 0},
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_report_spec = {
    .verb = VERB,
    .usage =
        "usage: acceltrace report DIR... [-o FILE.html] [--exclude GLOB]... [--title TEXT]\n"
        "                         [--inline]\n"
        "\n"
        "Writes one self-contained HTML page (no script, nothing loaded from the network) and\n"
        "its plain-text twin FILE.md beside it. A DIR holding demo or reproduce folders (marked\n"
        ".acceltrace-demo / .acceltrace-reproduce) gets one section per marked folder, any other\n"
        "DIR is one section. Per section: the headline numbers and where each comes from, the\n"
        "ours-vs-paper table of any reproduce.csv (status labels coloured), the figures grouped\n"
        "by question with caption, command and config hash, galleries of raw images, previews of\n"
        "the tables. Images are linked relative to the page unless --inline.\n",
    .opts = opts,
    .positional = "DIR...",
};

int cmd_report(int argc, char **argv)
{
    const char *dirs[REPORT_MAX_ARGS], *excl[REPORT_MAX_ARGS];
    struct report_opts o = {.dirs = dirs, .exclude = excl, .title = "acceltrace report"};
    bool json = false, quiet = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_report_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == OPT_TITLE) {
            o.title = p.arg;
        } else if (id == OPT_EXCLUDE) {
            if (o.n_exclude == REPORT_MAX_ARGS)
                return cli_usage_error(VERB, "more than %d --exclude", REPORT_MAX_ARGS);
            excl[o.n_exclude++] = p.arg;
        } else if (id == OPT_INLINE) {
            o.inline_images = true;
        } else if (id == CLI_POSITIONAL) {
            if (o.n_dirs == REPORT_MAX_ARGS)
                return cli_usage_error(VERB, "more than %d folders", REPORT_MAX_ARGS);
            dirs[o.n_dirs++] = p.arg;
        }
    }
    o.html_path = p.common.output;
    json = p.common.json;
    quiet = p.common.quiet;
    if (!o.n_dirs)
        return cli_usage_error(VERB, "no folder given");
    size_t l = o.html_path ? strlen(o.html_path) : 0;
    if (o.html_path && (l < 5 || strcmp(o.html_path + l - 5, ".html")))
        return cli_usage_error(VERB, "-o '%s': the page's name must end in .html", o.html_path);
    struct report_stats st;
    struct errmsg e = {0};
    int rc = report_write(&o, &st, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    if (json)
        return cli_print_json(
            json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I}", "report", st.html_path, "markdown",
                      st.md_path, "workloads", (json_int_t)st.workloads, "figures",
                      (json_int_t)st.figures, "tables", (json_int_t)st.tables, "headlines",
                      (json_int_t)st.headlines, "repro_rows", (json_int_t)st.repro_rows));
    if (!quiet)
        fprintf(stderr,
                "acceltrace: %s (and %s): %zu workload folder(s), %zu figures, %zu tables, "
                "%zu headline numbers, %zu ours-vs-paper rows\n",
                st.html_path, st.md_path, st.workloads, st.figures, st.tables, st.headlines,
                st.repro_rows);
    return 0;
}
