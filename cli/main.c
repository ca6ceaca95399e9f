/*
 * main: the verb table of acceltrace. `acceltrace VERB [SUB] [options]`, `acceltrace help
 * VERB [SUB]` (the same as `VERB [SUB] --help`) and `acceltrace completion bash`.
 *
 * The grammar of cli/cli_opt.h holds for every verb. Verbs and sub-verbs with an option
 * table (struct cli_spec) parse it themselves. The sub-verbs that still parse their own
 * arguments get a pre-pass here, driven by the option list of each in `grammars` below:
 * "--opt=value" is split in two when --opt takes a value (a value such as "key=value" after
 * an option that takes one is never split), --quiet, -q, --threads and -j are rewritten to
 * the spelling the sub-verb reads (or dropped where it has nothing to quiet), and an option
 * missing from the list is refused with "did you mean". A sub-verb's row there goes when it
 * gets its own table; an option added to such a sub-verb needs its row there too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/err.h"
#include "common/mem.h"
#include "replay/model_registry.h"

struct verb {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    const struct cli_spec *spec; /* NULL for the verbs that dispatch to sub-verbs */
};

/* One line per verb; each verb lives in cli/cmd_<verb>.c. */
static const struct verb verbs[] = {
    {"capture", cmd_capture, "run a workload and write a trace (disc, salca, kura)", NULL},
    {"analyze", cmd_analyze, "run an analyzer over a trace", NULL},
    {"model", cmd_model, "evaluate an analytic hardware model", NULL},
    {"export", cmd_export, "export trace data for other tools", NULL},
    {"info", cmd_info, "header, record counts, raw vs stored bytes of a trace", &cmd_info_spec},
    {"dump", cmd_dump, "print the records of a trace as JSON lines", &cmd_dump_spec},
    {"verify", cmd_verify, "check every frame and the index of a trace (exit 0 or 3)",
     &cmd_verify_spec},
    {"recover", cmd_recover, "turn a killed capture's .partial file into a valid trace",
     &cmd_recover_spec},
    {"replay", cmd_replay, "replay a trace against a hardware config or a sweep", &cmd_replay_spec},
    {"config", cmd_config, "show a model's config keys, check config files", &cmd_config_spec},
    {"sweep", cmd_sweep, "list a sweep grid, emit Slurm or GNU parallel jobs for it",
     &cmd_sweep_spec},
    {"merge", cmd_merge, "join the results folders of sweep shards", &cmd_merge_spec},
    {"energy", cmd_energy, "recompute energy from activity counts with an energy table",
     &cmd_energy_spec},
    {"plot", cmd_plot, "plot a results folder (gnuplot -> PNG)", &cmd_plot_spec},
    {"report", cmd_report, "write DIR/report.md linking every figure and table", &cmd_report_spec},
    {"demo", cmd_demo, "capture, replay, analyze and plot every workload into out/",
     &cmd_demo_spec},
    {"reproduce", cmd_reproduce, "the papers' headline numbers beside ours, with how each was got",
     &cmd_reproduce_spec},
    {NULL, NULL, NULL, NULL},
};

/* How the pre-pass passes a listed option on to a sub-verb that parses its own. */
#define PASS_SHORT (1u << 8) /* the sub-verb reads only "-x" */
#define PASS_LONG (1u << 9)  /* the sub-verb reads only "--name" */
#define PASS_DROP (1u << 10) /* accepted for the grammar, the sub-verb has no use for it */

/* clang-format off: one row per option, the sub-verb's help order */
#define V(n) {1, n, 0, CLI_ARG_STRING, "X", NULL, 0}
#define F(n) {1, n, 0, CLI_ARG_NONE, NULL, NULL, 0}
#define L_OUT {CLI_ID_OUTPUT, "output", 'o', CLI_ARG_STRING, "PATH", NULL, PASS_SHORT}
#define L_QUIET(how) {CLI_ID_QUIET, "quiet", 'q', CLI_ARG_NONE, NULL, NULL, how}
#define L_THREADS(how) {CLI_ID_THREADS, "threads", 'j', CLI_ARG_STRING, "N", NULL, how}
#define L_PARTIAL {CLI_ID_ALLOW_PARTIAL, "allow-partial", 0, CLI_ARG_NONE, NULL, NULL, 0}

#define LEGACY(v, s, t) {v " " s, NULL, t, NULL, NULL, "FILE", NULL}
/* clang-format on */

