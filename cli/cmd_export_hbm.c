/*
 * cmd_export_hbm: `acceltrace export hbm-trace FILE.atr --format ramulator|dramsim3|both
 * -o DIR`: the K/V gather streams of a Salca trace's decode jobs as Ramulator 2 and DRAMsim3
 * request traces (replay/hbm_export), with DIR/README.md and DIR/jobs.csv.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hbm_jobs.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cmd_export.h"
#include "common/err.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/progress.h"
#include "formats/varint.h"
#include "replay/hbm_export.h"
#include "replay/hw_config.h"
#include "traces/trace_reader.h"
#include "traces/trace_salca.h"

#define VERB "export hbm-trace"

enum {
    OPT_HW = 1,
    OPT_FORMAT,
    OPT_STEPS,
    OPT_METHOD,
    OPT_PCS,
    OPT_MAP,
    OPT_SEED,
    OPT_LAYOUT,
    OPT_P_ISS,
    OPT_PRESET,
    OPT_REFRESH,
};

/* clang-format off */
static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("DIR", "output folder (created if missing; required)"),
    {OPT_HW, "hw", 0, CLI_ARG_STRING, "CONFIG.json",
     "take h_att, map, map_seed, p_iss, method, hbm.preset,\nhbm.layout and hbm.token_bytes "
     "from a salca replay\nconfig (options given here override it)", 0},
    {OPT_FORMAT, "format", 0, CLI_ARG_STRING, "ramulator|dramsim3|both", "which traces (both)", 0},
    {OPT_STEPS, "steps", 0, CLI_ARG_STRING, "A-B", "only decode steps A..B", 0},
    {OPT_METHOD, "method", 0, CLI_ARG_STRING, "NAME|ID", "selection method (salca)", 0},
    {OPT_PCS, "pcs", 0, CLI_ARG_STRING, "N",
     "attention pseudo-channels h_att, a power of two (16)", 0},
    {OPT_MAP, "map", 0, CLI_ARG_STRING, "mod|xor|hash", "token-to-PC map (mod)", 0},
    {OPT_SEED, "seed", 0, CLI_ARG_STRING, "N", "hash map seed (0)", 0},
    {OPT_LAYOUT, "layout", 0, CLI_ARG_STRING, "kv_bg|one_bg|same_bank",
     "K/V placement in a PC (kv_bg)", 0},
    {OPT_PRESET, "preset", 0, CLI_ARG_STRING, "hbm2|hbm3|hbm3e",
     "DRAM part: address map, simulator configs (hbm2)", 0},
    {OPT_REFRESH, "refresh", 0, CLI_ARG_STRING, "on|perbank",
     "refresh manager of the Ramulator config (on: all-bank)", 0},
    {OPT_P_ISS, "p-iss", 0, CLI_ARG_STRING, "N",
     "tokens issued per token time, DRAMsim3 cycles (h_att)", 0},
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON object on stdout: jobs, tokens, requests, bytes,\nwrite rate and the files "
     "written", 0},
    CLI_OPT_ALLOW_PARTIAL,
    CLI_OPT_END,
};
/* clang-format on */

const struct cli_spec cmd_export_hbm_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace export hbm-trace FILE.atr -o DIR [options]\n"
             "\n"
             "Writes the K/V gathers of the selected Salca decode jobs (the jobs of `analyze\n"
             "conflicts --steps/--method`) as DRAM request traces, one 32-byte read per line,\n"
             "under the configured pseudo-channel map and layout (docs/models.md, \"HBM timing\n"
             "mode\"): DIR/ramulator.trace (Ramulator 2 LoadStoreTrace, \"LD 0xADDR\"),\n"
             "DIR/dramsim3.trace (\"0xADDR READ CYCLE\"), DIR/jobs.csv (the jobs and their\n"
             "line ranges) and DIR/README.md (address bit map, how to run both simulators,\n"
             "how to compare with hbm_time.csv). Prints jobs, tokens, requests, bytes and the\n"
             "write rate.\n",
    .opts = opts,
    .positional = "FILE",
};

