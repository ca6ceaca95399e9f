/*
 * cmd_analyze_conflicts: `acceltrace analyze conflicts FILE.atr... -o DIR`: replays every
 * Salca selection's K/V gathers against the HBM pseudo-channel mapping under batch,
 * in-order and reorder-window issue in one pass (docs/models.md, Salca 'Pseudo-channel
 * mapping and issue policies').
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/conflicts.h"
#include "analysis/heavy_stability.h"
#include "analysis/overshoot.h"
#include "analysis/plot.h"
#include "analysis/select_quality.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/progress.h"
#include "traces/trace_salca.h"

#define VERB "analyze conflicts"
#define MAX_FILES 256

enum {
    OPT_PCS = 1,
    OPT_MAP,
    OPT_WINDOW,
    OPT_DEPTH,
    OPT_P_ISS,
    OPT_ATT_BASE,
    OPT_SEED,
    OPT_METHOD,
    OPT_GROUP,
    OPT_PER_JOB,
    OPT_TIMING,
    OPT_LAYOUT,
    OPT_REFRESH,
    OPT_OCCUPANCY,
    OPT_PRESET,
    OPT_COMPARE_PRESETS,
    OPT_STEPS,
    OPT_SYNTHETIC,
    OPT_N,
    OPT_RETENTION,
    OPT_JOBS,
    OPT_LAYERS,
};

/* clang-format off */
static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("DIR", "output folder (required)"),
    CLI_OPT_PLOT_FORMAT,
    {OPT_PCS, "pcs", 0, CLI_ARG_STRING, "N", "attention pseudo-channels h_att (16)", 0},
    {OPT_MAP, "map", 0, CLI_ARG_STRING, "mod|xor|hash", "token-to-PC mapping (mod)", 0},
    {OPT_WINDOW, "window", 0, CLI_ARG_STRING, "LIST",
     "reorder windows, 0 = in-order\n(0,16,32,64,128,256,512,1024)", 0},
    {OPT_DEPTH, "depth", 0, CLI_ARG_STRING, "LIST", "in-order FIFO depths D_f (1,2,4)", 0},
    {OPT_P_ISS, "p-iss", 0, CLI_ARG_STRING, "N", "requests issued per slot (h_att)", 0},
    {OPT_ATT_BASE, "att-base", 0, CLI_ARG_STRING, "N",
     "first attention PC, for reports (16: h_pre of the design\npoint; 11 for the final design)",
     0},
    {OPT_SEED, "seed", 0, CLI_ARG_STRING, "N", "hash map seed (0)", 0},
    {OPT_METHOD, "method", 0, CLI_ARG_STRING, "NAME|ID|all", "selection method to analyze (salca)",
     0},
    {OPT_GROUP, "group", 0, CLI_ARG_STRING, "family|task|file|none",
     "series label per trace (family)", 0},
    {OPT_PER_JOB, "per-job", 0, CLI_ARG_NONE, NULL,
     "also write alpha_jobs.csv (slots of every policy per job)", 0},
    {OPT_TIMING, "timing", 0, CLI_ARG_NONE, NULL,
     "also replay every policy against HBM DRAM timing (banks,\nrows, latency, refresh; "
     "docs/models.md#hbm-timing-mode):\nwrites hbm_time.csv, prints time.POLICY=time_over_ideal",
     0},
    {OPT_LAYOUT, "layout", 0, CLI_ARG_STRING, "NAME",
     "timing: K/V placement kv_bg|one_bg|same_bank (kv_bg)", 0},
    {OPT_PRESET, "preset", 0, CLI_ARG_STRING, "hbm2|hbm3|hbm3e",
     "timing: DRAM part (hbm2; values and sources in\ndocs/models.md#hbm-timing-mode)", 0},
    {OPT_COMPARE_PRESETS, "compare-presets", 0, CLI_ARG_NONE, NULL,
     "timing: also replay every policy on each preset:\nhbm_presets.csv and the plot "
     "hbm_presets_vs_window\n(alpha and time over ideal vs W per part)", 0},
    {OPT_REFRESH, "refresh", 0, CLI_ARG_STRING, "on|off|perbank",
     "timing: all-bank refresh tRFC/tREFI, none, or per-bank\nrefresh (hbm3, hbm3e) (on)", 0},
    {OPT_OCCUPANCY, "occupancy", 0, CLI_ARG_STRING, "request|command|data",
     "timing: a token counts against D_f and W until its\nfirst read command (a read buffer of "
     "D_f x 8\nrequests per PC, as Ramulator 2's), its last read\ncommand, or until its data is "
     "back (request)", 0},
    {OPT_STEPS, "steps", 0, CLI_ARG_STRING, "A-B", "only decode steps A..B of the traces", 0},
    {OPT_SYNTHETIC, "synthetic", 0, CLI_ARG_STRING, "KIND",
     "no trace: uniform|clustered|needle selections", 0},
    {OPT_N, "n", 0, CLI_ARG_STRING, "N", "synthetic context (32768)", 0},
    {OPT_RETENTION, "retention", 0, CLI_ARG_STRING, "X", "synthetic retention (0.05)", 0},
    {OPT_JOBS, "jobs", 0, CLI_ARG_STRING, "N", "synthetic jobs (64)", 0},
    {OPT_LAYERS, "layers", 0, CLI_ARG_STRING, "N", "synthetic layers (4)", 0},
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON object on stdout: each key=value line as a member\n(numbers as numbers), "
     "and the files written", 0},
    CLI_OPT_ALLOW_PARTIAL,
    CLI_OPT_END,
};
/* clang-format on */