/* The sub-verbs of the dispatching verbs with their grammar; own: the sub-verb parses its
 * table itself (no pre-pass). Same order as the dispatch tables of cli/cmd_<verb>.c. */
struct grammar {
    const char *verb, *sub;
    const struct cli_spec *spec;
    bool own;
};

static const struct grammar grammars[] = {
    {"capture", "disc", &cmd_capture_disc_spec, true},
    {"capture", "kura", &cmd_capture_kura_spec, true},
    {"capture", "salca", &cmd_capture_salca_spec, true},
    {"capture", "test", &cmd_capture_test_spec, true},
    {"analyze", "hash", &cmd_analyze_hash_spec, true},
    {"analyze", "disc", &cmd_analyze_disc_spec, true},
    {"analyze", "conflicts", &cmd_analyze_conflicts_spec, true},
    {"model", "kura", &cmd_model_kura_spec, true},
    {"model", "salca", &cmd_model_salca_spec, true},
    {"export", "tiles", &cmd_export_tiles_spec, true},
    {"export", "hbm-trace", &cmd_export_hbm_spec, true},
    {NULL, NULL, NULL, false},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: acceltrace VERB [SUB] [options]\n\n"
               "capture traces once, replay them against many hardware configurations,\n"
               "plot load balance and utilization\n\nverbs:\n");
    for (const struct verb *v = verbs; v->name; v++)
        fprintf(f, "  %-10s %s\n", v->name, v->summary);
    fprintf(f, "\n'acceltrace help VERB [SUB]' (or 'acceltrace VERB [SUB] --help') describes a\n"
               "verb; 'acceltrace completion bash' prints a bash completion script; --version\n"
               "prints the version. Every verb takes -q/--quiet, --opt=value, and those that\n"
               "print results --json (README.md, 'Command-line grammar')\n"
               "exit status: 0 ok, 1 runtime failure, 2 usage error, 3 bad input data\n");
}

static const struct verb *find_verb(const char *name)
{
    for (const struct verb *v = verbs; v->name; v++)
        if (!strcmp(v->name, name))
            return v;
    return NULL;
}

/* Refuses an unknown verb, suggesting the closest one. */
static int unknown_verb(const char *name)
{
    const char *best = NULL;
    int best_d = 99;
    size_t len = strlen(name);
    for (const struct verb *v = verbs; v->name; v++) {
        int d = cli_edit_distance(name, len, v->name, strlen(v->name));
        if (len >= 2 && !strncmp(v->name, name, len) && d > 1)
            d = 1;
        if (d < best_d) {
            best_d = d;
            best = v->name;
        }
    }
    if (best && best_d <= 2)
        cli_error("unknown verb '%s'; did you mean '%s'? (see 'acceltrace --help')", name, best);
    else
        cli_error("unknown verb '%s' (see 'acceltrace --help')", name);
    return 2;
}

/* The strings the pre-pass made, freed when the verb returns. */
struct made {
    char **argv;
    char **strs;
    int n_strs;
};

static char *made_str(struct made *m, const char *s, size_t len)
{
    char *d = mem_alloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = 0;
    m->strs[m->n_strs++] = d;
    return d;
}

/* The spelling a listed option is passed on with: NULL drops it. */
static const char *pass_spelling(struct made *m, const struct cli_opt *o, bool wrote_long,
                                 const char *as_written, size_t len)
{
    char b[80];
    if (o->flags & PASS_DROP)
        return NULL;
    if (wrote_long && (o->flags & PASS_SHORT)) {
        snprintf(b, sizeof b, "-%c", o->short_name);
        return made_str(m, b, strlen(b));
    }
    if (!wrote_long && (o->flags & PASS_LONG)) {
        snprintf(b, sizeof b, "--%s", o->name);
        return made_str(m, b, strlen(b));
    }
    return made_str(m, as_written, len);
}

/*
 * Rewrites argv[first..] of a sub-verb that parses its own options (see the top of this
 * file) into m->argv; *out_argc its count. 0, 2 (usage error printed) or 1 (no memory).
 */
