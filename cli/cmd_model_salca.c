/*
 * cmd_model_salca: `acceltrace model salca`: the Salca analytic performance model
 * (docs/models.md, Salca 'Analytic solver') as a solver; prints one key=value line per
 * derived value, or with --json one JSON object of the same keys and values.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis/plot.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/io.h"
#include "common/mem.h"
#include "replay/engine.h"
#include "replay/hw_config.h"
#include "replay/model.h"
#include "replay/model_registry.h"
#include "replay/results.h"
#include "replay/salca_model.h"
#include "replay/salca_perf.h"

#define VERB "model salca"

enum {
    OPT_PAPER = 1,
    OPT_PLOT,
    OPT_TRACE,
    OPT_RAT,                /* OPT_RAT + k: rats[k] of cmd_model_salca */
    OPT_INT = OPT_RAT + 32, /* OPT_INT + k: ints[k] */
};

/* clang-format off */
static const struct cli_opt opts[] = {
    {OPT_PAPER, "paper", 0, CLI_ARG_NONE, NULL,
     "use the paper's inputs (the default; stated explicitly)", 0},
    {OPT_RAT + 0, "d", 0, CLI_ARG_STRING, "N", "head dimension (128)", 0},
    {OPT_RAT + 1, "s-f", 0, CLI_ARG_STRING, "X", "feature keep ratio (0.5)", 0},
    {OPT_RAT + 2, "w-k", 0, CLI_ARG_STRING, "N", "key bit width (2)", 0},
    {OPT_RAT + 3, "factor-bits", 0, CLI_ARG_STRING, "N",
     "bits of the per-key quantization factors (32)", 0},
    {OPT_RAT + 4, "chn", 0, CLI_ARG_STRING, "N", "HBM pseudo-channels (32)", 0},
    {OPT_RAT + 5, "bw", 0, CLI_ARG_STRING, "N", "bits per pseudo-channel per HBM cycle (128)", 0},
    {OPT_RAT + 6, "f-hbm-ghz", 0, CLI_ARG_STRING, "X", "HBM clock, GHz (1)", 0},
    {OPT_RAT + 7, "f-cmp-ghz", 0, CLI_ARG_STRING, "X", "compute clock, GHz (0.5)", 0},
    {OPT_RAT + 8, "alpha", 0, CLI_ARG_STRING, "X", "channel-conflict factor (1.17)", 0},
    {OPT_RAT + 9, "alpha-inorder", 0, CLI_ARG_STRING, "X",
     "in-order conflict factor, for conflict_gain (2.18)", 0},
    {OPT_RAT + 10, "beta-pre", 0, CLI_ARG_STRING, "X", "HBM efficiency of pre-compute (0.95)", 0},
    {OPT_RAT + 11, "beta-att", 0, CLI_ARG_STRING, "X", "HBM efficiency of attention (0.55)", 0},
    {OPT_RAT + 12, "r-q", 0, CLI_ARG_STRING, "X", "target retention (0.05)", 0},
    {OPT_INT + 0, "p-pre", 0, CLI_ARG_STRING, "N",
     "compute parallelism of pre-compute in the final design\n(final.* lines)", 0},
    {OPT_INT + 1, "p-att", 0, CLI_ARG_STRING, "N",
     "compute parallelism of attention in the final design", 0},
    {OPT_INT + 2, "h-pre", 0, CLI_ARG_STRING, "N",
     "pseudo-channels of pre-compute in the fixed-PC view\n(the design point's)", 0},
    {OPT_INT + 3, "h-att", 0, CLI_ARG_STRING, "N",
     "pseudo-channels of attention in the fixed-PC view", 0},
    {OPT_PLOT, "plot", 0, CLI_ARG_STRING, "DIR",
     "also write the Pareto-front plot pareto.png (and\npareto.csv) to DIR", 0},
    {OPT_TRACE, "trace", 0, CLI_ARG_STRING, "FILE.atr",
     "also replay the trace's salca selections through the\npipeline model "
     "(docs/models.md, Salca 'Trace-driven\npipeline') for the reference configs "
     "salca_final,\nsalca_pareto, asic_s4, asic_d under in-order (D_f 1) and\nwindow-128 "
     "issue: ref.* and compare.* lines; with --plot\nalso stage_utilization and "
     "step_utilization (.png and .csv)", 0},
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON object on stdout: each key=value line as a member\n(numbers as numbers), "
     "and the files of --plot", 0},
    CLI_OPT_ALLOW_PARTIAL,
    CLI_OPT_END,
};
/* clang-format on */