const struct cli_spec cmd_analyze_conflicts_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace analyze conflicts FILE.atr... -o DIR [options]\n"
             "       acceltrace analyze conflicts --synthetic KIND -o DIR [options]\n"
             "\n"
             "HBM pseudo-channel conflicts of Salca's K/V gathers (docs/models.md, Salca\n"
             "'Pseudo-channel mapping and issue policies'): every selection is mapped to the\n"
             "attention PCs and replayed under batch issue, in-order issue (each FIFO depth) and\n"
             "reorder windows (each size) in one pass.\n"
             "Writes alpha.csv, alpha_layers.csv, alpha_vs_window.csv, conflict_occupancy.csv,\n"
             "conflict_per_batch.csv and their plots to DIR; prints alpha per policy. From\n"
             "traces it also writes recall_vs_retention.csv and the recall/cosine vs retention\n"
             "plots (every method; one point per trace retention, a panel per group),\n"
             "heavy_stability.csv and plot (per layer: Jaccard overlap of the heavy channels\n"
             "found on the first m prefill keys, m = 64, 128, ... and n0, with the final set;\n"
             "skipped with a note for traces captured before the prefix sets were recorded)\n"
             "and overshoot.csv and plot (histogram of (|S| - K)/n of every salca selection,\n"
             "method id 0, in bins of 0.05% of n; mark at the paper's 0.19%). Prints\n"
             "overshoot.* lines (records, mean_pct, above_0.19pct: the fraction of records).\n",
    .opts = opts,
    .positional = "FILE",
};

static bool parse_list(const char *s, uint32_t *v, size_t *n, size_t max, uint32_t lo)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long x = strtoul(p, &end, 10);
        if (errno || end == p || x < lo || x > (1ul << 24) || *n >= max || *p == '-')
            return false;
        v[(*n)++] = (uint32_t)x;
        if (*end == ',')
            end++;
        else if (*end)
            return false;
        p = end;
    }
    return *n > 0;
}

static bool parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    int64_t v;
    if (!cli_parse_i64(s, &v) || v < lo || v > hi)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* The inputs given fit together (one input kind, its own options); 0 or exit status 2. */
static int check_inputs(const char *outdir, size_t n_files, const char *synth, const char *syn_only,
                        const char *trace_only, const char *timing_only, bool timing)
{
    if (!outdir)
        return cli_usage_error(VERB, "missing -o DIR");
    if (!n_files && !synth)
        return cli_usage_error(VERB, "no trace file (or --synthetic KIND) given");
    if (n_files && synth)
        return cli_usage_error(VERB, "give trace files or --synthetic, not both");
    if (n_files && syn_only)
        return cli_usage_error(VERB,
                               "--%s applies to --synthetic only (a trace records its own "
                               "context, retention, jobs and layers)",
                               syn_only);
    if (synth && trace_only)
        return cli_usage_error(VERB,
                               "--%s applies to trace files only (--synthetic has one "
                               "method and one group)",
                               trace_only);
    if (timing_only && !timing)
        return cli_usage_error(VERB, "--%s applies to --timing only", timing_only);
    return 0;
}