static int prepass(const struct cli_spec *s, int argc, char **argv, int first, struct made *m,
                   int *out_argc)
{
    size_t cap = 2 * (size_t)argc + 1;
    m->argv = mem_calloc(cap, sizeof *m->argv);
    m->strs = mem_calloc(cap, sizeof *m->strs);
    if (!m->argv || !m->strs)
        return 1;
    int n = 0;
    for (int i = 0; i < first; i++)
        m->argv[n++] = argv[i];
    bool rest = false;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (rest || a[0] != '-' || !a[1] || cli_is_help(a)) {
            m->argv[n++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            rest = true;
            m->argv[n++] = argv[i];
            continue;
        }
        bool is_long = a[1] == '-';
        size_t len = is_long ? strcspn(a + 2, "=") : 1;
        const struct cli_opt *o =
            is_long ? cli_opt_find_long(s->opts, a + 2, len) : cli_opt_find_short(s->opts, a[1]);
        const char *inline_val =
            is_long ? (a[2 + len] == '=' ? a + 3 + len : NULL) : (a[2] ? a + 2 : NULL);
        if (!o || (o->arg == CLI_ARG_NONE && inline_val && !is_long))
            return cli_unknown_option(s, a);
        if (o->arg == CLI_ARG_NONE && inline_val)
            return cli_usage_error(s->verb, "--%.*s takes no value ('%s')", (int)len, a + 2, a);
        if (o->flags & CLI_OPT_DEPRECATED)
            cli_warn("--%s is deprecated: use %s", o->name, o->help);
        const char *sp = pass_spelling(m, o, is_long, a, is_long ? 2 + len : 2);
        if (!sp && !(o->flags & PASS_DROP))
            return 1;
        if (sp)
            m->argv[n++] = (char *)sp;
        if (o->arg == CLI_ARG_NONE)
            continue;
        if (inline_val) {
            if (sp)
                m->argv[n++] = (char *)inline_val;
        } else if (i + 1 < argc) {
            if (sp)
                m->argv[n++] = argv[i + 1];
            i++; /* the value, whatever it holds, is never split or rewritten */
        }
    }
    m->argv[n] = NULL;
    *out_argc = n;
    return 0;
}

/* The grammar of `verb sub`, or NULL. */
static const struct grammar *find_grammar(const char *verb, const char *sub)
{
    for (const struct grammar *g = grammars; g->verb; g++)
        if (!strcmp(g->verb, verb) && !strcmp(g->sub, sub))
            return g;
    return NULL;
}

/* Runs a dispatching verb; its sub-verb (the first argument that is no option) gets the
 * pre-pass when it parses its own options. */
static int run_dispatcher(const struct verb *v, int argc, char **argv)
{
    int k = 1;
    while (k < argc && argv[k][0] == '-' && !cli_is_help(argv[k]))
        k++;
    const struct grammar *g = k < argc ? find_grammar(v->name, argv[k]) : NULL;
    if (!g || g->own)
        return v->fn(argc, argv);
    struct made m = {0};
    int n = 0;
    int rc = prepass(g->spec, argc, argv, k + 1, &m, &n);
    if (rc == 1)
        cli_error("out of memory");
    if (!rc)
        rc = v->fn(n, m.argv);
    for (int i = 0; i < m.n_strs; i++)
        mem_free(m.strs[i]);
    mem_free(m.strs);
    mem_free(m.argv);
    return rc;
}

/* Prints one verb's or sub-verb's option words for the completion script. */
static void complete_case(FILE *f, const char *indent, const char *name, const struct cli_spec *s)
{
    fprintf(f, "%s%s) words=\"", indent, name);
    cli_opt_words(f, s);
    fputs("\" ;;\n", f);
}

/* `acceltrace completion bash`: a bash completion script for the verbs, sub-verbs and
 * options of the tables above; files complete where no option or sub-verb fits. */
