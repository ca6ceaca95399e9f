/*
 * cli_opt: the one option grammar of every verb. A verb describes its options in a table
 * (struct cli_opt rows ending with an all-zero row) inside a struct cli_spec, and pulls them
 * with cli_next() in the style of getopt_long:
 *
 *   --name value, --name=value, -x value, -xvalue, flags (--name, -x), "--" ends options,
 *   "-" alone is a positional argument, -h/--help prints the help generated from the table.
 *
 * An unknown option is a usage error (exit 2) with "did you mean '--xyz'?" when a table
 * name is close (common/suggest.h); a missing or unparsable value is a usage error too. The
 * options every verb shares (-q, -j, -o, --json, --mem-limit, --allow-partial) come from the
 * CLI_OPT_* row macros below, so their names, letters and value kinds are the same
 * everywhere. The same tables drive `acceltrace help VERB` and the bash completion.
 * The parser applies the shared options itself (struct cli_common below): -q quiets the
 * progress reports of the process, --allow-partial sets the trace reader's policy
 * (cli_trace_option), and both with --json and -o are recorded in cli_parser.common for the
 * verb to read after the loop; -o DIR is created by cli_output_dir. cli_next still returns
 * their ids, so a verb needs no branch for them; a loop with a catch-all branch skips them
 * with cli_is_common(id).
 * The parser keeps no heap state; values point into argv.
 */
#ifndef ACCELTRACE_CLI_OPT_H
#define ACCELTRACE_CLI_OPT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The value an option takes. The parser checks INT, SIZE and DOUBLE values itself. */
enum cli_arg {
    CLI_ARG_NONE,   /* a flag */
    CLI_ARG_STRING, /* any text: a path, a name */
    CLI_ARG_INT,    /* cli_parse_i64 (decimal or 0x hex): cli_parser.i64 */
    CLI_ARG_SIZE,   /* a byte size, common/mem.h mem_parse_size: cli_parser.u64 */
    CLI_ARG_DOUBLE, /* a finite number, cli_parse_f64: cli_parser.f64 */
    CLI_ARG_LIST,   /* comma-separated text, split by the verb */
};

/* Row flags. */
#define CLI_OPT_REPEATABLE 1u /* may be given more than once (help says "(repeatable)") */
#define CLI_OPT_DEPRECATED 2u /* an old spelling: accepted with a warning naming `help`'s */
                              /* replacement; hidden from the help text and completion */
#define CLI_OPT_HIDDEN 4u     /* accepted, not listed (legacy spellings kept quiet) */

/* One option. The table ends with a row whose name is NULL and short_name 0. */
struct cli_opt {
    int id;              /* what cli_next returns for it: > 0 */
    const char *name;    /* long name without "--", or NULL */
    char short_name;     /* letter of "-x", or 0 */
    enum cli_arg arg;    /* the value it takes */
    const char *metavar; /* the value's name in help ("N", "DIR"); NULL for flags */
    const char *help;    /* one line; "\n" starts a continuation line. For a deprecated */
                         /* row: the replacement, e.g. "--mem-limit SIZE" */
    unsigned flags;      /* CLI_OPT_* */
};

/* The ids of the shared rows; a verb's own ids stay below CLI_ID_COMMON. */
enum cli_common_id {
    CLI_ID_COMMON = 1000,
    CLI_ID_QUIET,
    CLI_ID_THREADS,
    CLI_ID_OUTPUT,
    CLI_ID_JSON,
    CLI_ID_MEM_LIMIT,
    CLI_ID_ALLOW_PARTIAL,
    CLI_ID_PLOT_FORMAT,
    CLI_ID_PLOT_SIZE,
};

/* The shared rows: the one spelling of each common option. */
/* clang-format off */
#define CLI_OPT_QUIET {CLI_ID_QUIET, "quiet", 'q', CLI_ARG_NONE, NULL, \
    "no progress or status lines on stderr (warnings and errors stay)", 0}
#define CLI_OPT_THREADS(help) {CLI_ID_THREADS, "threads", 'j', CLI_ARG_INT, "N", help, 0}
#define CLI_OPT_OUTPUT(metavar, help) \
    {CLI_ID_OUTPUT, "output", 'o', CLI_ARG_STRING, metavar, help, 0}
#define CLI_OPT_JSON {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL, \
    "machine output: one JSON document on stdout", 0}
#define CLI_OPT_MEM_LIMIT(help) {CLI_ID_MEM_LIMIT, "mem-limit", 0, CLI_ARG_SIZE, "SIZE", help, 0}
#define CLI_OPT_ALLOW_PARTIAL {CLI_ID_ALLOW_PARTIAL, "allow-partial", 0, CLI_ARG_NONE, NULL, \
    "read a damaged trace (no or inconsistent index) with a\nwarning instead of refusing it " \
    "(exit 3)", 0}
