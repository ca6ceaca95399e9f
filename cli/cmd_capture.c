/*
 * cmd_capture: `acceltrace capture WORKLOAD ...`: runs a workload's algorithm and writes a trace.
 * Each workload registers one row below and lives in its own cli/cmd_capture_<name>.c.
 */
#include <stddef.h>

#include "cli/subverb.h"

int cmd_capture_disc(int argc, char **argv);
int cmd_capture_kura(int argc, char **argv);
int cmd_capture_salca(int argc, char **argv);
int cmd_capture_test(int argc, char **argv);

static const struct subverb table[] = {
    /* rows: {"name", cmd_capture_name, "summary"}, */
    {"disc", cmd_capture_disc, "DiT denoising with CTR and ST executed for real (DiSC)"},
    {"kura", cmd_capture_kura, "Kuramoto orientation diffusion with the SA-Kura drift"},
    {"salca", cmd_capture_salca, "long-context decode with Salca token selection and baselines"},
    {"test", cmd_capture_test, "synthetic TestRecords for the replay engine's tests"},
    {NULL, NULL, NULL},
};

int cmd_capture(int argc, char **argv);
int cmd_capture(int argc, char **argv)
{
    return subverb_dispatch("capture", "workload", table, argc, argv, false);
}
