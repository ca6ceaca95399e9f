/*
 * cmd_model: `acceltrace model MODEL ...`: evaluates an analytic hardware model.
 * Each model registers one row below and lives in its own cli/cmd_model_<name>.c.
 */
#include <stddef.h>

#include "cli/cli.h"
#include "cli/subverb.h"

int cmd_model_kura(int argc, char **argv);
int cmd_model_salca(int argc, char **argv);
int cmd_model_gpu(int argc, char **argv);

static const struct subverb table[] = {
    {"kura", cmd_model_kura,
     "SA-Kura timing, power/area/energy fit, budgets, DMA (docs/models.md)"},
    {"salca", cmd_model_salca,
     "Salca analytic model: PCs, Pareto front, min retention (docs/models.md)"},
    {"gpu", cmd_model_gpu,
     "per-operator GPU model: time and energy of a workload on a GPU (docs/models.md)"},
    /* rows: {"name", cmd_model_name, "summary"}, */
    {NULL, NULL, NULL},
};

int cmd_model(int argc, char **argv)
{
    /* --allow-partial applies to every sub-verb that opens a trace (cli.h) */
    argc = cli_take_trace_options(argc, argv);
    return subverb_dispatch("model", "model", table, argc, argv, true);
}
