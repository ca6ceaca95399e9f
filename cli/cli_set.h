/*
 * cli_set: `--set KEY=VALUE`, one override of a hardware config key on the command line
 * (replay, sweep, export hbm-trace, config check). The overrides are applied in order to
 * the config loaded from --hw (or the model's defaults), each validated exactly as the same
 * key in a config file (type, range, choices: hw_config_set_json), then the model's
 * cross-key check runs once. VALUE is JSON text ("16", "0.5", "true"); for a string key a
 * bare word is taken as the string (`--set policy=window`). A bad override is a usage
 * error (exit 2) naming the key and the --set it came from. The values point into argv.
 */
#ifndef ACCELTRACE_CLI_SET_H
#define ACCELTRACE_CLI_SET_H

#include <stddef.h>

#include "replay/hw_config.h"

#define CLI_SET_MAX 64

/* The option row of --set (id: the verb's own). */
#define CLI_OPT_SET(id)                                                                            \
    {                                                                                              \
        (id), "set", 0, CLI_ARG_STRING, "KEY=VALUE",                                               \
            "override one config key (validated as in a config file;\nVALUE is JSON, a bare word " \
            "for a "                                                                               \
            "string key)",                                                                         \
            CLI_OPT_REPEATABLE                                                                     \
    }

/* The --set arguments of one command line, in order. */
struct cli_sets {
    const char *kv[CLI_SET_MAX]; /* "KEY=VALUE" (argv's) */
    size_t n;
};

/* Records one --set argument: exit status 2 after the message when it is not KEY=VALUE or
 * there are more than CLI_SET_MAX; 0 otherwise. */
int cli_sets_add(struct cli_sets *s, const char *verb, const char *arg);

/* Applies the overrides to c in order, then the schema's cross-key check. 0, or the exit
 * status 2 after a message naming the key and its --set. */
int cli_sets_apply(const struct cli_sets *s, const char *verb, struct hw_config *c);

/* Appends " --set 'KEY=VALUE'" for each override, shell-quoted, to out (n bytes), for the
 * command lines sweep --emit prints. false when out is too small. */
bool cli_sets_shell(const struct cli_sets *s, char *out, size_t n);

#endif