const struct cli_spec cmd_model_salca_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace model salca [--paper] [options]\n"
             "\n"
             "Salca analytic performance model (docs/models.md, Salca 'Analytic solver'):\n"
             "bits per key, HBM bandwidth, the Pareto front of (m_pre, m_att), the design point,\n"
             "its minimum retention, the compute ceilings p', the final design for a given p,\n"
             "the 4-bit baseline ASIC_S_4 and the conflict gain. Prints key=value lines.\n"
             "Decimal values are exact ratios (0.95 = 19/20); a/b is accepted too.\n"
             "Option defaults are the paper's inputs.\n",
    .opts = opts,
    .positional = "FILE",
};

static int plot_finish(struct plot *p, const char *dir)
{
    bool rendered = false;
    int rc = plot_write(p, dir, &rendered);
    if (rc < 0)
        rc = cli_fail(rc, plot_errmsg(p));
    else if (!rendered)
        cli_warn("gnuplot not found: run 'gnuplot *.gp' in %s to render", dir);
    plot_free(p);
    return rc;
}

/* DIR/NAME.csv for a plot's data (docs/salca.md#figures: a CSV beside each plot), header line
 * written; NULL after an error message. */
static FILE *csv_open(const char *dir, const char *name, const char *header)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.csv", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        cli_error("cannot write '%s': %s", path, strerror(errno));
    else
        fprintf(f, "%s\n", header);
    return f;
}

/* Closes a csv_open file; 0, or 1 after an error message. */
static int csv_close(FILE *f, const char *dir, const char *name)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        cli_error("cannot write '%s/%s.csv'", dir, name);
        return 1;
    }
    return 0;
}

/* docs/salca.md#figures plot 6: x m_att, y largest m_pre, points labelled with r_min, design point
 * marked; pareto.csv holds the front. */
static int pareto_plot(const struct salca_perf_out *o, const char *dir)
{
    if (cli_output_dir(dir))
        return 1;
    FILE *f = csv_open(dir, "pareto", "m_att,m_pre,h_pre,h_att,r_min,design");
    if (!f)
        return 1;
    for (size_t i = 0; i < o->n_front; i++)
        fprintf(f, "%lld,%lld,%lld,%lld,%.6f,%d\n", (long long)o->front[i].m_att,
                (long long)o->front[i].m_pre, (long long)o->front[i].h_pre,
                (long long)o->front[i].h_att, salca_rat_d(o->front[i].r_min), i == o->design_idx);
    if (csv_close(f, dir, "pareto"))
        return 1;
    struct plot *p = plot_new("pareto", PLOT_LINE);
    if (!p)
        return cli_fail(ERR_NOMEM, "out of memory");
    plot_title(p, "Pareto front of memory parallelism (labels: min retention r_{min})");
    plot_xlabel(p, "m_att", "K-V pairs/cycle");
    plot_ylabel(p, "largest m_pre", "keys/cycle");
    double x[SALCA_PERF_MAX_FRONT], y[SALCA_PERF_MAX_FRONT];
    for (size_t i = 0; i < o->n_front; i++) {
        x[i] = (double)o->front[i].m_att;
        y[i] = (double)o->front[i].m_pre;
        char lab[160];
        snprintf(lab, sizeof lab, "set label \"r_{min}=%.4f\" at %g,%g offset 1,1",
                 salca_rat_d(o->front[i].r_min), x[i], y[i]);
        plot_extra(p, lab);
    }
    plot_extra(p, "set offsets 0.5, 0.5, 4, 2");
    int rc = plot_series(p, 0, "front", x, y, o->n_front);
    const struct salca_perf_front *d = &o->front[o->design_idx];
    double dx = (double)d->m_att, dy = (double)d->m_pre;
    if (rc == 0)
        rc = plot_series(p, 0, "design point", &dx, &dy, 1);
    if (rc == 0)
        rc = plot_series_marker(p, PLOT_MARK_OPEN);
    if (rc < 0) {
        plot_free(p);
        return cli_fail(rc, "out of memory");
    }
    return plot_finish(p, dir);
}

