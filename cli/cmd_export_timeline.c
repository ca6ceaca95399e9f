/*
 * cmd_export_timeline: `acceltrace export timeline RESULTS_DIR [--config I] [--steps A-B]
 * [--format chrome] -o FILE.json`: the schedule of one replayed config as a Chrome Trace
 * Event Format file (analysis/timeline.h; docs/interop.md#timeline).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/timeline.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cmd_export.h"
#include "common/err.h"

#define VERB "export timeline"

enum { OPT_CONFIG = 1, OPT_STEPS, OPT_FORMAT, OPT_TRACE, OPT_DETAIL, OPT_PLOT };

/* clang-format off */
static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("FILE.json", "the timeline to write (required)"),
    {OPT_CONFIG, "config", 0, CLI_ARG_STRING, "I", "config index of the folder (0)", 0},
    {OPT_STEPS, "steps", 0, CLI_ARG_STRING, "A-B", "only the slices of steps A..B", 0},
    {OPT_FORMAT, "format", 0, CLI_ARG_STRING, "chrome",
     "output format: chrome (Trace Event Format JSON, opened\nby ui.perfetto.dev and "
     "chrome://tracing)", 0},
    {OPT_TRACE, "trace", 0, CLI_ARG_STRING, "FILE.atr",
     "the trace replayed (default: the manifest's trace_path)", 0},
    {OPT_DETAIL, "detail", 0, CLI_ARG_STRING, "N",
     "slices written one by one before merging by block\n(20000)", 0},
    {OPT_PLOT, "plot", 0, CLI_ARG_STRING, "DIR",
     "also a Gantt figure of the first step kept, DIR/timeline.png", 0},
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON object on stdout: file, bytes, events, slices,\nmerge level and per track the "
     "summed time", 0},
    CLI_OPT_END,
};
/* clang-format on */

const struct cli_spec cmd_export_timeline_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace export timeline RESULTS_DIR [--config I] [--steps A-B] -o FILE\n"
             "\n"
             "Replays config I of a results folder again (the trace its manifest names, the\n"
             "config of its rows) with the model's schedule hook on and writes the modelled\n"
             "execution as a Chrome Trace Event Format timeline: one track per hardware unit,\n"
             "one slice per op as the model scheduled it, bandwidth and utilization counters.\n"
             "Per track the slices sum to the model's busy time for that unit. Prints the\n"
             "file's size; long runs are merged by block, then by step, past --detail slices\n"
             "(docs/interop.md#timeline).\n",
    .opts = opts,
    .positional = "RESULTS_DIR",
};

static int print_json(const struct timeline_opts *o, const struct timeline_stats *st)
{
    json_t *tracks = json_array();
    for (size_t i = 0; i < st->n_tracks; i++) {
        const struct timeline_track *t = &st->tracks[i];
        json_array_append_new(tracks, json_pack("{s:s,s:s,s:s,s:f,s:I}", "group", t->group, "track",
                                                t->track, "busy", t->busy, "sum_s", t->sum_s,
                                                "slices", (json_int_t)t->slices));
    }
    return cli_print_json(json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:i,s:o,s:b}", "file", o->out_path,
                                    "model", st->model, "trace", st->trace, "bytes",
                                    (json_int_t)st->bytes, "events", (json_int_t)st->events,
                                    "slices", (json_int_t)st->slices, "merge_level", st->level,
                                    "tracks", tracks, "figure", st->rendered));
}

/* The options of the verb into its timeline_opts ctx; 0 or exit status 2. */
static int parse_opt(void *ctx, int id, const char *v)
{
    struct timeline_opts *o = ctx;
    uint64_t u;
    uint32_t lo, hi;
    if (id == OPT_CONFIG) {
        if (!cli_parse_u64(v, &u) || u > 100000000)
            return cli_usage_error(VERB, "bad --config '%s'", v);
        o->config_index = (size_t)u;
    } else if (id == OPT_STEPS) {
        if (!cmd_export_parse_steps(v, &lo, &hi))
            return cli_usage_error(VERB, "bad --steps '%s' (want A-B)", v);
        o->step_lo = lo;
        o->step_hi = hi;
        o->steps = true;
    } else if (id == OPT_FORMAT) {
        if (!strcmp(v, "perfetto"))
            return cli_usage_error(VERB, "--format perfetto (TracePacket protobuf) is not "
                                         "written yet; ui.perfetto.dev opens --format chrome");
        if (strcmp(v, "chrome"))
            return cli_usage_error(VERB, "bad --format '%s' (chrome)", v);
    } else if (id == OPT_TRACE) {
        o->trace_path = v;
    } else if (id == OPT_DETAIL) {
        if (!cli_parse_u64(v, &u) || u < 1 || u > 100000000)
            return cli_usage_error(VERB, "bad --detail '%s' (1..1e8)", v);
        o->detail_events = u;
    } else if (id == OPT_PLOT) {
        o->plot_dir = v;
    }
    return 0;
}

int cmd_export_timeline(int argc, char **argv);
int cmd_export_timeline(int argc, char **argv)
{
    struct timeline_opts o = {0};
    struct cmd_export_args a;
    int status = cmd_export_parse(&cmd_export_timeline_spec, argc, argv, "results folder",
                                  "need RESULTS_DIR and -o FILE", parse_opt, &o, &a);
    if (status)
        return status < 0 ? 0 : status; /* -1: the help */
    o.results_dir = a.in;
    o.out_path = a.out;
    struct timeline_stats st;
    struct errmsg e = {0};
    int rc = timeline_export(&o, &st, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    if (st.plot_err[0])
        cli_warn("timeline figure: %s", st.plot_err);
    else if (o.plot_dir && !st.rendered)
        cli_warn("gnuplot not found: run 'gnuplot timeline.gp' in %s to render", o.plot_dir);
    if (a.json)
        return print_json(&o, &st);
    printf("wrote %s: %llu bytes, %llu events, %llu slices of model '%s'%s\n", o.out_path,
           (unsigned long long)st.bytes, (unsigned long long)st.events,
           (unsigned long long)st.slices, st.model,
           st.level == 2   ? " (merged by step past --detail)"
           : st.level == 1 ? " (merged by block past --detail)"
                           : "");
    for (size_t i = 0; i < st.n_tracks; i++)
        printf("  %-24s %-34s %.9g s  (%s)\n", st.tracks[i].group, st.tracks[i].track,
               st.tracks[i].sum_s, st.tracks[i].busy[0] ? st.tracks[i].busy : "-");
    return 0;
}
