/*
 * cmd_analyze_conflicts: `acceltrace analyze conflicts FILE.atr... -o DIR`: replays every
 * Salca selection's K/V gathers against the HBM pseudo-channel mapping under batch,
 * in-order and reorder-window issue in one pass (specs/salca.md sections 11-12).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/conflicts.h"
#include "analysis/plot.h"
#include "cli/cli.h"
#include "common/err.h"
#include "common/mem.h"
#include "traces/trace_salca.h"

#define VERB "analyze conflicts"
#define MAX_FILES 256

static void usage(FILE *f)
{
    fputs("usage: acceltrace analyze conflicts FILE.atr... -o DIR [options]\n"
          "       acceltrace analyze conflicts --synthetic KIND -o DIR [options]\n"
          "\n"
          "HBM pseudo-channel conflicts of Salca's K/V gathers (specs/salca.md section 11):\n"
          "every selection is mapped to the attention PCs and replayed under batch issue,\n"
          "in-order issue (each FIFO depth) and reorder windows (each size) in one pass.\n"
          "Writes alpha.csv, alpha_layers.csv, alpha_vs_window.csv, conflict_occupancy.csv,\n"
          "conflict_per_batch.csv and their plots to DIR; prints alpha per policy. From\n"
          "traces it also writes recall_vs_retention.csv and the recall/cosine vs retention\n"
          "plots (every method; one point per trace retention, a panel per group),\n"
          "heavy_stability.csv and plot (per layer: Jaccard overlap of the heavy channels\n"
          "found on the first m prefill keys, m = 64, 128, ... and n0, with the final set;\n"
          "skipped with a note for traces captured before the prefix sets were recorded)\n"
          "and overshoot.csv and plot (histogram of (|S| - K)/n of every salca selection,\n"
          "method id 0, in bins of 0.05% of n; mark at the paper's 0.19%). Prints\n"
          "overshoot.* lines (records, mean_pct, above_0.19pct: the fraction of records).\n"
          "\n"
          "options:\n"
          "  -o DIR               output folder (required)\n"
          "  --pcs N              attention pseudo-channels h_att (16)\n"
          "  --map mod|xor|hash   token-to-PC mapping (mod)\n"
          "  --window LIST        reorder windows, 0 = in-order\n"
          "                       (0,16,32,64,128,256,512,1024)\n"
          "  --depth LIST         in-order FIFO depths D_f (1,2,4)\n"
          "  --p-iss N            requests issued per slot (h_att)\n"
          "  --att-base N         first attention PC, for reports (16: h_pre of the design\n"
          "                       point; 11 for the final design)\n"
          "  --seed N             hash map seed (0)\n"
          "  --method NAME|ID|all selection method to analyze (salca)\n"
          "  --group family|task|file|none  series label per trace (family)\n"
          "  --per-job            also write alpha_jobs.csv (slots of every policy per job)\n"
          "  --timing             also replay every policy against HBM2 DRAM timing (banks,\n"
          "                       rows, latency, refresh; docs/models.md#hbm-timing-mode):\n"
          "                       writes hbm_time.csv, prints time.POLICY=time_over_ideal\n"
          "  --layout NAME        timing: K/V placement kv_bg|one_bg|same_bank (kv_bg)\n"
          "  --refresh on|off     timing: model tRFC/tREFI refresh (on)\n"
          "  --occupancy data|command  timing: a token counts against D_f and W until its\n"
          "                       data is back, or until its last read command (a\n"
          "                       controller read queue, as Ramulator 2's) (data)\n"
          "  --steps A-B          only decode steps A..B of the traces\n"
          "  --synthetic KIND     no trace: uniform|clustered|needle selections\n"
          "  --n N, --retention X, --jobs N, --layers N  synthetic context, retention, jobs\n"
          "                       and layers (32768, 0.05, 64, 4)\n"
          "  -h, --help           this help\n",
          f);
}

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

/* One reader pass over a trace into c; 0 or an exit status after the message. */
static int run_file(struct conflicts *c, const char *path, const char *group_mode)
{
    struct conflicts_feed f = {c, group_mode, NULL};
    struct analyzer an;
    struct errmsg e = {0};
    conflicts_analyzer(&f, &an);
    int rc = analyzer_run(path, &an, 1, NULL, &e);
    return rc < 0 ? cli_fail(rc, errmsg_text(&e)) : 0;
}