/* ramulator.trace, dramsim3.trace, jobs.csv, README.md, ramulator_config.py, dramsim3.ini */
#define N_OUT 6

struct out_file {
    const char *name;
    char path[4096];
    struct sink k;
    bool open;
    struct hbm_export *x;
};

/* The command line of export hbm-trace. */
struct hbm_args {
    const char *path, *dir, *fmt, *hw;
    bool steps, quiet, json;
    uint32_t step_lo, step_hi, p_iss;
    int64_t method;
    struct hbm_pc_mapping pm;
    struct hbm_timing_cfg tc;
    /* options given on the command line, which a --hw config does not override */
    bool g_pcs, g_map, g_seed, g_layout, g_piss, g_method, g_preset;
};

/* The mapping options that take a value into a; 0 or exit status 2. */
static int parse_map_value(struct hbm_args *a, int id, const char *v)
{
    int64_t n;
    switch (id) {
    case OPT_PCS:
        if (!cli_parse_i64(v, &n) || n < 2 || n > HBM_PC_MAX_PCS || (n & (n - 1)))
            return cli_usage_error(VERB, "bad --pcs '%s' (a power of two, 2..%d)", v,
                                   HBM_PC_MAX_PCS);
        a->pm.h_att = (uint32_t)n;
        a->g_pcs = true;
        return 0;
    case OPT_MAP:
        if (hbm_pc_map_parse(v, &a->pm.map) < 0)
            return cli_usage_error(VERB, "bad --map '%s' (mod, xor or hash)", v);
        a->g_map = true;
        return 0;
    case OPT_SEED:
        if (!cli_parse_u64(v, &a->pm.seed))
            return cli_usage_error(VERB, "bad --seed '%s'", v);
        a->g_seed = true;
        return 0;
    case OPT_LAYOUT:
        if (hbm_timing_layout_parse(v, &a->tc.layout) < 0)
            return cli_usage_error(VERB, "bad --layout '%s' (kv_bg, one_bg or same_bank)", v);
        a->g_layout = true;
        return 0;
    case OPT_PRESET:
        if (hbm_timing_preset(v, &a->tc.t) < 0)
            return cli_usage_error(VERB, "bad --preset '%s' (hbm2, hbm3 or hbm3e)", v);
        a->g_preset = true;
        return 0;
    case OPT_REFRESH:
        if (strcmp(v, "on") && strcmp(v, "perbank"))
            return cli_usage_error(VERB, "bad --refresh '%s' (on or perbank)", v);
        a->tc.per_bank = !strcmp(v, "perbank");
        return 0;
    default: /* OPT_P_ISS */
        if (!cli_parse_i64(v, &n) || n < 1 || n > 4096)
            return cli_usage_error(VERB, "bad --p-iss '%s' (1..4096)", v);
        a->p_iss = (uint32_t)n;
        a->g_piss = true;
        return 0;
    }
}

/* The options that take a value into the hbm_args ctx; 0 or exit status 2. */
static int parse_value(void *ctx, int id, const char *v)
{
    struct hbm_args *a = ctx;
    switch (id) {
    case OPT_HW:
        a->hw = v;
        return 0;
    case OPT_FORMAT:
        if (strcmp(v, "ramulator") && strcmp(v, "dramsim3") && strcmp(v, "both"))
            return cli_usage_error(VERB, "bad --format '%s' (ramulator, dramsim3 or both)", v);
        a->fmt = v;
        return 0;
    case OPT_STEPS:
        if (!cmd_export_parse_steps(v, &a->step_lo, &a->step_hi))
            return cli_usage_error(VERB, "bad --steps '%s' (A-B or A, A <= B)", v);
        a->steps = true;
        return 0;
    case OPT_METHOD:
        a->method = trace_salca_method_id(v); /* the one table of method names */
        if (a->method < 0 && (!cli_parse_i64(v, &a->method) || a->method < 0 || a->method > 65535))
            return cli_usage_error(VERB, "bad --method '%s' (a name or an id)", v);
        a->g_method = true;
        return 0;
    default:
        return parse_map_value(a, id, v);
    }
}

