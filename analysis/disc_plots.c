/*
 * disc_plots: DiSC replay figures (specs/disc.md section 9; paper Fig. 18).
 */
#include "analysis/disc_plots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int finish_plot(struct plot *p, const char *dir, bool *rendered, struct errmsg *e)
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

/* A small CSV beside each plot: header then rows of category, series..., values. */
static int write_bars_csv(const char *dir, const char *name, const char *const *cats,
                          size_t nc, const char *const *series, size_t ns, const double *v,
                          struct errmsg *e)
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
    return (rc || rc2) ? errmsg_set(e, ERR_IO, "cannot write '%s'", path) : 0;
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
    long c_sp = csv_table_col(&t, "speedup"), c_a100 = csv_table_col(&t, "a100_j");
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
    /* paper Fig. 18a: Baseline 2.64-3.44x, CTR 3.41-4.01x, All 3.47-4.74x (spec 11) */
    plot_extra(p, "set object 1 rect from graph 0, first 2.64 to graph 1, first 3.44 "
                  "fc rgb '#e8e8ff' fs solid 0.5 noborder behind");
    plot_extra(p, "set object 2 rect from graph 0, first 3.41 to graph 1, first 4.01 "
                  "fc rgb '#e8ffe8' fs solid 0.5 noborder behind");
    plot_extra(p, "set object 3 rect from graph 0, first 3.47 to graph 1, first 4.74 "
                  "fc rgb '#ffe8e8' fs solid 0.3 noborder behind");
    plot_bars_top(p, 5.0);
    rc = plot_bars(p, cats, ncfg, mode_titles, MODES, v, false);
    if (rc < 0) {
        rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
        plot_free(p);
        goto out;
    }
    if ((rc = finish_plot(p, out, rendered, e)) < 0)
        goto out;
    if ((rc = write_bars_csv(out, "speedup", cats, ncfg, mode_titles, MODES, v, e)) < 0)
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
    /* paper Fig. 18b: reductions Baseline 46.4-59.3%, CTR 55.3-65.4%, All 61.3-68.1% (spec
     * 11) as energy ratios 1 - r, each band behind its own bar (histogram bar m at x = m) */
    plot_extra(p, "set object 1 rect from first -0.45, first 0.407 to first 0.45, first 0.536 "
                  "fc rgb '#e8e8ff' fs solid 0.5 noborder behind");
    plot_extra(p, "set object 2 rect from first 0.55, first 0.346 to first 1.45, first 0.447 "
                  "fc rgb '#e8ffe8' fs solid 0.5 noborder behind");
    plot_extra(p, "set object 3 rect from first 1.55, first 0.319 to first 2.45, first 0.387 "
                  "fc rgb '#ffe8e8' fs solid 0.5 noborder behind");
    plot_bars_top(p, 0.6); /* the bands stay in view when every bar is lower */
    rc = plot_bars(p, mode_titles, MODES, comps, ncomp, ev, true);
    if (rc < 0) {
        rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
        plot_free(p);
        goto out;
    }
    if ((rc = finish_plot(p, out, rendered, e)) < 0)
        goto out;
    rc = write_bars_csv(out, "energy", mode_titles, MODES, comps, ncomp, ev, e);
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
    char (*names)[32] = mem_calloc(ncat + 1, sizeof *names);
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
        if (cyc > ex) /* hidden under the overlapped projection (spec 7.3) */
            v[(ncls - 1) * ncat + cat] += cyc - ex;
    }
    struct plot *p = plot_new("cycles_by_op", PLOT_BARS);
    if (!p) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    plot_title(p, "Exposed cycles per op class and step (config 0); spmm_hidden overlaps sa_o");
    plot_ylabel(p, "cycles", "cycles");
    plot_size(p, 1200, 560);
    plot_extra(p, "set xtics rotate by -60");
    plot_extra(p, "set key outside right top");
    rc = ncat ? plot_bars(p, cats, ncat, classes, ncls, v, true) : 0;
    if (rc < 0) {
        rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
        plot_free(p);
        goto out;
    }
    if (ncat == 0) {
        plot_free(p);
        goto out;
    }
    if ((rc = finish_plot(p, out, rendered, e)) < 0)
        goto out;
    rc = write_bars_csv(out, "cycles_by_op", cats, ncat, classes, ncls, v, e);
