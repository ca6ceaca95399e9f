/*
 * cli: the acceltrace program. One file per verb (cli/cmd_<verb>.c) defining
 * `int cmd_<verb>(int argc, char **argv)`, registered in the verb table of cli/main.c.
 * A verb returns the process exit status: 0 ok, 1 runtime failure, 2 usage, 3 bad input
 * data (DESIGN.md section 7). Only cli/ prints diagnostics and chooses exit codes.
 */
#ifndef ACCELTRACE_CLI_H
#define ACCELTRACE_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "common/version.h"

/* Prints "acceltrace: <message>" to stderr with a newline. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "acceltrace: warning: <message>" to stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports a usage error for verb and returns exit status 2. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports an error from a module (message + code) and returns err_exit_code(code). */
int cli_fail(int code, const char *msg);

/* True when argv[i] is -h or --help. */
bool cli_is_help(const char *arg);

/*
 * The option every verb that reads a trace for results shares (replay, analyze, export,
 * model): --allow-partial accepts a damaged trace (missing or inconsistent index,
 * traces/trace_reader.h) with a warning on stderr that -q does not hide. True when arg was
 * it; it sets the process-wide reader policy.
 */
bool cli_trace_option(const char *arg);

/* Removes the cli_trace_option options from argv (for dispatchers); returns the new argc. */
int cli_take_trace_options(int argc, char **argv);

/*
 * Number parsing for option values: whole string must parse, else false. cli_parse_f64
 * also refuses non-finite values (nan, inf, and overflow such as 1e999), so callers that
 * name their option in the message refuse them too.
 */
bool cli_parse_i64(const char *s, int64_t *out);
bool cli_parse_u64(const char *s, uint64_t *out);
bool cli_parse_f64(const char *s, double *out);

/*
 * Parses "AxB" (or "AXB") into two integers in [1, max]; false on anything else.
 */
bool cli_parse_shape(const char *s, int max, int *a, int *b);

/* The command line as one string (for trace headers); static storage. */
const char *cli_command_line(void);

#endif
