/*
 * cmd_capture: `acceltrace capture WORKLOAD ...`: runs a workload's algorithm and writes a trace.
 * The workloads, their order and their summaries are the capture registry's
 * (capture/capture_registry.c); each workload's options are parsed by its own
 * cli/cmd_capture_<name>.c, paired with its name by one row of `parsers` below.
 */
#include "cli/cmd_capture.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture_registry.h"
#include "cli/cli.h"
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

int cmd_capture_resume_check(const struct capture_ops *ops, bool resume)
{
    if (!resume || (ops->checkpoint_save && ops->checkpoint_load))
        return 0;
    return cli_usage_error("capture", "capture %s cannot resume", ops->name);
}

int cmd_capture_run(const struct capture_ops *ops, void *inst, const char *out,
                    const struct capture_opts *o, struct errmsg *e)
{
    if (o->resume && !o->quiet && !progress_global_quiet) {
        uint64_t unit = 0;
        struct errmsg pe = {0};
        int rc = capture_checkpoint_unit(out, &unit, &pe);
        if (!rc)
            fprintf(stderr, "acceltrace: resuming '%s' at unit %llu of its checkpoint\n", out,
                    (unsigned long long)unit);
        else if (rc == ERR_NOTFOUND)
            fprintf(stderr, "acceltrace: no checkpoint '%s%s': starting fresh\n", out,
                    CAPTURE_CKPT_SUFFIX);
    }
    return capture_run(ops, inst, out, o, e);
}