/* The inputs given fit together (one input kind, its own options); 0 or exit status 2. */
static int check_inputs(const char *outdir, size_t n_files, const char *synth,
                        const char *syn_only, const char *trace_only, const char *timing_only,
                        bool timing)
{
    if (!outdir)
        return cli_usage_error(VERB, "missing -o DIR");
    if (!n_files && !synth)
        return cli_usage_error(VERB, "no trace file (or --synthetic KIND) given");
    if (n_files && synth)
        return cli_usage_error(VERB, "give trace files or --synthetic, not both");
    if (n_files && syn_only)
        return cli_usage_error(VERB,
                               "%s applies to --synthetic only (a trace records its own "
                               "context, retention, jobs and layers)",
                               syn_only);
    if (synth && trace_only)
        return cli_usage_error(VERB,
                               "%s applies to trace files only (--synthetic has one "
                               "method and one group)",
                               trace_only);
    if (timing_only && !timing)
        return cli_usage_error(VERB, "%s applies to --timing only", timing_only);
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
    uint32_t *idx = mem_alloc((size_t)sy->n * sizeof *idx);
    if (!idx)
        return cli_fail(ERR_NOMEM, "out of memory");
    uint32_t heads = (sy->jobs + sy->layers - 1) / sy->layers;
    for (uint32_t j = 0; j < sy->jobs && status == 0; j++) {
        size_t cnt = 0;
        uint32_t l = j / heads, h = j % heads;
        rc = salca_synth_selection(k, sy->n, sy->retention, seed, l, h, idx, &cnt);
        if (rc == 0)
            rc = conflicts_add_job(c, sy->kind_name, l, h, idx, cnt);
        if (rc < 0)
            status = cli_fail(rc, conflicts_errmsg(c));
    }
    mem_free(idx);
    return status;
}

/* The key=value lines of the run (and the stability note on stderr). */
static void print_summary(struct conflicts *c, const struct conflicts_opts *o, bool timing,
                          size_t n_files)
{
    struct conflicts_totals t;
    conflicts_totals(c, -1, 0, &t);
    printf("map=%s\nh_att=%u\natt_base=%u\np_iss=%u\njobs=%llu\ntokens=%llu\nbound=%.4f\n",
           hbm_pc_map_name(o->map.map), o->map.h_att, o->att_base,
               o->p_iss ? o->p_iss : o->map.h_att,
           (unsigned long long)t.jobs, (unsigned long long)t.tokens, t.bound);
    for (size_t i = 0; i < conflicts_n_policies(c); i++) {
        conflicts_totals(c, -1, i, &t);
        printf("alpha.%s=%.4f\n", conflicts_policy_name(c, i), t.alpha);
    }
    for (size_t i = 0; timing && i < conflicts_n_policies(c); i++) {
        struct conflicts_timing tt;
        conflicts_timing_totals(c, i, &tt);
        printf("time.%s=%.4f\n", conflicts_policy_name(c, i), tt.time_over_ideal);
    }
    struct conflicts_overshoot ov;
    conflicts_overshoot(c, &ov);
    if (ov.records)
        printf("overshoot.records=%llu\novershoot.mean_pct=%.4f\n"
               "overshoot.above_0.19pct=%.4f\n",
               (unsigned long long)ov.records, 100.0 * ov.mean,
               (double)ov.above_paper / (double)ov.records);
    uint64_t bare = 0;
    conflicts_prefill_records(c, &bare);
    if (n_files && conflicts_n_stability(c) == 0)
        fprintf(stderr, "acceltrace: note: heavy_stability skipped: %s\n",
                bare ? "the traces predate the heavy-channel prefix sets"
                     : "no salca prefill records with prefix sets");
}

