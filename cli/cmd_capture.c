/*
 * cmd_capture: `acceltrace capture WORKLOAD ...`: runs a workload's algorithm and writes a trace.
 * Each workload registers one row below and lives in its own cli/cmd_capture_<name>.c.
 */
#include <stddef.h>

#include "cli/subverb.h"

int cmd_capture_kura(int argc, char **argv);

static const struct subverb table[] = {
    /* rows: {"name", cmd_capture_name, "summary"}, */
    {"kura", cmd_capture_kura, "Kuramoto orientation diffusion with the SA-Kura drift"},
    {NULL, NULL, NULL},
};

int cmd_capture(int argc, char **argv);
int cmd_capture(int argc, char **argv)
{
    return subverb_dispatch("capture", "workload", table, argc, argv);
}