static void completion_bash(FILE *f)
{
    fputs("# bash completion for acceltrace, generated by 'acceltrace completion bash'.\n"
          "# Load it with: source <(acceltrace completion bash)\n"
          "_acceltrace() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} verb=${COMP_WORDS[1]:-} sub=${COMP_WORDS[2]:-}\n"
          "    local words='' files=1\n"
          "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
          "        words=\"",
          f);
    for (const struct verb *v = verbs; v->name; v++)
        fprintf(f, "%s ", v->name);
    fputs("help completion --help --version\"; files=0\n"
          "    elif [ \"$verb\" = help ]; then\n"
          "        files=0\n"
          "        if [ \"$COMP_CWORD\" -eq 2 ]; then words=\"",
          f);
    for (const struct verb *v = verbs; v->name; v++)
        fprintf(f, "%s%s", v == verbs ? "" : " ", v->name);
    fputs("\"; else case \"$sub\" in\n", f);
    for (const struct verb *v = verbs; v->name; v++) {
        if (v->spec && !v->spec->subs)
            continue;
        fprintf(f, "            %s) words=\"", v->name);
        if (v->spec) {
            fputs(v->spec->subs, f);
        } else {
            bool first = true;
            for (const struct grammar *g = grammars; g->verb; g++)
                if (!strcmp(g->verb, v->name)) {
                    fprintf(f, "%s%s", first ? "" : " ", g->sub);
                    first = false;
                }
        }
        fputs("\" ;;\n", f);
    }
    fputs("        esac; fi\n"
          "    elif [ \"$verb\" = completion ]; then\n"
          "        words=bash; files=0\n"
          "    else\n"
          "        case \"$verb\" in\n",
          f);
    for (const struct verb *v = verbs; v->name; v++) {
        if (v->spec) {
            if (v->spec->subs)
                fprintf(f,
                        "        %s) if [[ $COMP_CWORD -eq 2 && $cur != -* ]]; then "
                        "words=\"%s\"; files=0; else words=\"",
                        v->name, v->spec->subs);
            else
                fprintf(f, "        %s) words=\"", v->name);
            cli_opt_words(f, v->spec);
            fputs(v->spec->subs ? "\"; fi ;;\n" : "\" ;;\n", f);
            continue;
        }
        fprintf(f, "        %s)\n            if [ \"$COMP_CWORD\" -eq 2 ]; then words=\"", v->name);
        bool first = true;
        for (const struct grammar *g = grammars; g->verb; g++)
            if (!strcmp(g->verb, v->name)) {
                fprintf(f, "%s%s", first ? "" : " ", g->sub);
                first = false;
            }
        fputs(" --help\"; files=0\n            else case \"$sub\" in\n", f);
        for (const struct grammar *g = grammars; g->verb; g++)
            if (!strcmp(g->verb, v->name))
                complete_case(f, "                ", g->sub, g->spec);
        fputs("            esac; fi ;;\n", f);
    }
    fputs("        esac\n"
          "    fi\n"
          "    # the value of --model, and the MODEL of config show: the replay models\n"
          "    if [[ ${COMP_WORDS[COMP_CWORD-1]} == --model ||\n"
          "          ($verb == config && $sub == show && $COMP_CWORD -eq 3) ]]; then\n"
          "        words=\"",
          f);
    for (size_t i = 0; i < model_registry_count(); i++)
        fprintf(f, "%s%s", i ? " " : "", model_registry_get(i)->name);
    fputs("\"; files=0\n"
          "    fi\n"
          "    if [[ $cur == -* || $files -eq 0 ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
          "    else\n"
          "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "    fi\n"
          "}\n"
          "complete -o filenames -F _acceltrace acceltrace\n",
          f);
}

static void completion_help(void)
{
    printf("usage: acceltrace completion bash\n\nprints a bash completion script for the verbs, "
           "sub-verbs and options;\nload it with: source <(acceltrace completion bash)\n");
}

/* `acceltrace help [VERB [SUB]]`: VERB [SUB] --help. */
static int help(int argc, char **argv)
{
    if (argc < 3) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[2], "completion")) {
        completion_help();
        return 0;
    }
    const struct verb *v = find_verb(argv[2]);
    if (!v)
        return unknown_verb(argv[2]);
    char help_arg[] = "--help";
    char *av[4] = {argv[2], help_arg, NULL, NULL};
    int ac = 2;
    if (argc > 3 && !v->spec) {
        av[1] = argv[3];
        av[2] = help_arg;
        ac = 3;
    }
    return v->fn(ac, av);
}

int main(int argc, char **argv)
{
    cli_set_command_line(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (cli_is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "help"))
        return help(argc, argv);
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("acceltrace %s\n", ACCELTRACE_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "completion")) {
        if (argc == 3 && !strcmp(argv[2], "bash")) {
            completion_bash(stdout);
            return 0;
        }
        if (argc == 3 && cli_is_help(argv[2])) {
            completion_help();
            return 0;
        }
        return cli_usage_error("completion", "the one shell is bash: 'acceltrace completion bash'");
    }
    const struct verb *v = find_verb(argv[1]);
    if (!v)
        return unknown_verb(argv[1]);
    if (!v->spec)
        return run_dispatcher(v, argc - 1, argv + 1);
    return v->fn(argc - 1, argv + 1);
}
