#include "cli/subverb.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/suggest.h"

/* Prints what in capitals ("WORKLOAD"), the metavar of the sub-verb in usage lines. */
static void upper(FILE *f, const char *what)
{
    for (const char *c = what; *c; c++)
        fputc(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c, f);
}

static void list(FILE *f, const char *verb, const char *what, const struct subverb *t,
                 bool reads_traces)
{
    fprintf(f, "usage: acceltrace %s ", verb);
    upper(f, what);
    fprintf(f, " [options]\n\n%ss:\n", what);
    for (; t->name; t++)
        fprintf(f, "  %-10s %s\n", t->name, t->summary);
    if (reads_traces)
        fprintf(f,
                "\noption of every %s:\n"
                "  --allow-partial  read a damaged trace (no or inconsistent index) with a\n"
                "                   warning instead of refusing it (exit 3)\n",
                what);
    fprintf(f, "\n'acceltrace %s ", verb);
    upper(f, what);
    fprintf(f, " --help' describes each\n");
}

int subverb_dispatch(const char *verb, const char *what, const struct subverb *table, int argc,
                     char **argv, bool reads_traces)
{
    if (argc < 2) {
        list(stderr, verb, what, table, reads_traces);
        return 2;
    }
    if (cli_is_help(argv[1])) {
        list(stdout, verb, what, table, reads_traces);
        return 0;
    }
    if (!strcmp(argv[1], "--list")) { /* the names alone, one a line, for scripts */
        if (argc > 2)
            return cli_usage_error(verb, "--list takes no argument ('%s')", argv[2]);
        for (const struct subverb *t = table; t->name; t++)
            printf("%s\n", t->name);
        return 0;
    }
    for (const struct subverb *t = table; t->name; t++)
        if (!strcmp(t->name, argv[1]))
            return t->fn(argc - 1, argv + 1);
    struct suggest sg;
    suggest_init(&sg, argv[1], strlen(argv[1]));
    for (const struct subverb *t = table; t->name; t++)
        suggest_add(&sg, t->name);
    const char *best = suggest_result(&sg);
    if (best)
        return cli_usage_error(verb, "unknown %s '%s'; did you mean '%s'?", what, argv[1], best);
    return cli_usage_error(verb, "unknown %s '%s'", what, argv[1]);
}
