/*
 * cmd_export: `acceltrace export KIND ...`: exports data from a trace for other tools.
 * Each kind registers one row below and lives in its own cli/cmd_export_<name>.c.
 */
#include <stddef.h>

#include "cli/cli.h"
#include "cli/subverb.h"

int cmd_export_tiles(int argc, char **argv);
int cmd_export_hbm(int argc, char **argv);
int cmd_export_timeline(int argc, char **argv);
int cmd_export_scalesim(int argc, char **argv);
int cmd_export_chakra(int argc, char **argv);

static const struct subverb table[] = {
    {"tiles", cmd_export_tiles, "SA-Kura RTL stimulus ($readmemh) for one step and array shape"},
    {"hbm-trace", cmd_export_hbm, "Salca K/V gathers as Ramulator 2 / DRAMsim3 request traces"},
    {"timeline", cmd_export_timeline,
     "a replayed config's schedule as a Chrome/Perfetto timeline (JSON)"},
    {"scalesim", cmd_export_scalesim, "a DiT step's GEMMs as a SCALE-Sim v2 topology and config"},
    {"chakra", cmd_export_chakra,
     "a DiT's modelled ops with measured densities as a Chakra execution trace"},
    /* rows: {"name", cmd_export_name, "summary"}, */
    {NULL, NULL, NULL},
};

int cmd_export(int argc, char **argv);
int cmd_export(int argc, char **argv)
{
    /* --allow-partial applies to every sub-verb that opens a trace (cli.h) */
    argc = cli_take_trace_options(argc, argv);
    return subverb_dispatch("export", "kind", table, argc, argv, true);
}