/* Parses argv into a; 0 to run, -1 when the help was printed (exit 0), else the exit
 * status of a usage error. */
static int parse_args(struct hbm_args *a, int argc, char **argv)
{
    a->fmt = "both";
    a->pm = (struct hbm_pc_mapping){HBM_PC_MAP_MOD, 16, 0};
    hbm_timing_cfg_default(&a->tc);
    struct cmd_export_args c;
    int rc = cmd_export_parse(&cmd_export_hbm_spec, argc, argv, "trace", "need FILE.atr and -o DIR",
                              parse_value, a, &c);
    a->path = c.in;
    a->dir = c.out;
    a->quiet = c.quiet;
    a->json = c.json;
    return rc;
}

/* Takes what the command line did not give from the salca config a->hw; 0 or an exit
 * status after the message. */
static int apply_hw_config(struct hbm_args *a)
{
    struct errmsg e = {0};
    struct hw_config *cfg = NULL;
    int lrc = hw_config_load(&cfg, a->hw, NULL, &e);
    if (lrc < 0)
        return cli_fail(lrc, errmsg_text(&e));
    if (strcmp(hw_config_schema(cfg)->model, "salca") ||
        !strcmp(hw_config_str(cfg, "variant"), "dense")) {
        cli_error("'%s' is not a salca config of the salca variant (model %s)", a->hw,
                  hw_config_schema(cfg)->model);
        hw_config_free(cfg);
        return 3;
    }
    /* the salca model's keys (replay/salca_model.c); hbm.token_bytes 0 = b_att/8 = 2·d */
    if (!a->g_pcs)
        a->pm.h_att = (uint32_t)hw_config_int(cfg, "h_att");
    if (!a->g_map)
        hbm_pc_map_parse(hw_config_str(cfg, "map"), &a->pm.map);
    if (!a->g_seed)
        a->pm.seed = (uint64_t)hw_config_int(cfg, "map_seed");
    if (!a->g_piss)
        a->p_iss = (uint32_t)hw_config_int(cfg, "p_iss");
    if (!a->g_method)
        a->method = hw_config_int(cfg, "method");
    if (!a->g_layout)
        hbm_timing_layout_parse(hw_config_str(cfg, "hbm.layout"), &a->tc.layout);
    if (!a->g_preset)
        hbm_timing_preset(hw_config_str(cfg, "hbm.preset"), &a->tc.t);
    int64_t tb = hw_config_int(cfg, "hbm.token_bytes");
    a->tc.token_bytes = (uint32_t)(tb ? tb : 2 * hw_config_int(cfg, "d"));
    hw_config_free(cfg);
    if (hbm_pc_mapping_check(&a->pm, &e) < 0 || hbm_timing_check(&a->tc, &e) < 0 ||
        hbm_export_map_init(&(struct hbm_export_map){0}, &a->tc, a->pm.h_att, &e) < 0) {
        cli_error("%s ('%s')", errmsg_text(&e), a->hw);
        return 3;
    }
    return 0;
}

/* The export run: its outputs, the selection buffer and the running counts. */
struct hbm_run {
    const struct hbm_args *a;
    struct out_file outs[N_OUT];
    bool want[2];
    struct hbm_jobs jobs; /* the pass over the selections (analysis/hbm_jobs.h) */
};

