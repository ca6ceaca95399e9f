/*
 * cmd_export_timeline: `acceltrace export timeline RESULTS_DIR [--config I] [--steps A-B]
 * [--format chrome] -o FILE.json`: the schedule of one replayed config as a Chrome Trace
 * Event Format file (analysis/timeline.h; docs/interop.md#timeline).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/timeline.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/err.h"
#include "common/progress.h"

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

static bool parse_steps(const char *v, int64_t *lo, int64_t *hi)
{
    char *end;
    errno = 0;
    long long a = strtoll(v, &end, 10), b = a;
    if (end == v || errno || a < 0)
        return false;
    if (*end == '-') {
        const char *q = end + 1;
        b = strtoll(q, &end, 10);
        if (end == q || errno)
            return false;
    }
    if (*end || b < a)
        return false;
    *lo = a;
    *hi = b;
    return true;
}

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

int cmd_export_timeline(int argc, char **argv);
int cmd_export_timeline(int argc, char **argv)
{
    struct timeline_opts o = {0};
    bool json = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_export_timeline_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        uint64_t u;
        if (id == OPT_CONFIG) {
            if (!cli_parse_u64(p.arg, &u) || u > 100000000)
                return cli_usage_error(VERB, "bad --config '%s'", p.arg);
            o.config_index = (size_t)u;
        } else if (id == OPT_STEPS) {
            if (!parse_steps(p.arg, &o.step_lo, &o.step_hi))
                return cli_usage_error(VERB, "bad --steps '%s' (want A-B)", p.arg);
            o.steps = true;
        } else if (id == OPT_FORMAT) {
            if (!strcmp(p.arg, "perfetto"))
                return cli_usage_error(VERB, "--format perfetto (TracePacket protobuf) is not "
                                             "written yet; ui.perfetto.dev opens --format chrome");
            if (strcmp(p.arg, "chrome"))
                return cli_usage_error(VERB, "bad --format '%s' (chrome)", p.arg);
        } else if (id == OPT_TRACE) {
            o.trace_path = p.arg;
        } else if (id == OPT_DETAIL) {
            if (!cli_parse_u64(p.arg, &u) || u < 1 || u > 100000000)
                return cli_usage_error(VERB, "bad --detail '%s' (1..1e8)", p.arg);
            o.detail_events = u;
        } else if (id == OPT_PLOT) {
            o.plot_dir = p.arg;
        } else if (id == CLI_POSITIONAL) {
            if (o.results_dir)
                return cli_usage_error(VERB, "more than one results folder ('%s')", p.arg);
            o.results_dir = p.arg;
        }
    }
    o.out_path = p.common.output;
    json = p.common.json;
    if (!o.results_dir || !o.out_path)
        return cli_usage_error(VERB, "need RESULTS_DIR and -o FILE");
    struct timeline_stats st;
    struct errmsg e = {0};
    int rc = timeline_export(&o, &st, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    if (st.plot_err[0])
        cli_warn("timeline figure: %s", st.plot_err);
    else if (o.plot_dir && !st.rendered)
        cli_warn("gnuplot not found: run 'gnuplot timeline.gp' in %s to render", o.plot_dir);
    if (json)
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