/* Runs the analysis of the traces (or the synthetic jobs), writes and prints it. */
static int analyze(const struct conflicts_opts *o, const char *const *files, size_t n_files,
                   const struct synth_args *sy, const char *group_mode, const char *outdir,
                   bool timing)
{
    struct conflicts *c = NULL;
    struct errmsg e = {0};
    int rc = conflicts_new(&c, o, &e);
    if (rc < 0)
        return cli_usage_error(VERB, "%s", errmsg_text(&e));
    int status = 0;
    if (sy->kind_name)
        status = add_synthetic(c, sy, o->map.seed);
    for (size_t f = 0; f < n_files && status == 0; f++)
        status = run_file(c, files[f], group_mode);
    if (status == 0) {
        /* nothing to analyze is a data error, not empty tables (issue 17) */
        struct conflicts_totals t;
        conflicts_totals(c, -1, 0, &t);
        if (t.jobs == 0) {
            char m[32];
            snprintf(m, sizeof m, "%d", (int)o->method);
            const char *name = m;
            if (o->method < 0)
                name = "all";
            else if (trace_salca_method_name((uint32_t)o->method))
                name = trace_salca_method_name((uint32_t)o->method);
            cli_error("no selections of method %s in the trace%s given", name,
                      n_files > 1 ? "s" : "");
            status = 3;
        }
    }
    if (status == 0) {
        bool rendered = true;
        rc = conflicts_write(c, outdir, &rendered);
        if (rc < 0)
            status = cli_fail(rc, conflicts_errmsg(c));
        else if (!rendered && !plot_gnuplot_available())
            cli_warn("gnuplot not found: run 'gnuplot NAME.gp' in %s to render", outdir);
    }
    if (status == 0)
        print_summary(c, o, timing, n_files);
    conflicts_free(c);
    return status;
}