/* The reference configs of docs/salca.md#pipeline-model, each under in-order and window-128 issue.
 */
static const struct {
    const char *name, *json;
} refs[] = {
    {"salca_final", "\"h_pre\": 11, \"h_att\": 16, \"p_pre\": 16, \"p_att\": 1"},
    {"salca_pareto", "\"h_pre\": 16, \"h_att\": 16, \"p_pre\": 24, \"p_att\": 2"},
    {"asic_s4",
     "\"h_pre\": 16, \"h_att\": 16, \"p_pre\": 16, \"p_att\": 1, \"w_k\": 4, \"s_f\": 1"},
    {"asic_d", "\"variant\": \"dense\""},
};
#define N_REFS 4
static const char *const pols[2] = {"inorder", "window_128"};
static const char *const pol_json[2] = {"\"policy\": \"inorder\", \"depth\": 1",
                                        "\"policy\": \"window\", \"window\": 128"};

static double res_get(struct model_result *r, size_t row, const char *name)
{
    double v = 0;
    if (model_result_get(r, row, name, &v) != 0)
        return 0;
    return v;
}

static const char *const stages[4] = {"p", "q", "f", "a"};

/* The ref.* and compare.* lines of the eight reference results res[0..8). */
static void print_references(FILE *f, struct model_result *const *res)
{
    enum { NI = N_REFS * 2 };
    double dense = res_get(res[N_REFS * 2 - 2], 0, "cycles");
    for (size_t i = 0; i < NI; i++) {
        char pre[64];
        snprintf(pre, sizeof pre, "ref.%s.%s", refs[i / 2].name, pols[i % 2]);
        double busy[4], mx = -1;
        int bn = 0;
        for (int s = 0; s < 4; s++) {
            char nm[16];
            snprintf(nm, sizeof nm, "busy_%s", stages[s]);
            busy[s] = res_get(res[i], 0, nm);
            if (busy[s] > mx) {
                mx = busy[s];
                bn = s;
            }
        }
        double cyc = res_get(res[i], 0, "cycles");
        fprintf(f, "%s.cycles=%.0f\n", pre, cyc);
        fprintf(f, "%s.tokens_per_s=%.4f\n", pre, res_get(res[i], 0, "tokens_per_s"));
        fprintf(f, "%s.alpha_measured=%.4f\n", pre, res_get(res[i], 0, "alpha_measured"));
        fprintf(f, "%s.bottleneck=%s\n", pre, salca_stage_name(bn));
        for (int s = 0; s < 4; s++)
            fprintf(f, "%s.util_%s=%.4f\n", pre, stages[s], cyc > 0 ? busy[s] / cyc : 0);
        fprintf(f, "%s.hbm_bytes=%.0f\n", pre, res_get(res[i], 0, "hbm_bytes"));
        fprintf(f, "%s.speedup_vs_asic_d=%.4f\n", pre, cyc > 0 ? dense / cyc : 0);
        fprintf(f, "%s.energy_j=%.6g\n", pre, res_get(res[i], 0, "model_energy_j"));
        fprintf(f, "%s.energy_gain_vs_asic_d=%.4f\n", pre,
                res_get(res[i], 0, "energy_gain_vs_dense"));
    }
    double fin_in = res_get(res[0], 0, "cycles"), fin_w = res_get(res[1], 0, "cycles");
    double s4_in = res_get(res[4], 0, "cycles");
    /* paper: 2.58x sparse gain, x1.87 reorder gain, ASIC_S_4 1.62x (Fig. 10 text);
     * 2.58·1.87 = 4.8 [derived] */
    fprintf(f, "compare.salca_final_inorder_vs_asic_d=%.4f\npaper.salca_vs_asic_d=2.58\n",
            fin_in > 0 ? dense / fin_in : 0);
    fprintf(f, "compare.salca_final_window_128_vs_asic_d=%.4f\npaper.salca_window_vs_asic_d=4.82\n",
            fin_w > 0 ? dense / fin_w : 0);
    fprintf(f, "compare.reorder_gain=%.4f\npaper.reorder_gain=1.87\n",
            fin_w > 0 ? fin_in / fin_w : 0);
    fprintf(f, "compare.asic_s4_inorder_vs_asic_d=%.4f\npaper.asic_s4_vs_asic_d=1.62\n",
            s4_in > 0 ? dense / s4_in : 0);
}