/* The figures' format and size of a verb that writes plots (cli_plot_output_opt). */
#define CLI_OPT_PLOT_FORMAT {CLI_ID_PLOT_FORMAT, "format", 0, CLI_ARG_STRING, \
    "png|pdf|svg|eps|epslatex", "the figures' format (png)", 0}
#define CLI_OPT_PLOT_SIZE {CLI_ID_PLOT_SIZE, "size", 0, CLI_ARG_STRING, "WxH", \
    "figure size: px for png, inches for vector formats,\nor with a unit: 1200x800px, 6x4in, 15x10cm", 0}
#define CLI_OPT_END {0, NULL, 0, CLI_ARG_NONE, NULL, NULL, 0}
/* clang-format on */

/*
 * A verb's grammar. usage: the "usage: acceltrace VERB ..." lines and the prose that
 * precede the generated "options:" list (ends with "\n"); epilog, when not NULL, follows
 * the list; more, when not NULL, prints text after it (a list read at run time, such as the
 * models). positional: the metavar of the positional arguments for completion ("FILE",
 * "DIR" or NULL for none); subs, when not NULL, names the sub-commands for completion,
 * space-separated (config's "show check list").
 */
struct cli_spec {
    const char *verb; /* "replay", "model kura" */
    const char *usage;
    const struct cli_opt *opts;
    const char *epilog;
    void (*more)(FILE *f);
    const char *positional;
    const char *subs;
};

/* What cli_next returns besides an option id. */
enum cli_next_status {
    CLI_END = 0,         /* no argument left */
    CLI_POSITIONAL = -1, /* a positional argument: cli_parser.arg */
    CLI_HELP = -2,       /* -h or --help: the help was printed on stdout; exit 0 */
    CLI_BAD = -3,        /* a usage error was printed on stderr; exit 2 */
};

/* The shared options as the parser found them (all false/NULL when not given). */
struct cli_common {
    bool quiet;         /* -q/--quiet: progress_global_quiet is set too */
    bool json;          /* --json: one JSON document on stdout */
    bool allow_partial; /* --allow-partial: the reader policy is set too */
    const char *output; /* -o/--output's value (the last one given), or NULL */
};

/* The parse state over argv[1..argc-1] (argv[0] is the verb). */
struct cli_parser {
    const struct cli_spec *spec;
    int argc;
    char **argv;
    int i;                     /* next argument to read */
    bool rest_positional;      /* after "--" */
    const struct cli_opt *opt; /* the option just returned */
    const char *arg;           /* its value text, or the positional argument */
    int64_t i64;               /* CLI_ARG_INT */
    uint64_t u64;              /* CLI_ARG_SIZE: bytes */
    double f64;                /* CLI_ARG_DOUBLE */
    struct cli_common common;  /* the shared options seen so far */
};

void cli_parser_init(struct cli_parser *p, const struct cli_spec *spec, int argc, char **argv);

/*
 * The next option (its id, > 0, value in p->arg and the typed field of its kind), a
 * positional argument (CLI_POSITIONAL), CLI_END, CLI_HELP or CLI_BAD (see above).
 */
int cli_next(struct cli_parser *p);

/*
 * Creates the folder dir (and its parents, mode 0777 less the umask) of a verb's -o DIR,
 * or checks it is one; 0, or the exit status of the failure it reported (io_mkdir_p's
 * message and code through cli_fail).
 */
int cli_output_dir(const char *dir);

/* True for the id of a shared option that the parser applied (-q, --json, --allow-partial,
 * -o): struct cli_common. */
bool cli_is_common(int id);

/* The exit status of a CLI_HELP (0) or CLI_BAD (2) result of cli_next. */
int cli_next_exit(int status);

/* Prints the verb's help: usage, the options of the table, epilog, more(). */
void cli_help(FILE *f, const struct cli_spec *spec);

/*
 * Reports "unknown option 'ARG'" for documented verb, with "did you mean '--NAME'?" when a
 * table name is close to ARG, and returns 2. Used by cli_next.
 */
int cli_unknown_option(const struct cli_spec *spec, const char *arg);

/* The row of opts whose long name is `name` (len bytes), or whose letter is c; NULL. */
const struct cli_opt *cli_opt_find_long(const struct cli_opt *opts, const char *name, size_t len);
const struct cli_opt *cli_opt_find_short(const struct cli_opt *opts, char c);

/* Prints the space-separated option words of spec ("--hw --json -o ..."), for completion. */
void cli_opt_words(FILE *f, const struct cli_spec *spec);

#endif