/* --synthetic: the jobs of generated selections (replay/salca_model's generator). */
struct synth_args {
    const char *kind_name;
    uint32_t n, jobs, layers;
    double retention;
};

/* Adds sy->jobs synthetic jobs to c; 0 or an exit status after the message. */
static int add_synthetic(struct conflicts *c, const struct synth_args *sy, uint64_t seed)
{
    int status = 0, rc;
    enum salca_synth_kind k;
    salca_synth_parse(sy->kind_name, &k);
    struct errmsg e = {0};
    uint32_t *idx = mem_alloc((size_t)sy->n * sizeof *idx);
    if (!idx)
        return cli_fail(ERR_NOMEM, "out of memory");
    uint32_t heads = (sy->jobs + sy->layers - 1) / sy->layers;
    for (uint32_t j = 0; j < sy->jobs && status == 0; j++) {
        size_t cnt = 0;
        uint32_t l = j / heads, h = j % heads;
        rc = salca_synth_selection(k, sy->n, sy->retention, seed, l, h, idx, &cnt);
        if (rc == 0)
            rc = conflicts_add_job(c, sy->kind_name, l, h, idx, cnt, &e);
        if (rc < 0)
            status = cli_fail(rc, errmsg_text(&e));
    }
    mem_free(idx);
    return status;
}

/* The analyzers of one run: each its own, all fed by one pass over each trace. */
struct conflicts_run {
    struct conflicts *c;
    struct select_quality *q;
    struct overshoot *ov;
    struct heavy_stability *hs;
};

/* The key=value lines of the run (and the stability note on stderr). */
static void print_summary(FILE *out, const struct conflicts_run *run,
                          const struct conflicts_opts *o, bool timing, size_t n_files, bool quiet)
{
    const struct conflicts *c = run->c;
    struct conflicts_totals t;
    conflicts_totals(c, -1, 0, &t);
    fprintf(out, "map=%s\nh_att=%u\natt_base=%u\np_iss=%u\njobs=%llu\ntokens=%llu\nbound=%.4f\n",
            hbm_pc_map_name(o->map.map), o->map.h_att, o->att_base,
            o->p_iss ? o->p_iss : o->map.h_att, (unsigned long long)t.jobs,
            (unsigned long long)t.tokens, t.bound);
    for (size_t i = 0; i < conflicts_n_policies(c); i++) {
        conflicts_totals(c, -1, i, &t);
        fprintf(out, "alpha.%s=%.4f\n", conflicts_policy_name(c, i), t.alpha);
    }
    for (size_t i = 0; timing && i < conflicts_n_policies(c); i++) {
        struct conflicts_timing tt;
        conflicts_timing_totals(c, i, &tt);
        fprintf(out, "time.%s=%.4f\n", conflicts_policy_name(c, i), tt.time_over_ideal);
    }
    struct overshoot_stats ov;
    overshoot_stats(run->ov, &ov);
    if (ov.records)
        fprintf(out,
                "overshoot.records=%llu\novershoot.mean_pct=%.4f\n"
                "overshoot.above_0.19pct=%.4f\n",
                (unsigned long long)ov.records, 100.0 * ov.mean,
                (double)ov.above_paper / (double)ov.records);
    uint64_t bare = 0;
    heavy_stability_prefills(run->hs, &bare);
    if (n_files && heavy_stability_n_rows(run->hs) == 0 && !quiet)
        fprintf(stderr, "acceltrace: note: heavy_stability skipped: %s\n",
                bare ? "the traces predate the heavy-channel prefix sets"
                     : "no salca prefill records with prefix sets");
}

/* The command line of analyze conflicts. */
struct conflicts_args {
    struct conflicts_opts o;
    const char *outdir, *group_mode, *synth;
    const char *files[MAX_FILES];
    size_t n_files;
    struct synth_args sy;
    struct hbm_timing_cfg tcfg;
    bool timing, quiet, json;
    /* the long names of options of one input kind (or of --timing) only, when given: with
     * the other they would be ignored */
    const char *syn_only, *trace_only, *timing_only;
};

