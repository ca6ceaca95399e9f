/*
 * cmd_model: `acceltrace model MODEL ...`: evaluates an analytic hardware model.
 * Each model registers one row below and lives in its own cli/cmd_model_<name>.c.
 */
#include <stddef.h>

#include "cli/subverb.h"

static const struct subverb table[] = {
    /* rows: {"name", cmd_model_name, "summary"}, */
    {NULL, NULL, NULL},
};

int cmd_model(int argc, char **argv);
int cmd_model(int argc, char **argv)
{
    return subverb_dispatch("model", "model", table, argc, argv);
}