/* Sets the output paths of run and refuses a trace among them; 0 or exit status 2. */
static int output_paths(struct hbm_run *run)
{
    static const char *const names[N_OUT] = {
        "ramulator.trace", "dramsim3.trace",      "jobs.csv",
        "README.md",       "ramulator_config.py", "dramsim3.ini"};
    const char *dir = run->a->dir;
    const char *outp[N_OUT + 1];
    size_t n_out = 0;
    run->want[0] = strcmp(run->a->fmt, "dramsim3") != 0;
    run->want[1] = strcmp(run->a->fmt, "ramulator") != 0;
    for (size_t k = 0; k < N_OUT; k++) {
        run->outs[k].name = names[k];
        if (snprintf(run->outs[k].path, sizeof run->outs[k].path, "%s/%s", dir, names[k]) >=
            (int)sizeof run->outs[k].path)
            return cli_usage_error(VERB, "output folder name too long");
        if ((k >= 2 && k < 4) || run->want[k % 2])
            outp[n_out++] = run->outs[k].path;
    }
    outp[n_out++] = dir;
    return cmd_export_check_outputs(VERB, run->a->path, outp, n_out);
}

/* Creates the folder and opens the trace files and jobs.csv (with its header line); 0, an
 * exit status after the message, or -1 for a write error (errno). */
static int open_outputs(struct hbm_run *run)
{
    const struct hbm_args *a = run->a;
    struct errmsg e = {0};
    int rc = cli_output_dir(a->dir);
    if (rc)
        return rc;
    for (size_t k = 0; k < 3; k++) {
        struct out_file *o = &run->outs[k];
        if (k < 2 && !run->want[k])
            continue;
        if ((rc = sink_open_file(&o->k, o->path, &e)) < 0)
            return cli_fail(rc, errmsg_text(&e));
        o->open = true;
        if (k < 2 && (rc = hbm_export_new(&o->x, &o->k, (enum hbm_export_format)k, &a->tc, &a->pm,
                                          a->p_iss, &e)) < 0)
            return cli_fail(rc, errmsg_text(&e));
    }
    const char *hdr_line = "job,step,layer,head,tokens,first_request,requests\n";
    return sink_write(&run->outs[2].k, hdr_line, strlen(hdr_line)) < 0 ? -1 : 0;
}

/* One pass over the open trace r (analysis/hbm_jobs.h) exporting each selection of the
 * method and steps into the open outputs; 0 or an exit status after the message. */
static int export_selections(struct hbm_run *run, struct trace_reader *r)
{
    const struct hbm_args *a = run->a;
    struct hbm_jobs *j = &run->jobs;
    for (size_t k = 0; k < 2; k++)
        j->x[k] = run->want[k] ? run->outs[k].x : NULL;
    j->csv = &run->outs[2].k;
    j->dir = a->dir;
    j->method = a->method;
    j->steps = a->steps;
    j->step_lo = a->step_lo;
    j->step_hi = a->step_hi;
    j->per_token = a->tc.token_bytes / a->tc.t.burst_bytes;
    struct analyzer_opts o;
    analyzer_opts_default(&o);
    o.scan.progress_label = NULL; /* the export prints its own closing line */
    const struct analyzer an = {&hbm_jobs_ops, j};
    struct errmsg e = {0};
    int rc = analyzer_run_reader(r, a->path, &an, 1, &o, &e);
    if (rc < 0)
        return cli_fail(rc, errmsg_text(&e));
    if (j->jobs == 0) {
        cli_error("no selections of method %lld%s in '%s'", (long long)a->method,
                  a->steps ? " in the given steps" : "", a->path);
        return 3;
    }
    return 0;
}

/* Finishes the trace files, writes README.md, closes everything and prints the figures on
 * f; 0, an exit status after the message, or -1 for a write error (errno). */