/* Makes the analyzers of a run (run zeroed first); 0 or an exit status after the message. */
static int run_new(struct conflicts_run *run, const struct conflicts_opts *o)
{
    struct errmsg e = {0};
    int rc = conflicts_new(&run->c, o, &e);
    if (rc < 0)
        return cli_usage_error(VERB, "%s", errmsg_text(&e));
    if ((rc = select_quality_new(&run->q, o->method, &e)) < 0 ||
        (rc = overshoot_new(&run->ov, &e)) < 0 || (rc = heavy_stability_new(&run->hs, &e)) < 0)
        return cli_fail(rc, errmsg_text(&e));
    return 0;
}

static void run_free(struct conflicts_run *run)
{
    conflicts_free(run->c);
    select_quality_free(run->q);
    overshoot_free(run->ov);
    heavy_stability_free(run->hs);
}

/* Nothing to analyze is a data error, not empty tables: 0 or exit status 3 after the
 * message. */
static int check_jobs(const struct conflicts *c, const struct conflicts_opts *o, size_t n_files)
{
    struct conflicts_totals t;
    conflicts_totals(c, -1, 0, &t);
    if (t.jobs)
        return 0;
    char m[32];
    snprintf(m, sizeof m, "%d", (int)o->method);
    const char *name = m;
    if (o->method < 0)
        name = "all";
    else if (trace_salca_method_name((uint32_t)o->method))
        name = trace_salca_method_name((uint32_t)o->method);
    cli_error("no selections of method %s in the trace%s given", name, n_files > 1 ? "s" : "");
    return 3;
}

/* Runs the analysis of the traces (or the synthetic jobs), writes it and prints the
 * key=value lines on out. Every trace is read once: the conflict, quality, overshoot and
 * stability analyzers share its pass (analysis/analyzer.h) and each writes its own files.
 * 0 or an exit status after the message. */
static int analyze(void *ctx, FILE *out)
{
    const struct conflicts_args *a = ctx;
    const struct conflicts_opts *o = &a->o;
    struct conflicts_run run = {0};
    int status = run_new(&run, o);
    if (status) {
        run_free(&run);
        return status;
    }
    bool rendered = true;
    struct cli_trace_ident id = {0}; /* for the manifest: no second open of the trace */
    struct analyzer an[5] = {[4] = {&cli_trace_ident_ops, &id}};
    conflicts_analyzer(run.c, a->group_mode, a->outdir, &rendered, &an[0]);
    select_quality_analyzer(run.q, a->group_mode, a->outdir, &rendered, &an[1]);
    overshoot_analyzer(run.ov, a->outdir, &rendered, &an[2]);
    heavy_stability_analyzer(run.hs, a->outdir, &rendered, &an[3]);
    struct errmsg e = {0};
    int rc;
    if (a->sy.kind_name)
        status = add_synthetic(run.c, &a->sy, o->map.seed);
    for (size_t f = 0; f < a->n_files && status == 0; f++)
        if ((rc = analyzer_run(a->files[f], an, 5, NULL, &e)) < 0)
            status = cli_fail(rc, errmsg_text(&e));
    if (status == 0)
        status = check_jobs(run.c, o, a->n_files);
    if (status == 0) {
        if ((rc = analyzer_finish(an, 5, &e)) < 0)
            status = cli_fail(rc, errmsg_text(&e));
        else if (!rendered && !plot_gnuplot_available())
            cli_warn("gnuplot not found: run 'gnuplot NAME.gp' in %s to render", a->outdir);
    }
    if (status == 0) /* what made the tables and figures, for the report */
        status = cli_write_output_manifest_id("analyze conflicts", a->outdir, NULL, a->files,
                                              a->n_files, &id);
    if (status == 0)
        print_summary(out, &run, o, a->timing, a->n_files, a->quiet);
    run_free(&run);
    return status;
}

/* The --steps value "A-B" or "A" into o; false when it is not one. */
static bool parse_steps(const char *v, struct conflicts_opts *o)
{
    char *end;
    errno = 0;
    unsigned long lo = strtoul(v, &end, 10), hi = lo;
    bool ok = end != v && !errno && v[0] != '-';
    if (ok && *end == '-') {
        const char *b = end + 1;
        hi = strtoul(b, &end, 10);
        ok = end != b && !errno && *b != '-';
    }
    if (!ok || *end || lo > hi || hi > UINT32_MAX)
        return false;
    o->steps = true;
    o->step_lo = (uint32_t)lo;
    o->step_hi = (uint32_t)hi;
    return true;
}

