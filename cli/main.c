/*
 * main: the verb table of acceltrace. `acceltrace VERB [SUB] [options]`, `acceltrace help
 * VERB [SUB]` (the same as `VERB [SUB] --help`) and `acceltrace completion bash`.
 *
 * The grammar of cli/cli_opt.h holds for every verb: each verb and sub-verb has an option
 * table (struct cli_spec) and parses its arguments with it. The tables of the sub-verbs are
 * listed in `grammars` below for `acceltrace completion bash`.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_registry.h"
#include "cli/capture_parsers.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/suggest.h"
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
    {"import", cmd_import, "masks and selections from other tools (.npz) as traces", NULL},
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
    {"plot", cmd_plot, "figures of a results folder: .dat, .gp and png/pdf/svg (gnuplot)",
     &cmd_plot_spec},
    {"report", cmd_report, "write DIR/report.md linking every figure and table", &cmd_report_spec},
    {"demo", cmd_demo, "capture, replay, analyze and plot every workload into out/",
     &cmd_demo_spec},
    {"reproduce", cmd_reproduce, "the papers' headline numbers beside ours, with how each was got",
     &cmd_reproduce_spec},
    {"validate", cmd_validate, "check a model against published measurements (gpu)", NULL},
    {NULL, NULL, NULL, NULL},
};

/* The sub-verbs of the dispatching verbs with their grammar (for the completion script).
 * Same order as the dispatch tables of cli/cmd_<verb>.c. The workloads of `capture` are not
 * listed here: grammar_at takes them from the capture registry (cli/capture_parsers.h). */
struct grammar {
    const char *verb, *sub;
    const struct cli_spec *spec;
};

static const struct grammar grammars[] = {
    {"analyze", "hash", &cmd_analyze_hash_spec},
    {"analyze", "disc", &cmd_analyze_disc_spec},
    {"analyze", "conflicts", &cmd_analyze_conflicts_spec},
    {"model", "kura", &cmd_model_kura_spec},
    {"model", "salca", &cmd_model_salca_spec},
    {"model", "gpu", &cmd_model_gpu_spec},
    {"export", "tiles", &cmd_export_tiles_spec},
    {"export", "hbm-trace", &cmd_export_hbm_spec},
    {"export", "timeline", &cmd_export_timeline_spec},
    {"export", "scalesim", &cmd_export_scalesim_spec},
    {"export", "chakra", &cmd_export_chakra_spec},
    {"import", "masks", &cmd_import_masks_spec},
    {"import", "selections", &cmd_import_selections_spec},
    {"validate", "gpu", &cmd_validate_gpu_spec},
    {NULL, NULL, NULL},
};

/*
 * The i-th sub-verb grammar: the captures in registry order, then the rows of `grammars`.
 * False past the end. The caller has checked capture_parsers_check.
 */
static bool grammar_at(size_t i, struct grammar *g)
{
    size_t n_cap = capture_registry_count();
    if (i < n_cap) {
        const struct capture_parser *cp = capture_parser_find(capture_registry_get(i)->name);
        *g = (struct grammar){"capture", cp->name, cp->spec};
        return true;
    }
    *g = grammars[i - n_cap];
    return g->verb != NULL;
}

/* Prints the space-separated sub-verbs of verb. */
static void sub_words(FILE *f, const char *verb)
{
    bool first = true;
    struct grammar g;
    for (size_t i = 0; grammar_at(i, &g); i++)
        if (!strcmp(g.verb, verb)) {
            fprintf(f, "%s%s", first ? "" : " ", g.sub);
            first = false;
        }
}

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
    struct suggest sg;
    suggest_init(&sg, name, strlen(name));
    for (const struct verb *v = verbs; v->name; v++)
        suggest_add(&sg, v->name);
    const char *best = suggest_result(&sg);
    if (best)
        cli_error("unknown verb '%s'; did you mean '%s'? (see 'acceltrace --help')", name, best);
    else
        cli_error("unknown verb '%s' (see 'acceltrace --help')", name);
    return 2;
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
        if (v->spec)
            fputs(v->spec->subs, f);
        else
            sub_words(f, v->name);
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
        sub_words(f, v->name);
        fputs(" --help --list\"; files=0\n            else case \"$sub\" in\n", f);
        struct grammar g;
        for (size_t i = 0; grammar_at(i, &g); i++)
            if (!strcmp(g.verb, v->name))
                complete_case(f, "                ", g.sub, g.spec);
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
    if (argc < 3 || cli_is_help(argv[2])) { /* `help` and `help --help` */
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
    if (argc > 3 && (!v->spec || v->spec->subs)) { /* a sub-verb's own help */
        av[1] = argv[3];
        av[2] = help_arg;
        ac = 3;
    }
    return v->fn(ac, av);
}

int main(int argc, char **argv)
{
    /* A file-size limit (ulimit -f) becomes an EFBIG write error that names the file, and
     * the trace writer removes its .partial, instead of SIGXFSZ killing the process and
     * leaving a .partial that blocks the next run. */
    signal(SIGXFSZ, SIG_IGN);
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
        struct errmsg e = {0};
        if (capture_parsers_check(&e))
            return cli_fail(e.code, e.text);
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
    return v->fn(argc - 1, argv + 1);
}
