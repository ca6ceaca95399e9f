/*
 * cmd_merge: `acceltrace merge DIR... -o DIR`: joins the results folders of sweep shards
 * (every table, rows in config order), refusing folders of different traces, models or
 * runs; replay/results.c does the streaming, locking and renaming.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/err.h"
#include "common/mem.h"
#include "replay/results.h"

#define VERB "merge"

static void usage(FILE *f)
{
    fputs("usage: acceltrace merge DIR... -o DIR\n"
          "\n"
          "Joins results folders written by 'acceltrace replay --shard I/N' into one folder\n"
          "whose files equal an unsharded run's (its manifest without the shard). Folders of\n"
          "different traces, models or runs (manifests), with different columns, torn rows,\n"
          "rows out of config order or overlapping configs are refused (exit 3). Files are\n"
          "streamed, written to temporaries and renamed; DIR is locked (a folder in use by\n"
          "another writer exits 2), the input folders shared.\n",
          f);
}

int cmd_merge(int argc, char **argv);
int cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    const char **dirs = mem_calloc((size_t)argc + 1, sizeof *dirs);
    size_t n = 0;
    int rc = 0;
    if (!dirs)
        return cli_fail(ERR_NOMEM, "out of memory");
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            goto done;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (argv[i][0] == '-') {
            rc = cli_usage_error(VERB, "unknown option '%s'", argv[i]);
            goto done;
        } else {
            dirs[n++] = argv[i];
        }
    }
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
    fprintf(stderr, "acceltrace: merged %zu folders -> %s/results.csv\n", n, out);
done:
    mem_free(dirs);
    return rc;
}