/* The --method value (a name, an id or all) into o; false when it is none. */
static bool parse_method(const char *v, struct conflicts_opts *o)
{
    uint32_t id;
    o->method = -2;
    if (!strcmp(v, "all"))
        o->method = -1;
    if (trace_salca_method_id(v) >= 0)
        o->method = trace_salca_method_id(v);
    if (o->method == -2 && parse_u32(v, 0, 1u << 20, &id))
        o->method = (int32_t)id;
    return o->method != -2;
}

/* The analysis options that take a value; 0 or exit status 2. */
static int parse_analysis_value(struct conflicts_args *a, int id, const char *v)
{
    struct conflicts_opts *o = &a->o;
    switch (id) {
    case OPT_PCS:
        if (!parse_u32(v, 1, HBM_PC_MAX_PCS, &o->map.h_att))
            return cli_usage_error(VERB, "bad --pcs '%s' (1..%d)", v, HBM_PC_MAX_PCS);
        return 0;
    case OPT_MAP:
        if (hbm_pc_map_parse(v, &o->map.map) < 0)
            return cli_usage_error(VERB, "bad --map '%s' (mod, xor or hash)", v);
        return 0;
    case OPT_WINDOW:
        if (!parse_list(v, o->windows, &o->n_windows, CONFLICTS_MAX_WINDOWS, 0))
            return cli_usage_error(VERB, "bad --window '%s' (up to %d sizes, e.g. 0,16,128)", v,
                                   CONFLICTS_MAX_WINDOWS);
        return 0;
    case OPT_DEPTH:
        if (!parse_list(v, o->depths, &o->n_depths, CONFLICTS_MAX_DEPTHS, 1))
            return cli_usage_error(VERB, "bad --depth '%s' (up to %d depths >= 1)", v,
                                   CONFLICTS_MAX_DEPTHS);
        return 0;
    case OPT_P_ISS:
        if (!parse_u32(v, 1, 4096, &o->p_iss))
            return cli_usage_error(VERB, "bad --p-iss '%s' (1..4096)", v);
        return 0;
    case OPT_ATT_BASE:
        if (!parse_u32(v, 0, 1u << 20, &o->att_base))
            return cli_usage_error(VERB, "bad --att-base '%s'", v);
        return 0;
    case OPT_SEED:
        if (!cli_parse_u64(v, &o->map.seed))
            return cli_usage_error(VERB, "bad --seed '%s'", v);
        return 0;
    case OPT_METHOD:
        if (!parse_method(v, o))
            return cli_usage_error(VERB, "bad --method '%s' (a name, an id or all)", v);
        return 0;
    case OPT_GROUP:
        if (strcmp(v, "family") && strcmp(v, "task") && strcmp(v, "file") && strcmp(v, "none"))
            return cli_usage_error(VERB, "bad --group '%s' (family, task, file or none)", v);
        a->group_mode = v;
        return 0;
    case OPT_STEPS:
        if (!parse_steps(v, o))
            return cli_usage_error(VERB, "bad --steps '%s' (A-B or A, A <= B)", v);
        return 0;
    default:
        return -1; /* not an analysis option */
    }
}

/* The timing and synthetic options that take a value; 0 or exit status 2. */
static int parse_input_value(struct conflicts_args *a, int id, const char *v)
{
    enum salca_synth_kind k;
    switch (id) {
    case OPT_LAYOUT:
        if (hbm_timing_layout_parse(v, &a->tcfg.layout) < 0)
            return cli_usage_error(VERB, "bad --layout '%s' (kv_bg, one_bg or same_bank)", v);
        return 0;
    case OPT_OCCUPANCY:
        if (hbm_timing_occupancy_parse(v, &a->tcfg.occupancy) < 0)
            return cli_usage_error(VERB, "bad --occupancy '%s' (data, command or request)", v);
        return 0;
    case OPT_PRESET:
        if (hbm_timing_preset(v, &a->tcfg.t) < 0)
            return cli_usage_error(VERB, "bad --preset '%s' (hbm2, hbm3 or hbm3e)", v);
        return 0;
    case OPT_REFRESH:
        if (strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "perbank"))
            return cli_usage_error(VERB, "bad --refresh '%s' (on, off or perbank)", v);
        a->tcfg.refresh = strcmp(v, "off") != 0;
        a->tcfg.per_bank = !strcmp(v, "perbank");
        return 0;
    case OPT_SYNTHETIC:
        if (salca_synth_parse(v, &k) < 0)
            return cli_usage_error(VERB, "bad --synthetic '%s' (uniform, clustered, needle)", v);
        a->synth = v;
        return 0;
    case OPT_N:
        if (!parse_u32(v, 1, CONFLICTS_MAX_CTX, &a->sy.n))
            return cli_usage_error(VERB, "bad --n '%s'", v);
        return 0;
    case OPT_JOBS:
        if (!parse_u32(v, 1, 1u << 20, &a->sy.jobs))
            return cli_usage_error(VERB, "bad --jobs '%s'", v);
        return 0;
    case OPT_LAYERS:
        if (!parse_u32(v, 1, CONFLICTS_MAX_LAYERS, &a->sy.layers))
            return cli_usage_error(VERB, "bad --layers '%s'", v);
        return 0;
    case OPT_RETENTION:
        if (!cli_parse_f64(v, &a->sy.retention) || !(a->sy.retention > 0) || a->sy.retention > 1)
            return cli_usage_error(VERB, "bad --retention '%s' (0 < x <= 1)", v);
        return 0;
    default:
        return parse_analysis_value(a, id, v);
    }
}

