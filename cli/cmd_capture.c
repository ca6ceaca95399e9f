/*
 * cmd_capture: `acceltrace capture WORKLOAD ...`: runs a workload's algorithm and writes a trace.
 * The workloads, their order and their summaries are the capture registry's
 * (capture/capture_registry.c); each workload's options are parsed by its own
 * cli/cmd_capture_<name>.c, paired with its name by one row of `parsers` below.
 */
#include <stddef.h>
#include <string.h>

#include "capture/capture_registry.h"
#include "cli/subverb.h"

int cmd_capture_disc(int argc, char **argv);
int cmd_capture_kura(int argc, char **argv);
int cmd_capture_salca(int argc, char **argv);
int cmd_capture_test(int argc, char **argv);

/* The option parser of each registered workload, by its name (struct capture_ops.name). */
static const struct capture_parser {
    const char *name;
    int (*fn)(int argc, char **argv);
} parsers[] = {
    {"disc", cmd_capture_disc},
    {"kura", cmd_capture_kura},
    {"salca", cmd_capture_salca},
    {"test", cmd_capture_test},
};

#define N_PARSERS (sizeof parsers / sizeof parsers[0])

/*
 * Fills table (room for N_PARSERS rows and the {NULL} end) with the registered captures
 * that have a parser, in registry order, each with the summary of its ops.
 */
static void build_table(struct subverb *table)
{
    size_t n = 0;
    for (size_t i = 0; i < capture_registry_count(); i++) {
        const struct capture_ops *ops = capture_registry_get(i);
        for (size_t j = 0; j < N_PARSERS && n < N_PARSERS; j++)
            if (!strcmp(parsers[j].name, ops->name)) {
                table[n++] = (struct subverb){ops->name, parsers[j].fn, ops->summary};
                break;
            }
    }
    table[n] = (struct subverb){NULL, NULL, NULL};
}

int cmd_capture(int argc, char **argv);
int cmd_capture(int argc, char **argv)
{
    struct subverb table[N_PARSERS + 1];
    build_table(table);
    return subverb_dispatch("capture", "workload", table, argc, argv, false);
}
