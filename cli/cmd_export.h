/*
 * cmd_export: what the `export KIND` verbs (cli/cmd_export_<name>.c) share: a command line
 * of one input (a trace or a results folder) and -o, the --steps range grammar, the check
 * that the input is none of the files written, and the read of a disc trace before a peer
 * tool's file is written from it (analysis/export_peer.h).
 *
 * Each function prints its own usage error or failure and returns the exit status, so a
 * verb returns what it gets; nothing here keeps state.
 */
#ifndef ACCELTRACE_CMD_EXPORT_H
#define ACCELTRACE_CMD_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/export_peer.h"
#include "cli/cli_opt.h"
#include "common/err.h"

/* The command line of an export verb besides its own options. Values point into argv. */
struct cmd_export_args {
    const char *in;  /* the one positional argument: the trace or results folder read */
    const char *out; /* -o: the file or folder written */
    bool json;       /* --json */
    bool quiet;      /* -q (progress_global_quiet is set too) */
};

/*
 * Parses argv by spec into a (zeroed first). The positional argument is the input; a
 * second one is the usage error "more than one NOUN ('ARG')". The shared options are
 * applied by the parser (cli/cli_opt.h); every other option goes to opt(ctx, id, arg),
 * which returns 0 or the exit status of the usage error it printed. After the loop a
 * missing input or -o is the usage error need ("need FILE.atr and -o DIR").
 * Returns 0 to run, -1 when the help was printed (exit 0), else the exit status (2).
 */
int cmd_export_parse(const struct cli_spec *spec, int argc, char **argv, const char *noun,
                     const char *need, int (*opt)(void *ctx, int id, const char *arg), void *ctx,
                     struct cmd_export_args *a);

/* A --steps value "A-B" or "A" (then B = A), A <= B < 2^32, into *lo and *hi; false for
 * anything else (signs, spaces after, text). */
bool cmd_export_parse_steps(const char *v, uint32_t *lo, uint32_t *hi);

/* 0 when the input in is none of outs[0..n) (io_check_distinct); else the exit status of
 * the usage error of verb it printed ("input 'A' and output 'B' are the same file"). */
int cmd_export_check_outputs(const char *verb, const char *in, const char *const *outs, size_t n);

/*
 * Reads the disc trace at path into d (peer_dit_read), then calls write(d, ctx, e). 0 (the
 * caller prints its figures and releases d), or the exit status of the failure it printed,
 * d released: ERR_USAGE (an option the trace cannot honour, such as a step past its last)
 * is a usage error of verb naming path, anything else goes through cli_fail.
 */
int cmd_export_dit(const char *verb, const char *path, struct peer_dit *d,
                   int (*write)(const struct peer_dit *d, void *ctx, struct errmsg *e), void *ctx);

#endif
