#include "cli/cli_opt.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/suggest.h"

/* Column of the help lines after the option words. */
#define HELP_COLUMN 24

void cli_parser_init(struct cli_parser *p, const struct cli_spec *spec, int argc, char **argv)
{
    memset(p, 0, sizeof *p);
    p->spec = spec;
    p->argc = argc;
    p->argv = argv;
    p->i = 1;
}

int cli_output_dir(const char *dir)
{
    struct errmsg e = {0};
    int rc = io_mkdir_p(dir, 0777, &e);
    return rc ? cli_fail(rc, errmsg_text(&e)) : 0;
}

bool cli_is_common(int id)
{
    return id == CLI_ID_QUIET || id == CLI_ID_JSON || id == CLI_ID_ALLOW_PARTIAL ||
           id == CLI_ID_OUTPUT;
}

/* Records a shared option in p->common and applies its process-wide effect. */
static void apply_common(struct cli_parser *p, int id)
{
    switch (id) {
    case CLI_ID_QUIET:
        p->common.quiet = true;
        progress_global_quiet = true;
        break;
    case CLI_ID_JSON:
        p->common.json = true;
        break;
    case CLI_ID_ALLOW_PARTIAL:
        p->common.allow_partial = true;
        cli_trace_option("--allow-partial");
        break;
    case CLI_ID_OUTPUT:
        p->common.output = p->arg;
        break;
    default:
        break;
    }
}

int cli_next_exit(int status)
{
    return status == CLI_HELP ? 0 : 2;
}

const struct cli_opt *cli_opt_find_long(const struct cli_opt *opts, const char *name, size_t len)
{
    for (const struct cli_opt *o = opts; o->name || o->short_name; o++)
        if (o->name && strlen(o->name) == len && !strncmp(o->name, name, len))
            return o;
    return NULL;
}

const struct cli_opt *cli_opt_find_short(const struct cli_opt *opts, char c)
{
    for (const struct cli_opt *o = opts; o->name || o->short_name; o++)
        if (o->short_name == c)
            return o;
    return NULL;
}

/* The listed long name (or "help") closest to name (common/suggest.h), or NULL. */
static const char *closest(const struct cli_opt *opts, const char *name, size_t len)
{
    struct suggest sg;
    suggest_init(&sg, name, len);
    for (const struct cli_opt *o = opts; o->name || o->short_name; o++)
        if (o->name && !(o->flags & (CLI_OPT_DEPRECATED | CLI_OPT_HIDDEN)))
            suggest_add(&sg, o->name);
    suggest_add(&sg, "help");
    return suggest_result(&sg);
}

int cli_unknown_option(const struct cli_spec *spec, const char *arg)
{
    const char *hint = NULL;
    if (arg[0] == '-' && arg[1] == '-') {
        const char *name = arg + 2;
        size_t len = strcspn(name, "=");
        hint = closest(spec->opts, name, len);
    }
    if (hint)
        return cli_usage_error(spec->verb, "unknown option '%s'; did you mean '--%s'?", arg, hint);
    return cli_usage_error(spec->verb, "unknown option '%s'", arg);
}

static const char *kind_text(enum cli_arg k)
{
    switch (k) {
    case CLI_ARG_INT:
        return "an integer";
    case CLI_ARG_SIZE:
        return "a size such as 8GiB";
    case CLI_ARG_DOUBLE:
        return "a finite number";
    default:
        return "a value";
    }
}

/* Checks p->arg against the option's kind and fills the typed field; 0 or CLI_BAD. */
static int take_value(struct cli_parser *p, const char *spelled)
{
    const struct cli_opt *o = p->opt;
    bool ok = true;
    switch (o->arg) {
    case CLI_ARG_INT:
        ok = cli_parse_i64(p->arg, &p->i64);
        break;
    case CLI_ARG_SIZE:
        ok = mem_parse_size(p->arg, &p->u64) == 0;
        break;
    case CLI_ARG_DOUBLE:
        ok = cli_parse_f64(p->arg, &p->f64);
        break;
    default:
        break;
    }
    if (ok)
        return 0;
    cli_usage_error(p->spec->verb, "%s needs %s, not '%s'", spelled, kind_text(o->arg), p->arg);
    return CLI_BAD;
}

/* Warns once per use of a deprecated spelling. */
static void warn_deprecated(const struct cli_opt *o)
{
    if (o->short_name)
        cli_warn("-%c/--%s is deprecated: use %s", o->short_name, o->name,
                 o->help ? o->help : "the new spelling");
    else
        cli_warn("--%s is deprecated: use %s", o->name, o->help ? o->help : "the new spelling");
}

