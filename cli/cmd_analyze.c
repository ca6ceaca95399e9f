/*
 * cmd_analyze: `acceltrace analyze ANALYZER ...`: runs an analyzer over a trace.
 * Each analyzer registers one row below and lives in its own cli/cmd_analyze_<name>.c.
 */
#include <stddef.h>

#include "cli/subverb.h"

static const struct subverb table[] = {
    /* rows: {"name", cmd_analyze_name, "summary"}, */
    {NULL, NULL, NULL},
};

int cmd_analyze(int argc, char **argv);
int cmd_analyze(int argc, char **argv)
{
    return subverb_dispatch("analyze", "analyzer", table, argc, argv);
}
