/*
 * cmd_capture: `acceltrace capture WORKLOAD ...`: runs a workload's algorithm and writes a trace.
 * The workloads, their order and their summaries are the capture registry's
 * (capture/capture_registry.c); each workload's options are parsed by its own
 * cli/cmd_capture_<name>.c, found by its name in cli/capture_parsers.c.
 */
#include "cli/cmd_capture.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture_registry.h"
#include "cli/capture_parsers.h"
#include "cli/cli.h"
#include "cli/subverb.h"

#define MAX_CAPTURES 64

int cmd_capture(int argc, char **argv);
int cmd_capture(int argc, char **argv)
{
    struct errmsg e = {0};
    if (capture_parsers_check(&e) || capture_registry_count() > MAX_CAPTURES)
        return cli_fail(ERR_INTERNAL,
                        e.code ? e.text : "more captures than cli/cmd_capture.c lists");
    struct subverb table[MAX_CAPTURES + 1];
    size_t n = 0;
    for (size_t i = 0; i < capture_registry_count(); i++) {
        const struct capture_ops *ops = capture_registry_get(i);
        table[n++] = (struct subverb){ops->name, capture_parser_find(ops->name)->fn, ops->summary};
    }
    table[n] = (struct subverb){NULL, NULL, NULL};
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