/* docs/salca.md#figures plots 5 (stage utilization per reference config) and the per-step
 * utilization of salca_final, with their CSVs, into plot_dir. 0 or an exit status. */
static int reference_plots(struct model_result *const *res, const char *plot_dir)
{
    enum { NI = N_REFS * 2 };
    int status, rc = 0;
    status = cli_output_dir(plot_dir);
    /* docs/salca.md#figures plot 5: utilization per stage, a group per reference config. */
    static const char *const cats[4] = {"P", "Q", "F", "A"};
    const char *series[NI - 1];
    char names[NI][48];
    double vals[(NI - 1) * 4];
    size_t ns = 0;
    for (size_t i = 0; i < NI && status == 0; i++) {
        if (i == NI - 1)
            continue; /* asic_d is the same under both policies */
        snprintf(names[ns], sizeof names[ns], "%s/%s", refs[i / 2].name, pols[i % 2]);
        series[ns] = names[ns];
        double cyc = res_get(res[i], 0, "cycles");
        for (int s = 0; s < 4; s++) {
            char nm[16];
            snprintf(nm, sizeof nm, "busy_%s", stages[s]);
            vals[ns * 4 + (size_t)s] = cyc > 0 ? res_get(res[i], 0, nm) / cyc : 0;
        }
        ns++;
    }
    FILE *f = status == 0 ? csv_open(plot_dir, "stage_utilization",
                                     "config,policy,util_p,util_q,util_f,util_a")
                          : NULL;
    if (status == 0 && !f)
        status = 1;
    /* series i is config i: only the last config (asic_d, window) is left out */
    for (size_t i = 0; i < ns && status == 0; i++) {
        fprintf(f, "%s,%s", refs[i / 2].name, pols[i % 2]);
        for (int s = 0; s < 4; s++)
            fprintf(f, ",%.6f", vals[i * 4 + (size_t)s]);
        fprintf(f, "\n");
    }
    if (status == 0)
        status = csv_close(f, plot_dir, "stage_utilization");
    struct plot *p = status == 0 ? plot_new("stage_utilization", PLOT_BARS) : NULL;
    if (status == 0 && !p)
        status = cli_fail(ERR_NOMEM, "out of memory");
    if (status == 0) {
        plot_title(p, "Stage utilization (busy/makespan) per reference config");
        plot_xlabel(p, "stage", "");
        plot_ylabel(p, "utilization", "");
        if ((rc = plot_bars(p, cats, 4, series, ns, vals, false)) < 0) {
            plot_free(p);
            status = cli_fail(rc, "cannot build the utilization plot");
        } else {
            status = plot_finish(p, plot_dir);
        }
    }
    /* Per step: utilization of each stage of salca_final (in-order); the highest line
     * is the step's bottleneck. */
    size_t rows = res[0] ? model_result_rows(res[0]) : 0;
    if (status == 0 && rows > 1) {
        p = plot_new("step_utilization", PLOT_LINE);
        double *x = mem_alloc(rows * sizeof *x), *y = mem_alloc(rows * sizeof *y);
        if (!p || !x || !y) {
            status = cli_fail(ERR_NOMEM, "out of memory");
        } else {
            plot_title(p, "salca_final, in-order issue: stage utilization per decode step");
            plot_xlabel(p, "decode step", "");
            plot_ylabel(p, "utilization", "");
            for (int s = 0; s < 4 && rc >= 0; s++) {
                char nm[16];
                snprintf(nm, sizeof nm, "util_%s", stages[s]);
                size_t n = 0;
                for (size_t row = 1; row < rows; row++) {
                    x[n] = res_get(res[0], row, "step");
                    y[n++] = res_get(res[0], row, nm);
                }
                rc = plot_series(p, 0, cats[s], x, y, n);
            }
            if (rc < 0) {
                status = cli_fail(rc, "cannot build the step plot");
            } else {
                status = plot_finish(p, plot_dir);
                p = NULL;
            }
            FILE *sf = status == 0 ? csv_open(plot_dir, "step_utilization",
                                              "step,util_p,util_q,util_f,util_a")
                                   : NULL;
            if (status == 0 && !sf)
                status = 1;
            for (size_t row = 1; row < rows && status == 0; row++) {
                fprintf(sf, "%.0f", res_get(res[0], row, "step"));
                for (int s = 0; s < 4; s++) {
                    char nm[16];
                    snprintf(nm, sizeof nm, "util_%s", stages[s]);
                    fprintf(sf, ",%.6f", res_get(res[0], row, nm));
                }
                fprintf(sf, "\n");
            }
            if (status == 0)
                status = csv_close(sf, plot_dir, "step_utilization");
        }
        plot_free(p);
        mem_free(x);
        mem_free(y);
    }
    return status;
}