out:
    mem_free(v);
    mem_free(names);
    mem_free(cats);
    csv_table_release(&t);
    return rc;
}

/* Per-step capture statistics gathered from DiscStep records (NaN where absent). */
struct step_views {
    size_t k;
    double *x, *tau, *d50, *d90, *dmax;
};

/* Index of class name in the header's flop_classes, -1 when absent. */
static int flop_class(const Acceltrace__DiscHeader *dh, const char *name)
{
    for (size_t i = 0; i < dh->n_flop_classes; i++)
        if (dh->flop_classes[i] && !strcmp(dh->flop_classes[i], name))
            return (int)i;
    return -1;
}

static double flop_sum(const uint64_t *f, size_t n, const Acceltrace__DiscHeader *dh,
                       const char *const *names)
{
    double s = 0.0;
    for (; *names; names++) {
        int c = flop_class(dh, *names);
        if (c >= 0 && (size_t)c < n)
            s += (double)f[c];
    }
    return s;
}

/* Stacked FLOP bars (spec 9 items 5-6, paper Fig. 17): one bar per run (dense, CTR,
 * CTR+ST) split into parts, in % of the dense total of the parts. */
static int plot_flops(const char *out, const char *name, const char *title,
                      const Acceltrace__DiscHeader *dh, const Acceltrace__DiscSummary *ds,
                      const char *const *parts, const char *const *const *members,
                      size_t n_parts, bool *rendered, struct errmsg *e)
{
    static const char *const cats[3] = {"dense", "CTR", "CTR+ST"};
    const uint64_t *f[3] = {ds->flops_dense, ds->flops_ctr, ds->flops_all};
    const size_t nf[3] = {ds->n_flops_dense, ds->n_flops_ctr, ds->n_flops_all};
    double v[3 * 16], total = 0.0;
    if (n_parts > 16)
        return errmsg_set(e, ERR_USAGE, "too many FLOP parts");
    for (size_t s = 0; s < n_parts; s++)
        total += flop_sum(f[0], nf[0], dh, members[s]);
    if (!(total > 0))
        return 0;
    for (size_t s = 0; s < n_parts; s++)
        for (size_t c = 0; c < 3; c++)
            v[s * 3 + c] = 100.0 * flop_sum(f[c], nf[c], dh, members[s]) / total;
    struct plot *p = plot_new(name, PLOT_BARS);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    char t[256];
    snprintf(t, sizeof t, "%s: %s at %u px, %u steps", title, dh->model ? dh->model : "",
             dh->image_size, dh->steps);
    plot_title(p, t);
    plot_ylabel(p, "FLOPs, % of dense", "%");
    plot_extra(p, "set key outside right top");
    int rc = plot_bars(p, cats, 3, parts, n_parts, v, true);
    if (rc < 0) {
        rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
        plot_free(p);
        return rc;
    }
    if ((rc = finish_plot(p, out, rendered, e)) < 0)
        return rc;
    return write_bars_csv(out, name, cats, 3, parts, n_parts, v, e);
}

/* latent_diff, quality_per_step, flops_self_attention and flops_network (spec 9 items 2, 4,
 * 5, 6) from the capture's own records. */
