/*
 * cmd_export: `acceltrace export KIND ...`: exports data from a trace for other tools.
 * Each kind registers one row below and lives in its own cli/cmd_export_<name>.c.
 */
#include <stddef.h>

#include "cli/subverb.h"

static const struct subverb table[] = {
    /* rows: {"name", cmd_export_name, "summary"}, */
    {NULL, NULL, NULL},
};

int cmd_export(int argc, char **argv);
int cmd_export(int argc, char **argv)
{
    return subverb_dispatch("export", "kind", table, argc, argv);
}
