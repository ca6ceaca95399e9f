/*
 * disc_plots: DiSC replay figures (docs/disc.md#figures; paper Fig. 18): the views of a
 * results folder here, the capture views of --trace files in disc_plots_trace.c.
 */
#include "analysis/disc_plots.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/disc_plots_impl.h"
#include "analysis/plot.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "traces/trace_reader.h"

#define MODES 3
static const char *const mode_names[MODES] = {"baseline", "ctr", "all"};
static const char *const mode_titles[MODES] = {"DiSC_Baseline", "DiSC_CTR", "DiSC_All"};
#define MAX_CFG 64

static int mode_index(const char *s)
{
    for (int m = 0; m < MODES; m++)
        if (!strcmp(s, mode_names[m]))
            return m;
    return -1;
}

static double cell_f(const struct csv_table *t, size_t r, long c)
{
    return c >= 0 ? strtod(t->rows[r][c], NULL) : NAN;
}

int disc_plots_finish(struct plot *p, const char *dir, bool *rendered, struct errmsg *e)
{
    bool r = true;
    int rc = plot_write(p, dir, &r);
    if (rc < 0)
        rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
    if (!r && rendered)
        *rendered = false;
    plot_free(p);
    return rc;
}

int disc_plots_bars_csv(const char *dir, const char *name, const char *const *cats, size_t nc,
                        const char *const *series, size_t ns, const double *v, struct errmsg *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.csv", dir, name);
    struct csv_writer *w;
    int rc = csv_writer_open(&w, path, false, e);
    if (rc < 0)
        return rc;
    rc |= csv_str(w, "category");
    for (size_t s = 0; s < ns; s++)
        rc |= csv_str(w, series[s]);
    rc |= csv_end_row(w);
    for (size_t c = 0; c < nc; c++) {
        rc |= csv_str(w, cats[c]);
        for (size_t s = 0; s < ns; s++)
            rc |= csv_f64(w, v[s * nc + c]);
        rc |= csv_end_row(w);
    }
    int rc2 = csv_writer_close(w);
    return (rc || rc2) ? errmsg_set(e, ERR_IO, "cannot write '%s': %s", path, strerror(errno)) : 0;
}