static int plot_capture_views(const char *out, const Acceltrace__DiscHeader *dh,
                              const struct step_views *sv, const Acceltrace__DiscSummary *ds,
                              bool *rendered, struct errmsg *e)
{
    int rc = 0;
    bool any_diff = false;
    for (size_t i = 0; i < sv->k; i++)
        any_diff |= isfinite(sv->dmax[i]) && sv->dmax[i] > 0;
    if (any_diff) {
        struct plot *p = plot_new("latent_diff", PLOT_LINE);
        if (!p)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        plot_title(p, "CTR input change per step: per-token max |x_k - x_{k-1}| quantiles, tau_k");
        plot_xlabel(p, "step", "");
        plot_ylabel(p, "latent change", "latent units");
        plot_logscale(p, false, true);
        if ((rc = plot_series(p, 0, "d_p50", sv->x, sv->d50, sv->k)) < 0 ||
            (rc = plot_series(p, 0, "d_p90", sv->x, sv->d90, sv->k)) < 0 ||
            (rc = plot_series(p, 0, "d_max", sv->x, sv->dmax, sv->k)) < 0 ||
            (rc = plot_series(p, 0, "tau_k", sv->x, sv->tau, sv->k)) < 0) {
            rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
            plot_free(p);
            return rc;
        }
        if ((rc = finish_plot(p, out, rendered, e)) < 0)
            return rc;
    }
    if (!ds)
        return 0;
    if (ds->n_quality) {
        struct plot *p = plot_new("quality_per_step", PLOT_LINE);
        double *y = mem_calloc(sv->k + 1, sizeof *y);
        char path[4096];
        snprintf(path, sizeof path, "%s/quality.csv", out);
        struct csv_writer *w = NULL;
        if (!p || !y) {
            plot_free(p);
            mem_free(y);
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        }
        if ((rc = csv_writer_open(&w, path, false, e)) < 0) {
            plot_free(p);
            mem_free(y);
            return rc;
        }
        int wr = csv_str(w, "run") | csv_str(w, "cosine") | csv_str(w, "psnr [dB]") |
                 csv_str(w, "rel_err_final") | csv_end_row(w);
        plot_title(p, "Relative L2 error of x_{k+1} against the dense run");
        plot_xlabel(p, "step", "");
        plot_ylabel(p, "rel_err", "");
        plot_logscale(p, false, true);
        plot_extra(p, "set key bottom right");
        bool st_on = dh->st_mode && strcmp(dh->st_mode, "off");
        for (size_t q = 0; q < ds->n_quality && rc >= 0; q++) {
            const Acceltrace__DiscQuality *dq = ds->quality[q];
            bool main_run = dq->run && !strcmp(dq->run, "main");
            const char *label = !main_run ? "CTR-only" : st_on ? "CTR+ST" : "CTR (main run)";
            size_t n = dq->n_rel_err < sv->k ? dq->n_rel_err : sv->k;
            for (size_t i = 0; i < n; i++) /* 0 (identical steps) has no place on a log axis */
                y[i] = dq->rel_err[i] > 0 ? dq->rel_err[i] : NAN;
            char cmd[200];
            snprintf(cmd, sizeof cmd,
                     "set label %zu '%s: cosine %.6f, PSNR %.2f dB' at graph 0.03, graph %.2f",
                     q + 1, label, dq->cosine, dq->psnr, 0.95 - 0.06 * (double)q);
            plot_extra(p, cmd);
            if ((rc = plot_series(p, 0, label, sv->x, y, n)) < 0)
                rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
            wr |= csv_str(w, label) | csv_f64(w, dq->cosine) | csv_f64(w, dq->psnr) |
                  csv_f64(w, n ? dq->rel_err[n - 1] : NAN) | csv_end_row(w);
        }
        mem_free(y);
        int wc = csv_writer_close(w);
        if (rc >= 0 && (wr || wc))
            rc = errmsg_set(e, ERR_IO, "cannot write '%s'", path);
        if (rc < 0) {
            plot_free(p);
            return rc;
        }
        if ((rc = finish_plot(p, out, rendered, e)) < 0)
            return rc;
    }
    /* Fig. 17a: the self-attention classes; Fig. 17b: the network in seven parts. */
    static const char *const sa_parts[] = {"sa_qkv", "sa_qk", "sa_softmax", "sa_pv", "sa_proj"};
    static const char *const m_qkv[] = {"sa_qkv", NULL}, *const m_qk[] = {"sa_qk", NULL};
    static const char *const m_sm[] = {"sa_softmax", NULL}, *const m_pv[] = {"sa_pv", NULL};
    static const char *const m_proj[] = {"sa_proj", NULL};
    static const char *const *const sa_members[] = {m_qkv, m_qk, m_sm, m_pv, m_proj};
    rc = plot_flops(out, "flops_self_attention", "Self-attention FLOPs (Fig. 17a)", dh, ds,
                    sa_parts, sa_members, 5, rendered, e);
    if (rc < 0)
        return rc;
    static const char *const net_parts[] = {"SA linear", "QK^T",  "softmax", "PV",
                                            "cross-attention", "FFN", "other"};
    static const char *const m_lin[] = {"sa_qkv", "sa_proj", NULL};
    static const char *const m_ca[] = {"ca_q",  "ca_kv",  "ca_qk", "ca_softmax",
                                       "ca_pv", "ca_proj", NULL};
    static const char *const m_ffn[] = {"ffn_up", "ffn_act", "ffn_down", NULL};
    static const char *const m_other[] = {"vec", "embed", NULL};
    static const char *const *const net_members[] = {m_lin, m_qk, m_sm,   m_pv,
                                                     m_ca,  m_ffn, m_other};
    return plot_flops(out, "flops_network", "Network FLOPs (Fig. 17b)", dh, ds, net_parts,
                      net_members, 7, rendered, e);
}