int cmd_analyze_conflicts(int argc, char **argv);
int cmd_analyze_conflicts(int argc, char **argv)
{
    struct conflicts_opts o;
    conflicts_opts_default(&o);
    const char *outdir = NULL, *group_mode = "family", *synth = NULL;
    const char *files[MAX_FILES];
    size_t n_files = 0;
    uint32_t syn_n = 32768, syn_jobs = 64, syn_layers = 4;
    double syn_ret = 0.05;
    struct hbm_timing_cfg tcfg;
    hbm_timing_cfg_default(&tcfg);
    bool timing = false;
    const char *timing_only = NULL;
    /* options of one input kind only: given with the other they would be ignored */
    const char *syn_only = NULL, *trace_only = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--per-job")) {
            o.per_job = true;
            continue;
        }
        if (!strcmp(a, "--timing")) {
            timing = true;
            continue;
        }
        if (a[0] != '-') {
            if (n_files == MAX_FILES)
                return cli_usage_error(VERB, "at most %d trace files", MAX_FILES);
            files[n_files++] = a;
            continue;
        }
        if (!v)
            return cli_usage_error(VERB, "option '%s' needs a value", a);
        i++;
        if (!strcmp(a, "--n") || !strcmp(a, "--jobs") || !strcmp(a, "--layers") ||
            !strcmp(a, "--retention"))
            syn_only = a;
        else if (!strcmp(a, "--method") || !strcmp(a, "--group") || !strcmp(a, "--steps"))
            trace_only = a;
        else if (!strcmp(a, "--layout") || !strcmp(a, "--refresh") || !strcmp(a, "--occupancy"))
            timing_only = a;
        if (!strcmp(a, "-o")) {
            outdir = v;
        } else if (!strcmp(a, "--pcs")) {
            if (!parse_u32(v, 1, HBM_PC_MAX_PCS, &o.map.h_att))
                return cli_usage_error(VERB, "bad --pcs '%s' (1..%d)", v, HBM_PC_MAX_PCS);
        } else if (!strcmp(a, "--map")) {
            if (hbm_pc_map_parse(v, &o.map.map) < 0)
                return cli_usage_error(VERB, "bad --map '%s' (mod, xor or hash)", v);
        } else if (!strcmp(a, "--window")) {
            if (!parse_list(v, o.windows, &o.n_windows, CONFLICTS_MAX_WINDOWS, 0))
                return cli_usage_error(VERB, "bad --window '%s' (up to %d sizes, e.g. 0,16,128)", v,
                                       CONFLICTS_MAX_WINDOWS);
        } else if (!strcmp(a, "--depth")) {
            if (!parse_list(v, o.depths, &o.n_depths, CONFLICTS_MAX_DEPTHS, 1))
                return cli_usage_error(VERB, "bad --depth '%s' (up to %d depths >= 1)", v,
                                       CONFLICTS_MAX_DEPTHS);
        } else if (!strcmp(a, "--p-iss")) {
            if (!parse_u32(v, 1, 4096, &o.p_iss))
                return cli_usage_error(VERB, "bad --p-iss '%s' (1..4096)", v);
        } else if (!strcmp(a, "--att-base")) {
            if (!parse_u32(v, 0, 1u << 20, &o.att_base))
                return cli_usage_error(VERB, "bad --att-base '%s'", v);
        } else if (!strcmp(a, "--seed")) {
            if (!cli_parse_u64(v, &o.map.seed))
                return cli_usage_error(VERB, "bad --seed '%s'", v);
        } else if (!strcmp(a, "--method")) {
            uint32_t id;
            o.method = -2;
            if (!strcmp(v, "all"))
                o.method = -1;
            if (trace_salca_method_id(v) >= 0)
                o.method = trace_salca_method_id(v);
            if (o.method == -2 && parse_u32(v, 0, 1u << 20, &id))
                o.method = (int32_t)id;
            if (o.method == -2)
                return cli_usage_error(VERB, "bad --method '%s' (a name, an id or all)", v);
        } else if (!strcmp(a, "--group")) {
            if (strcmp(v, "family") && strcmp(v, "task") && strcmp(v, "file") && strcmp(v, "none"))
                return cli_usage_error(VERB, "bad --group '%s' (family, task, file or none)", v);
            group_mode = v;
        } else if (!strcmp(a, "--layout")) {
            if (hbm_timing_layout_parse(v, &tcfg.layout) < 0)
                return cli_usage_error(VERB, "bad --layout '%s' (kv_bg, one_bg or same_bank)", v);
        } else if (!strcmp(a, "--occupancy")) {
            if (hbm_timing_occupancy_parse(v, &tcfg.occupancy) < 0)
                return cli_usage_error(VERB, "bad --occupancy '%s' (data, command or request)", v);
        } else if (!strcmp(a, "--refresh")) {
            if (strcmp(v, "on") && strcmp(v, "off"))
                return cli_usage_error(VERB, "bad --refresh '%s' (on or off)", v);
            tcfg.refresh = !strcmp(v, "on");
        } else if (!strcmp(a, "--steps")) {
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
                return cli_usage_error(VERB, "bad --steps '%s' (A-B or A, A <= B)", v);
            o.steps = true;
            o.step_lo = (uint32_t)lo;
            o.step_hi = (uint32_t)hi;
        } else if (!strcmp(a, "--synthetic")) {
            enum salca_synth_kind k;
            if (salca_synth_parse(v, &k) < 0)
                return cli_usage_error(VERB, "bad --synthetic '%s' (uniform, clustered, needle)",
                                       v);
            synth = v;
        } else if (!strcmp(a, "--n")) {
            if (!parse_u32(v, 1, CONFLICTS_MAX_CTX, &syn_n))
                return cli_usage_error(VERB, "bad --n '%s'", v);
        } else if (!strcmp(a, "--jobs")) {
            if (!parse_u32(v, 1, 1u << 20, &syn_jobs))
                return cli_usage_error(VERB, "bad --jobs '%s'", v);
        } else if (!strcmp(a, "--layers")) {
            if (!parse_u32(v, 1, CONFLICTS_MAX_LAYERS, &syn_layers))
                return cli_usage_error(VERB, "bad --layers '%s'", v);
        } else if (!strcmp(a, "--retention")) {
            if (!cli_parse_f64(v, &syn_ret) || !(syn_ret > 0) || syn_ret > 1)
                return cli_usage_error(VERB, "bad --retention '%s' (0 < x <= 1)", v);
        } else {
            return cli_usage_error(VERB, "unknown option '%s'", a);
        }
    }
    int bad = check_inputs(outdir, n_files, synth, syn_only, trace_only, timing_only, timing);
    if (bad)
        return bad;
    if (timing)
        o.timing = &tcfg;
    const struct synth_args sy = {synth, syn_n, syn_jobs, syn_layers, syn_ret};
    return analyze(&o, files, n_files, &sy, group_mode, outdir, timing);
}