/* speedup (Fig. 18a) and energy (Fig. 18b) from results.csv. */
static int plot_results(const char *rdir, const char *out, bool *rendered, struct errmsg *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/results.csv", rdir);
    struct csv_table t;
    int rc = csv_table_load(&t, path, true, e);
    if (rc < 0)
        return rc;
    long c_mode = csv_table_col(&t, "mode"), c_cfg = csv_table_col(&t, "config_index");
    long c_sp = csv_table_col(&t, "speedup"), c_a100 = csv_table_col(&t, "gpu_j");
    if (c_mode < 0 || c_cfg < 0 || c_sp < 0 || c_a100 < 0) {
        csv_table_release(&t);
        return errmsg_set(e, ERR_DATA, "'%s' is not a results table of model disc", path);
    }
    /* speedup per config and mode */
    double sp[MODES * MAX_CFG];
    for (size_t i = 0; i < MODES * MAX_CFG; i++)
        sp[i] = NAN;
    char names[MAX_CFG][32];
    const char *cats[MAX_CFG];
    size_t ncfg = 0;
    for (size_t r = 0; r < t.n_rows; r++) {
        long ci = strtol(t.rows[r][c_cfg], NULL, 10);
        int m = mode_index(t.rows[r][c_mode]);
        if (ci < 0 || ci >= MAX_CFG || m < 0)
            continue;
        if ((size_t)ci + 1 > ncfg)
            ncfg = (size_t)ci + 1;
        sp[(size_t)m * MAX_CFG + (size_t)ci] = cell_f(&t, r, c_sp);
    }
    if (ncfg == 0) {
        csv_table_release(&t);
        return errmsg_set(e, ERR_DATA, "no disc rows in '%s'", path);
    }
    double v[MODES * MAX_CFG];
    for (size_t c = 0; c < ncfg; c++) {
        snprintf(names[c], sizeof names[c], "config %zu", c);
        cats[c] = names[c];
        for (int m = 0; m < MODES; m++)
            v[(size_t)m * ncfg + c] = sp[(size_t)m * MAX_CFG + c];
    }
    struct plot *p = plot_new("speedup", PLOT_BARS);
    if (!p) {
        csv_table_release(&t);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    plot_title(p, "Speedup over the A100 roofline (paper Fig. 18a ranges shaded)");
    plot_ylabel(p, "speedup over A100", "x");
    /* paper Fig. 18a: Baseline 2.64-3.44x, CTR 3.41-4.01x, All 3.47-4.74x
     * (docs/disc.md#paper-numbers); each band behind its own mode's bars (clustered: bar m of
     * category c at c + (m - 1) / 4) */
    static const double lo18a[MODES] = {2.64, 3.41, 3.47}, hi18a[MODES] = {3.44, 4.01, 4.74};
    for (size_t c = 0; c < ncfg; c++)
        for (int m = 0; m < MODES; m++) {
            char lab[96];
            snprintf(lab, sizeof lab, "paper Fig. 18a, %s: %.2f-%.2fx", mode_titles[m], lo18a[m],
                     hi18a[m]);
            double x = (double)c + (m - 1) * 0.25;
            plot_band(p, x - 0.125, x + 0.125, lo18a[m], hi18a[m], m, lab);
        }
    plot_bars_top(p, 5.0);
    rc = plot_bars(p, cats, ncfg, mode_titles, MODES, v, false);
    if (rc < 0) {
        rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
        plot_free(p);
        goto out;
    }
    if ((rc = disc_plots_finish(p, out, rendered, e)) < 0)
        goto out;
    if ((rc = disc_plots_bars_csv(out, "speedup", cats, ncfg, mode_titles, MODES, v, e)) < 0)
        goto out;

    /* energy of config 0 by component over the A100's (engine columns when present) */
    static const char *const comps[] = {"mac", "vpu", "sram", "gspm", "hbm", "bus", "static"};
    const size_t ncomp = sizeof comps / sizeof comps[0];
    double ev[7 * MODES];
    bool have_engine = csv_table_col(&t, "energy_mac_j") >= 0;
    for (size_t i = 0; i < 7 * MODES; i++)
        ev[i] = 0;
    for (size_t r = 0; r < t.n_rows; r++) {
        int m = mode_index(t.rows[r][c_mode]);
        if (m < 0 || strtol(t.rows[r][c_cfg], NULL, 10) != 0)
            continue;
        double a100 = cell_f(&t, r, c_a100);
        for (size_t k = 0; k < ncomp; k++) {
            char col[64];
            double x;
            if (have_engine) {
                snprintf(col, sizeof col, "energy_%s_j", comps[k]);
                x = cell_f(&t, r, csv_table_col(&t, col));
            } else if (!strcmp(comps[k], "hbm")) {
                x = cell_f(&t, r, csv_table_col(&t, "model_hbm_j"));
            } else if (!strcmp(comps[k], "static")) {
                x = cell_f(&t, r, csv_table_col(&t, "model_static_j"));
            } else if (!strcmp(comps[k], "mac")) { /* the rest of the model's total */
                x = cell_f(&t, r, csv_table_col(&t, "model_j")) -
                    cell_f(&t, r, csv_table_col(&t, "model_hbm_j")) -
                    cell_f(&t, r, csv_table_col(&t, "model_static_j"));
            } else {
                x = 0;
            }
            ev[k * MODES + (size_t)m] = isfinite(x) ? x / a100 : 0;
        }
    }
    p = plot_new("energy", PLOT_BARS);
    if (!p) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    plot_title(p, have_engine ? "DiSC energy over A100 energy by component (config 0; paper "
                                "Fig. 18b ranges shaded)"
                              : "DiSC energy over A100 energy (config 0; 'mac' = all on-chip; "
                                "paper Fig. 18b ranges shaded)");
    plot_ylabel(p, "energy / A100 energy", "");
    /* paper Fig. 18b: reductions Baseline 46.4-59.3%, CTR 55.3-65.4%, All 61.3-68.1%
     * (docs/disc.md#paper-numbers) as energy ratios 1 - r, each band behind its own bar (histogram
     * bar m at x = m) */
    static const double red_lo[MODES] = {46.4, 55.3, 61.3}, red_hi[MODES] = {59.3, 65.4, 68.1};
    for (int m = 0; m < MODES; m++) {
        char lab[96];
        snprintf(lab, sizeof lab, "paper Fig. 18b, %s: %.3f-%.3f", mode_titles[m],
                 1 - red_hi[m] / 100, 1 - red_lo[m] / 100);
        /* black (grey fill): the 7 component colours are the palette's others */
        plot_band(p, m - 0.45, m + 0.45, 1 - red_hi[m] / 100, 1 - red_lo[m] / 100, 7, lab);
    }
    plot_bars_top(p, 0.6); /* the bands stay in view when every bar is lower */
    rc = plot_bars(p, mode_titles, MODES, comps, ncomp, ev, true);
    if (rc < 0) {
        rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
        plot_free(p);
        goto out;
    }
    if ((rc = disc_plots_finish(p, out, rendered, e)) < 0)
        goto out;
    rc = disc_plots_bars_csv(out, "energy", mode_titles, MODES, comps, ncomp, ev, e);
out:
    csv_table_release(&t);
    return rc;
}

/* cycles_by_op from ops.csv (config 0): categories "mode k", series op classes. */
static int plot_ops(const char *rdir, const char *out, bool *rendered, struct errmsg *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ops.csv", rdir);
    struct csv_table t;
    int rc = csv_table_load(&t, path, true, e);
    if (rc < 0)
        return 0; /* no ops table (ops_table false): nothing to draw */
    static const char *const classes[] = {"linear", "attention", "vector", "softmax",
                                          "sddmm",  "spmm",      "select", "spmm_hidden"};
    const size_t ncls = sizeof classes / sizeof classes[0];
    long c_mode = csv_table_col(&t, "mode"), c_cfg = csv_table_col(&t, "config_index");
    long c_step = csv_table_col(&t, "step"), c_cls = csv_table_col(&t, "class");
    long c_cyc = csv_table_col(&t, "cycles"), c_exp = csv_table_col(&t, "exposed_cycles");
    if (c_mode < 0 || c_cfg < 0 || c_step < 0 || c_cls < 0 || c_cyc < 0 || c_exp < 0) {
        csv_table_release(&t);
        return errmsg_set(e, ERR_DATA, "'%s' is not an ops table of model disc", path);
    }
    long max_step = -1;
    for (size_t r = 0; r < t.n_rows; r++)
        if (strtol(t.rows[r][c_step], NULL, 10) > max_step)
            max_step = strtol(t.rows[r][c_step], NULL, 10);
    size_t steps = max_step >= 0 ? (size_t)max_step + 1 : 0;
    if (steps > 200)
        steps = 200;
    size_t ncat = steps * MODES;
    double *v = mem_calloc(ncat * ncls + 1, sizeof *v);
    char(*names)[32] = mem_calloc(ncat + 1, sizeof *names);
    const char **cats = mem_calloc(ncat + 1, sizeof *cats);
    if (!v || !names || !cats) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t c = 0; c < ncat; c++) {
        snprintf(names[c], sizeof names[c], "%s %zu", mode_names[c / steps], c % steps);
        cats[c] = names[c];
    }
    for (size_t r = 0; r < t.n_rows; r++) {
        int m = mode_index(t.rows[r][c_mode]);
        long k = strtol(t.rows[r][c_step], NULL, 10);
        if (m < 0 || k < 0 || (size_t)k >= steps || strtol(t.rows[r][c_cfg], NULL, 10) != 0)
            continue;
        size_t cat = (size_t)m * steps + (size_t)k;
        double cyc = cell_f(&t, r, c_cyc), ex = cell_f(&t, r, c_exp);
        for (size_t s = 0; s + 1 < ncls; s++)
            if (!strcmp(t.rows[r][c_cls], classes[s]))
                v[s * ncat + cat] += ex;
        if (cyc > ex) /* hidden under the overlapped projection
                         (docs/disc.md#sparse-ops-ctr-traffic-and-overlap) */
            v[(ncls - 1) * ncat + cat] += cyc - ex;
    }
    struct plot *p = plot_new("cycles_by_op", PLOT_BARS);
    if (!p) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    plot_title(p, "Exposed cycles per op class and step (config 0); hatched spmm_hidden: "
                  "SpMM cycles hidden under sa_o");
    plot_ylabel(p, "cycles", "cycles");
    plot_size(p, 1200, 560);
    plot_extra(p, "set xtics rotate by -60");
    plot_extra(p, "set key outside right top");
    rc = ncat ? plot_bars(p, cats, ncat, classes, ncls, v, true) : 0;
    if (rc == 0 && ncat) /* docs/disc.md#figures item 11: hidden SpMM cycles hatched */
        rc = plot_bars_hatch(p, ncls - 1);
    if (rc < 0) {
        rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
        plot_free(p);
        goto out;
    }
    if (ncat == 0) {
        plot_free(p);
        goto out;
    }
    if ((rc = disc_plots_finish(p, out, rendered, e)) < 0)
        goto out;
    rc = disc_plots_bars_csv(out, "cycles_by_op", cats, ncat, classes, ncls, v, e);
out:
    mem_free(v);
    mem_free(names);
    mem_free(cats);
    csv_table_release(&t);
    return rc;
}

int disc_plots_write(const char *results_dir, const char *const *traces, size_t n_traces,
                     struct trace_reader *first, const struct analyzer *extra, size_t n_extra,
                     const char *out_dir, bool *rendered, struct errmsg *e)
{
    if (rendered)
        *rendered = true;
    int rc = 0;
    if (n_traces > DISC_PLOTS_MAX_TRACES)
        rc = errmsg_set(e, ERR_USAGE, "%zu traces, at most %d", n_traces, DISC_PLOTS_MAX_TRACES);
    else if (n_extra > DISC_PLOTS_MAX_EXTRA)
        rc = errmsg_set(e, ERR_USAGE, "%zu analyzers besides the disc views, at most %d", n_extra,
                        DISC_PLOTS_MAX_EXTRA);
    if (rc == 0)
        rc = plot_results(results_dir, out_dir, rendered, e);
    if (rc == 0)
        rc = plot_ops(results_dir, out_dir, rendered, e);
    if (rc == 0 && n_traces) {
        rc = disc_plots_traces(traces, n_traces, first, extra, n_extra, out_dir, rendered, e);
        first = NULL; /* taken over */
    }
    trace_reader_free(first);
    return rc;
}
