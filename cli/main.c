/*
 * main: the verb table of acceltrace. `acceltrace VERB [WORKLOAD] [options]`.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/progress.h"

void cli_set_command_line(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_energy(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_reproduce(int argc, char **argv);

struct verb {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

/* One line per verb; each verb lives in cli/cmd_<verb>.c. */
static const struct verb verbs[] = {
    {"capture", cmd_capture, "run a workload and write a trace (disc, salca, kura)"},
    {"analyze", cmd_analyze, "run an analyzer over a trace"},
    {"model", cmd_model, "evaluate an analytic hardware model"},
    {"export", cmd_export, "export trace data for other tools"},
    {"info", cmd_info, "header, record counts, raw vs stored bytes of a trace"},
    {"dump", cmd_dump, "print the records of a trace as JSON lines"},
    {"verify", cmd_verify, "check every frame and the index of a trace (exit 0 or 3)"},
    {"recover", cmd_recover, "turn a killed capture's .partial file into a valid trace"},
    {"replay", cmd_replay, "replay a trace against a hardware config or a sweep"},
    {"config", cmd_config, "show a model's config keys, check config files"},
    {"sweep", cmd_sweep, "list a sweep grid, emit Slurm or GNU parallel jobs for it"},
    {"merge", cmd_merge, "join the results folders of sweep shards"},
    {"energy", cmd_energy, "recompute energy from activity counts with an energy table"},
    {"plot", cmd_plot, "plot a results folder (gnuplot -> PNG)"},
    {"report", cmd_report, "write DIR/report.md linking every figure and table"},
    {"demo", cmd_demo, "capture, replay, analyze and plot every workload into out/"},
    {"reproduce", cmd_reproduce, "the papers' headline numbers beside ours, with how each was got"},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: acceltrace VERB [WORKLOAD] [options]\n\n"
               "capture traces once, replay them against many hardware configurations,\n"
               "plot load balance and utilization\n\nverbs:\n");
    for (const struct verb *v = verbs; v->name; v++)
        fprintf(f, "  %-10s %s\n", v->name, v->summary);
    fprintf(f, "\n'acceltrace VERB --help' describes a verb; --version prints the version\n"
               "exit status: 0 ok, 1 runtime failure, 2 usage error, 3 bad input data\n");
}

int main(int argc, char **argv)
{
    cli_set_command_line(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("acceltrace %s\n", ACCELTRACE_VERSION);
        return 0;
    }
    for (const struct verb *v = verbs; v->name; v++)
        if (!strcmp(v->name, argv[1]))
            return v->fn(argc - 1, argv + 1);
    cli_error("unknown verb '%s' (see 'acceltrace --help')", argv[1]);
    return 2;
}