int cli_next(struct cli_parser *p)
{
    p->opt = NULL;
    p->arg = NULL;
    if (p->i >= p->argc)
        return CLI_END;
    const char *a = p->argv[p->i++];
    if (p->rest_positional || a[0] != '-' || !a[1]) {
        p->arg = a;
        return CLI_POSITIONAL;
    }
    if (!strcmp(a, "--")) {
        p->rest_positional = true;
        return cli_next(p);
    }
    if (cli_is_help(a)) {
        cli_help(stdout, p->spec);
        return CLI_HELP;
    }
    const struct cli_opt *o;
    const char *inline_val = NULL;
    char spelled[80];
    if (a[1] == '-') {
        size_t len = strcspn(a + 2, "=");
        o = cli_opt_find_long(p->spec->opts, a + 2, len);
        if (a[2 + len] == '=')
            inline_val = a + 3 + len;
        snprintf(spelled, sizeof spelled, "--%.*s", (int)len, a + 2);
    } else {
        o = cli_opt_find_short(p->spec->opts, a[1]);
        if (a[2])
            inline_val = a + 2;
        snprintf(spelled, sizeof spelled, "-%c", a[1]);
        if (o && o->arg == CLI_ARG_NONE && inline_val)
            o = NULL; /* "-qj4": letters are not clustered */
    }
    if (!o) {
        cli_unknown_option(p->spec, a);
        return CLI_BAD;
    }
    p->opt = o;
    if (o->flags & CLI_OPT_DEPRECATED)
        warn_deprecated(o);
    if (o->arg == CLI_ARG_NONE) {
        if (inline_val) {
            cli_usage_error(p->spec->verb, "%s takes no value ('%s')", spelled, a);
            return CLI_BAD;
        }
        apply_common(p, o->id);
        return o->id;
    }
    if (inline_val) {
        p->arg = inline_val;
    } else if (p->i < p->argc) {
        p->arg = p->argv[p->i++];
    } else {
        cli_usage_error(p->spec->verb, "%s needs a value (%s)", spelled,
                        o->metavar ? o->metavar : "VALUE");
        return CLI_BAD;
    }
    if (take_value(p, spelled))
        return CLI_BAD;
    apply_common(p, o->id);
    return o->id;
}

/* "-j, --threads N" for a row, into buf. */
static void opt_words(const struct cli_opt *o, char *buf, size_t n)
{
    size_t k = 0;
    if (o->short_name)
        k += (size_t)snprintf(buf + k, n - k, "-%c%s", o->short_name, o->name ? ", " : "");
    if (o->name && k < n)
        k += (size_t)snprintf(buf + k, n - k, "--%s", o->name);
    if (o->metavar && k < n)
        snprintf(buf + k, n - k, " %s", o->metavar);
}

/* Prints one help row: the words, then the help text from HELP_COLUMN, its "\n"-separated
 * continuation lines aligned under it. */
static void help_row(FILE *f, const char *words, const char *help, bool repeatable)
{
    int w = fprintf(f, "  %s", words);
    if (w >= HELP_COLUMN - 1) {
        fputc('\n', f);
        w = 0;
    }
    fprintf(f, "%*s", HELP_COLUMN - w, "");
    for (const char *h = help ? help : ""; *h;) {
        size_t l = strcspn(h, "\n");
        fwrite(h, 1, l, f);
        h += l;
        if (*h == '\n') {
            h++;
            fprintf(f, "\n%*s", HELP_COLUMN, "");
        }
    }
    fputs(repeatable ? " (repeatable)\n" : "\n", f);
}

void cli_help(FILE *f, const struct cli_spec *spec)
{
    fputs(spec->usage, f);
    fputs("\noptions:\n", f);
    for (const struct cli_opt *o = spec->opts; o->name || o->short_name; o++) {
        if (o->flags & (CLI_OPT_DEPRECATED | CLI_OPT_HIDDEN))
            continue;
        char words[96];
        opt_words(o, words, sizeof words);
        help_row(f, words, o->help, o->flags & CLI_OPT_REPEATABLE);
    }
    help_row(f, "-h, --help", "this help", false);
    if (spec->epilog)
        fprintf(f, "\n%s", spec->epilog);
    if (spec->more)
        spec->more(f);
}

void cli_opt_words(FILE *f, const struct cli_spec *spec)
{
    bool first = true;
    for (const struct cli_opt *o = spec->opts; o->name || o->short_name; o++) {
        if (o->flags & (CLI_OPT_DEPRECATED | CLI_OPT_HIDDEN))
            continue;
        if (o->short_name) {
            fprintf(f, "%s-%c", first ? "" : " ", o->short_name);
            first = false;
        }
        if (o->name) {
            fprintf(f, "%s--%s", first ? "" : " ", o->name);
            first = false;
        }
    }
    fprintf(f, "%s--help", first ? "" : " ");
}
