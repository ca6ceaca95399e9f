/*
 * cmd_merge: `acceltrace merge DIR... -o DIR`: joins the results folders of sweep shards
 * (every table, rows in config order), refusing folders of different traces, models or
 * runs; replay/results.c does the streaming, locking and renaming.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/err.h"
#include "common/mem.h"
#include "replay/results.h"

#define VERB "merge"

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("DIR", "the merged results folder (required; not one of the inputs)"),
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_merge_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace merge DIR... -o DIR\n"
             "\n"
             "Joins results folders written by 'acceltrace replay --shard I/N' into one folder\n"
             "whose files equal an unsharded run's (its manifest without the shard). Folders of\n"
             "different traces, models or runs (manifests), with different columns, torn rows,\n"
             "rows out of config order or overlapping configs are refused (exit 3). Files are\n"
             "streamed, written to temporaries and renamed; DIR is locked (a folder in use by\n"
             "another writer exits 2), the input folders shared.\n",
    .opts = opts,
    .positional = "DIR",
};

int cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    const char **dirs = mem_calloc((size_t)argc + 1, sizeof *dirs);
    size_t n = 0;
    int rc = 0;
    if (!dirs)
        return cli_fail(ERR_NOMEM, "out of memory");
    bool json = false, quiet = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_merge_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD) {
            rc = cli_next_exit(id);
            goto done;
        }
        if (id == CLI_POSITIONAL)
            dirs[n++] = p.arg;
    }
    out = p.common.output;
    json = p.common.json;
    quiet = p.common.quiet;
    if (!out || !n) {
        rc = cli_usage_error(VERB, "need folders to merge and -o DIR");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp(dirs[i], out)) {
            rc = cli_usage_error(VERB, "output folder '%s' is also an input", out);
            goto done;
        }
    struct errmsg e = {0};
    if ((rc = results_merge(dirs, n, out, &e))) {
        rc = cli_fail(rc, errmsg_text(&e));
        goto done;
    }
    if (json) {
        json_t *in = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(in, json_string(dirs[i]));
        rc = cli_print_json(json_pack("{s:I,s:o,s:s,s:s+}", "merged", (json_int_t)n, "inputs", in,
                                      "output", out, "results", out, "/results.csv"));
    } else if (!quiet) {
        fprintf(stderr, "acceltrace: merged %zu folders -> %s/results.csv\n", n, out);
    }
done:
    mem_free(dirs);
    return rc;
}
