/*
 * subverb: dispatch for verbs whose first argument names a workload or analyzer
 * (`capture disc`, `analyze hash`, `model salca`, `export tiles`). Each table ends with a
 * {NULL} row; the function gets argv starting at the sub-verb name.
 */
#ifndef ACCELTRACE_SUBVERB_H
#define ACCELTRACE_SUBVERB_H

#include <stdbool.h>

struct subverb {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

/*
 * Dispatches argv[1] to the table (argv[0] is the verb); prints help and usage errors.
 * `VERB --list` prints the sub-verb names, one a line, in table order.
 * reads_traces: the verb's sub-verbs open traces, so its help lists --allow-partial (taken
 * by cli_take_trace_options before dispatch).
 */
int subverb_dispatch(const char *verb, const char *what, const struct subverb *table, int argc,
                     char **argv, bool reads_traces);

#endif