/* Parses argv into a; 0 to run, -1 when the help was printed (exit 0), else the exit
 * status of a usage error. */
static int parse_args(struct conflicts_args *a, int argc, char **argv)
{
    conflicts_opts_default(&a->o);
    hbm_timing_cfg_default(&a->tcfg);
    a->group_mode = "family";
    a->sy = (struct synth_args){NULL, 32768, 64, 4, 0.05};
    struct cli_parser p;
    cli_parser_init(&p, &cmd_analyze_conflicts_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return id == CLI_HELP ? -1 : cli_next_exit(id);
        if (cli_is_common(id))
            continue;
        if (id == CLI_POSITIONAL) {
            if (a->n_files == MAX_FILES)
                return cli_usage_error(VERB, "at most %d trace files", MAX_FILES);
            a->files[a->n_files++] = p.arg;
            continue;
        }
        if (id == OPT_N || id == OPT_JOBS || id == OPT_LAYERS || id == OPT_RETENTION)
            a->syn_only = p.opt->name;
        else if (id == OPT_METHOD || id == OPT_GROUP || id == OPT_STEPS)
            a->trace_only = p.opt->name;
        else if (id == OPT_LAYOUT || id == OPT_REFRESH || id == OPT_OCCUPANCY || id == OPT_PRESET ||
                 id == OPT_COMPARE_PRESETS)
            a->timing_only = p.opt->name;
        int rc = 0;
        if (id == OPT_PER_JOB)
            a->o.per_job = true;
        else if (id == OPT_TIMING)
            a->timing = true;
        else if (id == OPT_COMPARE_PRESETS)
            a->o.compare_presets = true;
        else if (id == CLI_ID_PLOT_FORMAT)
            cli_plot_output_opt(VERB, id, p.arg);
        else
            rc = parse_input_value(a, id, p.arg);
        if (rc)
            return rc;
    }
    a->outdir = p.common.output;
    a->quiet = p.common.quiet;
    a->json = p.common.json;
    a->sy.kind_name = a->synth;
    int frc = cli_plot_output_opt(VERB, 0, NULL);
    if (frc)
        return frc;
    int bad = check_inputs(a->outdir, a->n_files, a->synth, a->syn_only, a->trace_only,
                           a->timing_only, a->timing);
    if (bad)
        return bad;
    if (a->timing)
        a->o.timing = &a->tcfg;
    return 0;
}

/* The --json members besides the lines: the files written. */
static json_t *written_files(void *ctx)
{
    const struct conflicts_args *a = ctx;
    return json_pack("{s:s,s:o}", "dir", a->outdir, "files", cli_json_dir_files(a->outdir));
}

int cmd_analyze_conflicts(int argc, char **argv);
int cmd_analyze_conflicts(int argc, char **argv)
{
    struct conflicts_args *a = mem_calloc(1, sizeof *a);
    if (!a)
        return cli_fail(ERR_NOMEM, "out of memory");
    int status = parse_args(a, argc, argv);
    if (status < 0)
        status = 0; /* the help */
    else if (!status)
        status = a->json ? cli_kv_run_json(analyze, a, written_files) : analyze(a, stdout);
    mem_free(a);
    return status;
}