/* The sink of the reference replay: result i kept in res[i] (config i of refs x pols). */
static int keep_rows(void *ctx, const struct hw_config *cfg, size_t config_index,
                     struct model_result **r, const struct energy_table *energy, struct errmsg *e)
{
    (void)cfg;
    (void)energy;
    (void)e;
    struct model_result **res = ctx;
    res[config_index] = *r;
    *r = NULL;
    return 0;
}

static int run_references(FILE *f, const char *path, const char *plot_dir)
{
    const struct model_ops *m = model_registry_find("salca");
    if (!m)
        return cli_fail(ERR_INTERNAL, "model 'salca' is not registered");
    enum { NI = N_REFS * 2 };
    struct hw_config *cfg[NI] = {0};
    struct model_result *res[NI] = {0};
    struct record_source src;
    struct errmsg e = {0};
    int status = 0, rc;
    if ((rc = record_source_trace(&src, path, 1, &e)) < 0)
        return cli_fail(rc, errmsg_text(&e));
    const Acceltrace__TraceHeader *hdr = src.header(src.ctx);
    if (!hdr || strcmp(hdr->workload, "salca") != 0) {
        cli_error("not a salca trace ('%s')", path);
        record_source_close(&src);
        return 3;
    }
    for (size_t i = 0; i < NI && status == 0; i++) {
        char json[512];
        snprintf(json, sizeof json, "{\"model\": \"salca\", %s, %s}", refs[i / 2].json,
                 pol_json[i % 2]);
        if ((rc = hw_config_parse(&cfg[i], json, refs[i / 2].name, m->schema, &e)) < 0)
            status = cli_fail(rc, errmsg_text(&e));
    }
    /* one pass of the engine over the trace feeds the eight configs */
    const struct engine_configs configs = {NULL, cfg, NI};
    const struct engine_sink sink = {res, NULL, keep_rows};
    struct engine_opts eo;
    engine_opts_default(&eo);
    eo.quiet = true;
    if (status == 0 && (rc = engine_run_to(m, &src, &configs, &sink, &eo, NULL, &e)) < 0)
        status = cli_fail(rc, errmsg_text(&e));
    if (status == 0)
        print_references(f, res);
    if (status == 0 && plot_dir)
        status = reference_plots(res, plot_dir);
    for (size_t i = 0; i < NI; i++) {
        hw_config_free(cfg[i]);
        model_result_free(res[i]);
    }
    record_source_close(&src);
    return status;
}

/* The command line of model salca. */
struct salca_args {
    struct salca_perf_in in;
    const char *plot_dir, *trace_path;
    bool json;
};

/* Parses argv into a; 0 to run, -1 when the help was printed (exit 0), else the exit
 * status of a usage error. */
