/*
 * capture_parsers: the command-line side of the capture registry
 * (capture/capture_registry.h). One row per workload pairs its name (struct
 * capture_ops.name) with the option parser and grammar of its cli/cmd_capture_<name>.c.
 * The registry alone decides which workloads exist, their order and their summaries; the
 * `capture` verb, its listing and the bash completion walk the registry and look each
 * workload's row up here. capture_parsers_check() makes a registered capture without a row,
 * or a row without a registered capture, an internal error instead of a workload that
 * silently drops out of the listing. Static tables; nothing to free.
 */
#ifndef ACCELTRACE_CAPTURE_PARSERS_H
#define ACCELTRACE_CAPTURE_PARSERS_H

#include <stddef.h>

#include "common/err.h"

struct cli_spec;

struct capture_parser {
    const char *name;                 /* the workload: struct capture_ops.name */
    int (*fn)(int argc, char **argv); /* `capture NAME ...`, argv[0] is NAME */
    const struct cli_spec *spec;      /* its grammar (help, completion) */
};

/* The row of the workload `name`, or NULL. */
const struct capture_parser *capture_parser_find(const char *name);

/*
 * Checks that every registered capture has a row and every row a registered capture.
 * 0, or ERR_INTERNAL with "capture 'NAME' is registered ... but has no option parser ..."
 * (or the reverse) in e.
 */
int capture_parsers_check(struct errmsg *e);

#endif