/* prune_per_step and st_sparsity from the trace and the capture views (spec 9 items 1-6). */
static int plot_trace(const char *trace, const char *out, bool *rendered, struct errmsg *e)
{
    struct trace_reader *r = NULL;
    char text[512];
    int rc = trace_reader_open(&r, trace, NULL, text, sizeof text);
    if (rc < 0)
        return errmsg_set(e, rc, "%s", text);
    const Acceltrace__TraceHeader *h = trace_reader_header(r);
    const Acceltrace__DiscHeader *dh = h ? h->disc : NULL;
    if (!dh || dh->steps == 0 || dh->steps > 100000 || dh->tokens == 0 || dh->depth == 0 ||
        dh->depth > 1024) {
        trace_reader_free(r);
        return errmsg_set(e, ERR_DATA, "'%s' is not a disc trace", trace);
    }
    const size_t k = dh->steps;
    double *x = mem_calloc(k, sizeof *x), *prune = mem_calloc(k, sizeof *prune);
    double *nnz = mem_calloc(k, sizeof *nnz), *tot = mem_calloc(k, sizeof *tot);
    double *sp = mem_calloc(k, sizeof *sp);
    const size_t nb = dh->depth;
    double *hz = mem_calloc(k * nb, sizeof *hz), *hn = mem_calloc(k * nb, sizeof *hn);
    double *yb = mem_calloc(nb, sizeof *yb);
    bool *gen = mem_calloc(k, sizeof *gen);
    struct step_views sv = {.k = k, .x = x};
    Acceltrace__Record *summary = NULL;
    sv.tau = mem_calloc(k, sizeof *sv.tau), sv.d50 = mem_calloc(k, sizeof *sv.d50);
    sv.d90 = mem_calloc(k, sizeof *sv.d90), sv.dmax = mem_calloc(k, sizeof *sv.dmax);
    if (!x || !prune || !nnz || !tot || !sp || !hz || !hn || !yb || !gen || !sv.tau ||
        !sv.d50 || !sv.d90 || !sv.dmax) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < k; i++)
        x[i] = (double)i, prune[i] = sv.tau[i] = sv.d50[i] = sv.d90[i] = sv.dmax[i] = NAN;
    for (;;) {
        Acceltrace__Record *rec = NULL;
        rc = trace_reader_next(r, &rec, NULL);
        if (rc < 0) {
            rc = errmsg_set(e, rc, "%s", trace_reader_errmsg(r));
            goto out;
        }
        if (rc == 0)
            break;
        if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_STEP && rec->disc_step->k < k) {
            const Acceltrace__DiscStep *st = rec->disc_step;
            prune[st->k] = 100.0 * st->prune_ratio;
            sv.tau[st->k] = st->tau, sv.d50[st->k] = st->d_p50;
            sv.d90[st->k] = st->d_p90, sv.dmax[st->k] = st->d_max;
        }
        if (rec->body_case == ACCELTRACE__RECORD__BODY_SUMMARY && rec->summary &&
            rec->summary->disc) {
            trace_record_free(summary);
            summary = rec; /* kept for the quality and FLOP views */
            continue;
        }
        if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_MASK && rec->disc_mask->step < k) {
            nnz[rec->disc_mask->step] += (double)rec->disc_mask->nnz;
            tot[rec->disc_mask->step] += (double)rec->disc_mask->rows * dh->tokens;
            const Acceltrace__DiscMask *dm = rec->disc_mask;
            if (dm->block < nb && isfinite(dm->sparsity)) { /* mean over heads, NaN skipped */
                hz[(size_t)dm->block * k + dm->step] += 100.0 * dm->sparsity;
                hn[(size_t)dm->block * k + dm->step] += 1;
            }
            gen[dm->step] |= dm->generated;
        }
        trace_record_free(rec);
    }
    bool any_mask = false;
    for (size_t i = 0; i < k; i++) {
        sp[i] = tot[i] > 0 ? 100.0 * (1 - nnz[i] / tot[i]) : NAN; /* spec 6: pooled */
        any_mask |= tot[i] > 0;
    }
    struct plot *p = plot_new("prune_per_step", PLOT_LINE);
    if (!p) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    plot_title(p, "CTR token pruning per step (paper Table I band 25.3-62.6%)");
    plot_xlabel(p, "step", "");
    plot_ylabel(p, "pruned tokens", "%");
    plot_extra(p, "set object 1 rect from graph 0, first 25.3 to graph 1, first 62.6 "
                  "fc rgb '#e8e8ff' fs solid 0.5 noborder behind");
    if ((rc = plot_series(p, 0, "prune ratio", x, prune, k)) < 0) {
        rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
        plot_free(p);
        goto out;
    }
    if ((rc = finish_plot(p, out, rendered, e)) < 0)
        goto out;
    if (any_mask) {
        p = plot_new("st_sparsity", PLOT_LINE);
        if (!p) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto out;
        }
        plot_title(p, "ST mask sparsity per step, pooled (paper Table I band 56.2-66.1%)");
        plot_xlabel(p, "step", "");
        plot_ylabel(p, "sparsity", "%");
        plot_extra(p, "set object 1 rect from graph 0, first 56.2 to graph 1, first 66.1 "
                      "fc rgb '#ffe8e8' fs solid 0.5 noborder behind");
        if ((rc = plot_series(p, 0, "sparsity", x, sp, k)) < 0) {
            rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
            plot_free(p);
            goto out;
        }
        if ((rc = finish_plot(p, out, rendered, e)) < 0)
            goto out;
    }
    if (any_mask) { /* spec 9 item 3: step x block heatmap, generation steps marked */
        for (size_t i = 0; i < k * nb; i++)
            hz[i] = hn[i] > 0 ? hz[i] / hn[i] : NAN;
        for (size_t b = 0; b < nb; b++)
            yb[b] = (double)b;
        p = plot_new("st_sparsity_heatmap", PLOT_HEATMAP);
        if (!p) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto out;
        }
        plot_title(p, "ST mask sparsity by step and block, mean over heads (G = generation step)");
        plot_xlabel(p, "step", "");
        plot_ylabel(p, "block", "");
        plot_zlabel(p, "sparsity", "%");
        for (size_t i = 0; i < k && i < 200; i++)
            if (gen[i]) {
                char cmd[96];
                snprintf(cmd, sizeof cmd, "set label 'G' at %zu, graph 1.02 center", i);
                plot_extra(p, cmd);
            }
        if ((rc = plot_heatmap(p, x, k, yb, nb, hz, NULL)) < 0) {
            rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
            plot_free(p);
            goto out;
        }
        if ((rc = finish_plot(p, out, rendered, e)) < 0)
            goto out;
    }
    rc = plot_capture_views(out, dh, &sv, summary ? summary->summary->disc : NULL, rendered, e);
out:
    trace_record_free(summary);
    mem_free(sv.tau);
    mem_free(sv.d50);
    mem_free(sv.d90);
    mem_free(sv.dmax);
    mem_free(hz);
    mem_free(hn);
    mem_free(yb);
    mem_free(gen);
    mem_free(x);
    mem_free(prune);
    mem_free(nnz);
    mem_free(tot);
    mem_free(sp);
    trace_reader_free(r);
    return rc;
}

int disc_plots_write(const char *results_dir, const char *trace_path, const char *out_dir,
                     bool *rendered, struct errmsg *e)
{
    if (rendered)
        *rendered = true;
    int rc = plot_results(results_dir, out_dir, rendered, e);
    if (rc == 0)
        rc = plot_ops(results_dir, out_dir, rendered, e);
    if (rc == 0 && trace_path)
        rc = plot_trace(trace_path, out_dir, rendered, e);
    return rc;
}