static int parse_args(struct salca_args *a, int argc, char **argv)
{
    salca_perf_in_paper(&a->in);
    struct salca_rat *const rats[] = {
        &a->in.d,         &a->in.s_f,
        &a->in.w_k,       &a->in.factor_bits,
        &a->in.chn,       &a->in.bw,
        &a->in.f_hbm_ghz, &a->in.f_cmp_ghz,
        &a->in.alpha,     &a->in.alpha_inorder,
        &a->in.beta_pre,  &a->in.beta_att,
        &a->in.r_q,
    };
    int64_t *const ints[] = {&a->in.p_pre, &a->in.p_att, &a->in.h_pre, &a->in.h_att};
    struct cli_parser p;
    cli_parser_init(&p, &cmd_model_salca_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return id == CLI_HELP ? -1 : cli_next_exit(id);
        if (id == CLI_POSITIONAL)
            return cli_usage_error(VERB, "unknown option '%s'", p.arg);
        if (id == OPT_PLOT) {
            a->plot_dir = p.arg;
        } else if (id == OPT_TRACE) {
            a->trace_path = p.arg;
        } else if (id >= OPT_RAT && id < OPT_RAT + (int)(sizeof rats / sizeof rats[0])) {
            if (salca_rat_parse(p.arg, rats[id - OPT_RAT]) < 0)
                return cli_usage_error(VERB, "bad value '%s' for '--%s' (a decimal or a/b)", p.arg,
                                       p.opt->name);
        } else if (id >= OPT_INT && id < OPT_INT + (int)(sizeof ints / sizeof ints[0])) {
            int64_t *dst = ints[id - OPT_INT];
            if (!cli_parse_i64(p.arg, dst) || *dst < 1 || *dst > 1000000000)
                return cli_usage_error(VERB, "bad value '%s' for '--%s' (a positive integer)",
                                       p.arg, p.opt->name);
        }
        /* --paper and -q: the inputs are the paper's by default; nothing is printed on
         * stderr but warnings */
    }
    a->json = p.common.json;
    return 0;
}

/* Prints the solver's and the references' lines on f (a memory stream for --json). */
static int run_model(void *ctx, FILE *f)
{
    const struct salca_args *a = ctx;
    struct salca_perf_out *out = mem_alloc(sizeof *out);
    if (!out)
        return cli_fail(ERR_NOMEM, "out of memory");
    struct errmsg e = {0};
    int rc = salca_perf_solve(&a->in, out, &e);
    if (rc < 0) {
        mem_free(out);
        return cli_fail(rc, errmsg_text(&e));
    }
    if (!out->design_meets_r_q)
        cli_warn("no pareto point reaches r_q; the design point is the one with the smallest "
                 "r_min (design.meets_r_q=0)");
    struct buf b;
    buf_init(&b);
    rc = salca_perf_format(out, &b);
    if (rc < 0) {
        mem_free(out);
        buf_release(&b);
        return cli_fail(rc, "out of memory");
    }
    fwrite(b.data, 1, b.len, f);
    buf_release(&b);
    int status = 0;
    if (a->plot_dir)
        status = pareto_plot(out, a->plot_dir);
    mem_free(out);
    if (status == 0 && a->trace_path)
        status = run_references(f, a->trace_path, a->plot_dir);
    return status;
}

/* The --json members besides the lines: the files of --plot. */
static json_t *plot_files(void *ctx)
{
    const struct salca_args *a = ctx;
    return a->plot_dir ? json_pack("{s:o}", "files", cli_json_dir_files(a->plot_dir)) : NULL;
}

int cmd_model_salca(int argc, char **argv);
int cmd_model_salca(int argc, char **argv)
{
    struct salca_args a = {0};
    int status = parse_args(&a, argc, argv);
    if (status)
        return status < 0 ? 0 : status; /* -1: the help */
    if (a.json)
        return cli_kv_run_json(run_model, &a, plot_files);
    status = run_model(&a, stdout);
    if (fflush(stdout) != 0)
        return cli_fail(ERR_IO, "cannot write the output");
    return status;
}
