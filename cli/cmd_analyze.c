/*
 * cmd_analyze: `acceltrace analyze ANALYZER ...`: runs an analyzer over a trace.
 * Each analyzer registers one row below and lives in its own cli/cmd_analyze_<name>.c.
 */
#include <stddef.h>

#include "cli/cli.h"
#include "cli/subverb.h"

int cmd_analyze_hash(int argc, char **argv);
int cmd_analyze_disc(int argc, char **argv);
int cmd_analyze_conflicts(int argc, char **argv);

static const struct subverb table[] = {
    {"hash", cmd_analyze_hash, "DiSC hash load balance over ST masks (paper Fig. 15)"},
    {"disc", cmd_analyze_disc, "DiSC replay figures: speedup, energy, cycles per op"},
    {"conflicts", cmd_analyze_conflicts,
     "Salca HBM pseudo-channel conflicts, alpha per issue policy"},
    /* rows: {"name", cmd_analyze_name, "summary"}, */
    {NULL, NULL, NULL},
};

int cmd_analyze(int argc, char **argv);
int cmd_analyze(int argc, char **argv)
{
    /* --allow-partial applies to every sub-verb that opens a trace (cli.h) */
    argc = cli_take_trace_options(argc, argv);
    return subverb_dispatch("analyze", "analyzer", table, argc, argv, true);
}