static int finish_outputs(struct hbm_run *run, FILE *f)
{
    const struct hbm_args *a = run->a;
    uint64_t bytes = 0;
    double t0 = progress_now_s();
    for (size_t k = 0; k < 2; k++)
        if (run->want[k]) {
            if (hbm_export_finish(run->outs[k].x) < 0)
                return -1;
            bytes += hbm_export_bytes(run->outs[k].x);
        }
    run->jobs.t_write_s += progress_now_s() - t0;
    const char *names[3] = {NULL, NULL, NULL};
    size_t nn = 0;
    for (size_t k = 0; k < 2; k++)
        if (run->want[k])
            names[nn++] = run->outs[k].name;
    struct errmsg e = {0};
    for (size_t k = 3; k < N_OUT; k++) {
        struct out_file *o = &run->outs[k];
        if (k > 3 && !run->want[k % 2])
            continue;
        int rc = sink_open_file(&o->k, o->path, &e);
        if (rc < 0)
            return cli_fail(rc, errmsg_text(&e));
        o->open = true;
        rc = k == 3   ? hbm_export_readme(&o->k, &a->tc, &a->pm, a->p_iss, names)
             : k == 4 ? hbm_export_ramulator_py(&o->k, &a->tc, &a->pm, a->p_iss)
                      : hbm_export_dramsim3_ini(&o->k, &a->tc, a->pm.h_att);
        if (rc < 0)
            return -1;
    }
    for (size_t k = 0; k < N_OUT; k++) {
        if (!run->outs[k].open)
            continue;
        run->outs[k].open = false;
        if (sink_close(&run->outs[k].k) < 0)
            return -1;
    }
    const struct hbm_jobs *j = &run->jobs;
    fprintf(f, "jobs=%llu\ntokens=%llu\nrequests=%llu\nbytes=%llu\n", (unsigned long long)j->jobs,
            (unsigned long long)j->tokens, (unsigned long long)j->requests,
            (unsigned long long)bytes);
    /* formatting and write(2) of the trace files only, not the trace decoding */
    fprintf(f, "write_mb_per_s=%.1f\n",
            j->t_write_s > 0 ? (double)bytes / 1e6 / j->t_write_s : 0.0);
    return 0;
}

/* The export of the parsed command line ctx, its figures printed on f. */
static int run_export(void *ctx, FILE *f)
{
    const struct hbm_args *a = ctx;
    struct hbm_run run = {.a = a};
    int status = output_paths(&run);
    if (status)
        return status;
    struct trace_reader *r = NULL;
    struct errmsg oe = {0};
    int rc = trace_reader_open(&r, a->path, NULL, &oe);
    if (rc < 0)
        return cli_fail(rc, errmsg_text(&oe));
    double t_start = progress_now_s();
    if ((rc = hbm_jobs_check(r, a->path, &oe)) < 0)
        status = cli_fail(rc, errmsg_text(&oe));
    if (!status)
        status = open_outputs(&run);
    if (!status)
        status = export_selections(&run, r);
    if (!status)
        status = finish_outputs(&run, f);
    if (status < 0) {
        cli_error("cannot write in '%s': %s", a->dir, strerror(errno));
        status = 1;
    }
    if (!status && !a->quiet)
        fprintf(stderr, "acceltrace: wrote %s in %.2f s\n", a->dir, progress_now_s() - t_start);
    for (size_t k = 0; k < N_OUT; k++) {
        hbm_export_free(run.outs[k].x);
        if (run.outs[k].open)
            sink_close(&run.outs[k].k);
    }
    hbm_jobs_release(&run.jobs);
    trace_reader_free(r);
    return status;
}

/* The --json members besides the figures: the files written. */
static json_t *written_files(void *ctx)
{
    const struct hbm_args *a = ctx;
    return json_pack("{s:s,s:o}", "dir", a->dir, "files", cli_json_dir_files(a->dir));
}

int cmd_export_hbm(int argc, char **argv);
int cmd_export_hbm(int argc, char **argv)
{
    struct hbm_args a = {0};
    int status = parse_args(&a, argc, argv);
    if (status)
        return status < 0 ? 0 : status; /* -1: the help */
    if (a.hw && (status = apply_hw_config(&a)) != 0)
        return status;
    struct errmsg e = {0};
    struct hbm_export_map bm;
    if (hbm_pc_mapping_check(&a.pm, &e) < 0 || hbm_timing_check(&a.tc, &e) < 0 ||
        hbm_export_map_init(&bm, &a.tc, a.pm.h_att, &e) < 0)
        return cli_usage_error(VERB, "%s", errmsg_text(&e));
    return a.json ? cli_kv_run_json(run_export, &a, written_files) : run_export(&a, stdout);
}
