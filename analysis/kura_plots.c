/*
 * kura_plots: SA-Kura figures of docs/kura.md#figures. See kura_plots.h.
 */
#include "analysis/kura_plots.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/plot.h"
#include "common/grow.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/rng.h"
#include "formats/csv.h"
#include "formats/kura_fixed.h"
#include "formats/kura_png.h"
#include "replay/kura_dma.h"
#include "replay/kura_model.h"
#include "replay/kura_sim.h"
#include "replay/kura_tiles.h"
#include "traces/trace_reader.h"

#define NS 5
static const int SHAPES[NS] = {5, 10, 15, 20, 25};

/* Opens dir/name.csv and writes the header cells. */
static int csv_open(struct csv_writer **w, const char *dir, const char *name,
                    const char *const *cols, int n, struct errmsg *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.csv", dir, name);
    int rc = csv_writer_open(w, path, false, e);
    for (int i = 0; i < n && !rc; i++)
        rc = csv_str(*w, cols[i]);
    if (!rc)
        rc = csv_end_row(*w);
    return rc;
}

/* Writes p into dir and folds its rendering state into *rendered. */
static int finish_plot(struct plot *p, const char *dir, bool *rendered, struct errmsg *e)
{
    bool r = false;
    int rc = plot_write(p, dir, &r);
    if (rc)
        errmsg_set(e, rc, "%s", plot_errmsg(p));
    if (!r)
        *rendered = false;
    if (rc == ERR_EXTERNAL) {
        /* gnuplot failed: data, script and CSV are written; the caller warns (e holds why) */
        *rendered = false;
        rc = 0;
    }
    plot_free(p);
    return rc;
}

/* One row of the E_px tables: N_h, N_w, E_px, N_w*(N_h) when nw_opt is not NULL, and the
 * paper's point (empty when 0). */
static int epx_row(struct csv_writer *w, int n_h, int n_w, double e_px, const double *nw_opt,
                   double paper)
{
    int rc = csv_i64(w, n_h);
    if (!rc)
        rc = csv_i64(w, n_w);
    if (!rc)
        rc = csv_f64(w, e_px);
    if (!rc && nw_opt)
        rc = csv_f64(w, *nw_opt);
    if (!rc)
        rc = paper > 0 ? csv_f64(w, paper) : csv_str(w, "");
    if (!rc)
        rc = csv_end_row(w);
    return rc;
}

/* Fig. 5b: eq. 11 E_px heatmap with the eq. 12 curve, and E_px vs N_w per N_h. */
static int plot_epx(const char *dir, const struct kura_energy *en, bool *rendered, struct errmsg *e)
{
    static const char *const cols[] = {"n_h", "n_w", "e_px_pj", "nw_opt", "paper_e_px_pj"};
    /* paper section 4.2 compute-only points */
    static const double paper[NS][NS] = {
        {0}, {0, 258.5, 0, 0, 0}, {0, 0, 195.4, 0, 0}, {0, 0, 178.1, 0, 0}, {0, 0, 0, 166.0, 0}};
    struct csv_writer *w = NULL;
    double x[NS], z[NS * NS], cx[NS], cy[NS];
    int rc = csv_open(&w, dir, "kura_epx_heatmap", cols, 5, e);
    for (int i = 0; i < NS; i++) {
        x[i] = SHAPES[i];
        cy[i] = SHAPES[i];
        cx[i] = kura_nw_opt(&en->power_fit4, SHAPES[i]); /* eq. 12 */
        for (int j = 0; j < NS; j++) {
            z[i * NS + j] = kura_epx_pj(&en->power_fit4, SHAPES[i], SHAPES[j], en->f_hz);
            if (!rc)
                rc = epx_row(w, SHAPES[i], SHAPES[j], z[i * NS + j], &cx[i], paper[i][j]);
        }
    }
    int rc2 = csv_writer_close(w);
    if (rc || rc2)
        return rc ? rc : errmsg_set(e, rc2, "cannot write kura_epx_heatmap.csv in '%s'", dir);
    struct plot *p = plot_new("kura_epx_heatmap", PLOT_HEATMAP);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    plot_title(p, "SA-Kura compute-only E_px (eq. 11, fit4) and N_w*(N_h) (eq. 12)");
    plot_xlabel(p, "N_w", "PEs");
    plot_ylabel(p, "N_h", "PEs");
    plot_zlabel(p, "E_px", "pJ/px");
    rc = plot_heatmap(p, x, NS, x, NS, z, "%.1f");
    if (!rc)
        rc = plot_series(p, 0, "N_w*(N_h)", cx, cy, NS);
    if (rc) {
        plot_free(p);
        return errmsg_set(e, rc, "cannot build kura_epx_heatmap");
    }
    if ((rc = finish_plot(p, dir, rendered, e)))
        return rc;
    /* second panel: E_px vs N_w for each N_h with the paper's four points */
    p = plot_new("kura_epx_lines", PLOT_LINE);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    plot_title(p, "SA-Kura E_px vs N_w (eq. 11, fit4) with the paper's compute-only points");
    plot_xlabel(p, "N_w", "PEs");
    plot_ylabel(p, "E_px", "pJ/px");
    for (int i = 0; i < NS && !rc; i++) {
        char name[32];
        snprintf(name, sizeof name, "N_h = %d", SHAPES[i]);
        rc = plot_series(p, 0, name, x, &z[i * NS], NS);
    }
    double px[4] = {10, 15, 15, 20}, py[4] = {258.5, 195.4, 178.1, 166.0};
    if (!rc)
        rc = plot_series(p, 0, "paper (H10W10, H15W15, H20W15, H25W20)", px, py, 4);
    if (rc) {
        plot_free(p);
        return errmsg_set(e, rc, "cannot build kura_epx_lines");
    }
    if ((rc = finish_plot(p, dir, rendered, e)))
        return rc;
    /* its CSV: the lines and the paper's points */
    static const char *const cl[] = {"n_h", "n_w", "e_px_pj", "paper_e_px_pj"};
    rc = csv_open(&w, dir, "kura_epx_lines", cl, 4, e);
    for (int i = 0; i < NS && !rc; i++)
        for (int j = 0; j < NS && !rc; j++)
            rc = epx_row(w, SHAPES[i], SHAPES[j], z[i * NS + j], NULL, paper[i][j]);
    rc2 = csv_writer_close(w);
    if (rc || rc2)
        return rc ? rc : errmsg_set(e, rc2, "cannot write kura_epx_lines.csv in '%s'", dir);
    return 0;
}

/* Fig. 6: area vs E_px, compute-only (eq. 11) and system level (8.4), budget lines. */
static int plot_area(const char *dir, const struct kura_energy *en, int h, int w, bool *rendered,
                     struct errmsg *e)
{
    static const char *const cols[] = {
        "shape", "n_h", "n_w", "area_mm2", "e_px_pj", "sys_e_px_pj", "best_for_budget_mm2"};
    static const double budgets[4] = {3, 4, 5, 6};
    struct kura_budget_result best[4];
    for (int b = 0; b < 4; b++)
        kura_budget(&en->power_fit4, &en->area_table1, en->f_hz, budgets[b] * 1e6, SHAPES, NS,
                    SHAPES, NS, &best[b]);
    struct csv_writer *wr = NULL;
    double ax[NS * NS], ec[NS * NS], es[NS * NS];
    int rc = csv_open(&wr, dir, "kura_area_epx", cols, 7, e);
    for (int i = 0; i < NS; i++)
        for (int j = 0; j < NS; j++) {
            int k = i * NS + j;
            struct kura_sys sy;
            kura_sys_eval(en, h, w, SHAPES[i], SHAPES[j], &sy);
            ax[k] = sy.area_um2 / 1e6;
            ec[k] = kura_epx_pj(&en->power_fit4, SHAPES[i], SHAPES[j], en->f_hz);
            es[k] = 1e3 * sy.e_px_nj;
            char shape[32], bl[64] = "";
            snprintf(shape, sizeof shape, "H%dW%d", SHAPES[i], SHAPES[j]);
            for (int b = 0; b < 4; b++)
                if (best[b].found && best[b].n_h == SHAPES[i] && best[b].n_w == SHAPES[j])
                    snprintf(bl + strlen(bl), sizeof bl - strlen(bl), "%s%g", *bl ? " " : "",
                             budgets[b]);
            if (rc)
                continue;
            rc = csv_str(wr, shape);
            if (!rc)
                rc = csv_i64(wr, SHAPES[i]);
            if (!rc)
                rc = csv_i64(wr, SHAPES[j]);
            if (!rc)
                rc = csv_f64(wr, ax[k]);
            if (!rc)
                rc = csv_f64(wr, ec[k]);
            if (!rc)
                rc = csv_f64(wr, es[k]);
            if (!rc)
                rc = csv_str(wr, bl);
            if (!rc)
                rc = csv_end_row(wr);
        }
    int rc2 = csv_writer_close(wr);
    if (rc || rc2)
        return rc ? rc : errmsg_set(e, rc2, "cannot write kura_area_epx.csv in '%s'", dir);
    struct plot *p = plot_new("kura_area_epx", PLOT_SCATTER);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    plot_title(p, "SA-Kura area vs E_px: compute-only (open) and system level (filled)");
    plot_xlabel(p, "area incl. SoC shell", "mm^{2}");
    plot_ylabel(p, "E_px", "pJ/px");
    plot_logscale(p, false, true);
    char line[256];
    for (int b = 0; b < 4; b++) {
        snprintf(line, sizeof line,
                 "set arrow from %g, graph 0 to %g, graph 1 nohead dashtype 2 lc rgb 'gray40'",
                 budgets[b], budgets[b]);
        plot_extra(p, line);
        if (best[b].found) {
            snprintf(line, sizeof line,
                     "set label 'H%dW%d (%g mm^{2})' at %g, %g offset 0.5, 1 font ',9'",
                     best[b].n_h, best[b].n_w, budgets[b], best[b].area_um2 / 1e6, best[b].e_px_pj);
            plot_extra(p, line);
        }
    }
    /* docs/kura.md#figures: compute-only as open markers, system level as filled ones */
    rc = plot_series(p, 0, "compute-only (eq. 11, fit4)", ax, ec, NS * NS);
    if (!rc)
        rc = plot_series_marker(p, PLOT_MARK_OPEN);
    if (!rc)
        rc = plot_series(p, 0, "system level (8.4, table1)", ax, es, NS * NS);
    if (!rc)
        rc = plot_series_marker(p, PLOT_MARK_FILLED);
    if (rc) {
        plot_free(p);
        return errmsg_set(e, rc, "cannot build kura_area_epx");
    }
    return finish_plot(p, dir, rendered, e);
}

/* Cycles per step vs shape: analytic lines, cycle-accurate markers; c_px,eff heatmap. */
static int plot_cycles(const char *dir, const struct kura_energy *en, int h, int w, bool *rendered,
                       struct errmsg *e)
{
    static const char *const cols[] = {"n_h", "n_w", "cycles_step_analytic", "cycles_step_sim",
                                       "c_px_eff"};
    struct csv_writer *wr = NULL;
    double x[NS], ya[NS * NS], ys[NS * NS];
    uint32_t *sc = NULL;
    int16_t *q = NULL;
    int rc = 0;
    size_t n = (size_t)h * w;
    q = mem_alloc(n * sizeof *q);
    sc = mem_alloc(n * sizeof *sc);
    if (!q || !sc) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    /* cycles do not depend on the data; a seeded uniform map drives the simulation */
    struct rng r;
    rng_stream(&r, 1, "kura-plots-cycles", 0, 0);
    for (size_t i = 0; i < n; i++)
        q[i] = (int16_t)(uint16_t)rng_below(&r, 65536);
    kura_sc_map(q, (size_t)h, (size_t)w, sc);
    if ((rc = csv_open(&wr, dir, "kura_cycles_shape", cols, 5, e)))
        goto done;
    for (int i = 0; i < NS; i++) {
        x[i] = SHAPES[i];
        for (int j = 0; j < NS; j++) {
            struct kura_analytic an;
            struct kura_sim *sim = NULL;
            struct kura_sim_result res;
            kura_analytic_eval(h, w, SHAPES[i], SHAPES[j], en->f_hz, &an);
            if ((rc = kura_sim_new(&sim, SHAPES[i], SHAPES[j]))) {
                errmsg_set(e, rc, "out of memory");
                goto done;
            }
            rc = kura_sim_run(sim, sc, h, w, NULL, NULL, NULL, &res, e);
            kura_sim_free(sim);
            if (rc)
                goto done;
            ya[i * NS + j] = (double)an.cycles_step;
            ys[i * NS + j] = (double)res.n_cyc;
            rc = csv_i64(wr, SHAPES[i]);
            if (!rc)
                rc = csv_i64(wr, SHAPES[j]);
            if (!rc)
                rc = csv_i64(wr, an.cycles_step);
            if (!rc)
                rc = csv_i64(wr, res.n_cyc);
            if (!rc)
                rc = csv_f64(wr, an.c_px_eff);
            if (!rc)
                rc = csv_end_row(wr);
            if (rc)
                goto done;
        }
    }
    rc = csv_writer_close(wr);
    wr = NULL;
    if (rc) {
        errmsg_set(e, rc, "cannot write kura_cycles_shape.csv in '%s'", dir);
        goto done;
    }
    struct plot *p = plot_new("kura_cycles_shape", PLOT_LINE);
    if (!p) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    char title[160];
    snprintf(title, sizeof title,
             "SA-Kura cycles per step at %dx%d: eq. 9 + exposed prefill (lines), "
             "cycle-accurate (points)",
             h, w);
    plot_title(p, title);
    plot_xlabel(p, "N_w", "PEs");
    plot_ylabel(p, "cycles per step", "cycles");
    plot_logscale(p, false, true);
    plot_size(p, 800, 640); /* room for the 10-entry legend below the axes */
    for (int i = 0; i < NS && !rc; i++) {
        char name[48];
        snprintf(name, sizeof name, "N_h = %d analytic", SHAPES[i]);
        rc = plot_series(p, 0, name, x, &ya[i * NS], NS);
        snprintf(name, sizeof name, "N_h = %d simulated", SHAPES[i]);
        if (!rc)
            rc = plot_series(p, 0, name, x, &ys[i * NS], NS);
        if (!rc) /* docs/kura.md#figures: markers only, visible on the analytic line they match */
            rc = plot_series_marker(p, PLOT_MARK_OPEN);
    }
    if (rc) {
        plot_free(p);
        errmsg_set(e, rc, "cannot build kura_cycles_shape");
        goto done;
    }
    if ((rc = finish_plot(p, dir, rendered, e)))
        goto done;
    /* c_px,eff over 1..32 x 1..32 (docs/kura.md#figures) */
    {
        static const char *const c2[] = {"n_h", "n_w", "c_px_eff", "utilization"};
        double gx[32], gz[32 * 32];
        if ((rc = csv_open(&wr, dir, "kura_cpx_heatmap", c2, 4, e)))
            goto done;
        for (int i = 0; i < 32; i++) {
            gx[i] = i + 1;
            for (int j = 0; j < 32; j++) {
                struct kura_analytic an;
                kura_analytic_eval(h, w, i + 1, j + 1, en->f_hz, &an);
                gz[i * 32 + j] = an.c_px_eff;
                if (!rc)
                    rc = csv_i64(wr, i + 1);
                if (!rc)
                    rc = csv_i64(wr, j + 1);
                if (!rc)
                    rc = csv_f64(wr, an.c_px_eff);
                if (!rc)
                    rc = csv_f64(wr, an.utilization);
                if (!rc)
                    rc = csv_end_row(wr);
            }
        }
        int rc2 = csv_writer_close(wr);
        wr = NULL;
        if (rc || rc2) {
            rc = errmsg_set(e, rc ? rc : rc2, "cannot write kura_cpx_heatmap.csv in '%s'", dir);
            goto done;
        }
        p = plot_new("kura_cpx_heatmap", PLOT_HEATMAP);
        if (!p) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
        snprintf(title, sizeof title, "SA-Kura effective cycles per pixel at %dx%d", h, w);
        plot_title(p, title);
        plot_xlabel(p, "N_w", "PEs");
        plot_ylabel(p, "N_h", "PEs");
        plot_zlabel(p, "c_px,eff", "cycles/px");
        plot_logscale(p, false, false);
        if ((rc = plot_heatmap(p, gx, 32, gx, 32, gz, NULL))) {
            plot_free(p);
            errmsg_set(e, rc, "cannot build kura_cpx_heatmap");
            goto done;
        }
        rc = finish_plot(p, dir, rendered, e);
    }
done:
    if (wr)
        csv_writer_close(wr);
    mem_free(q);
    mem_free(sc);
    return rc;
}

int kura_plots_design(const char *dir, const struct kura_energy *en, int h, int w, bool *rendered,
                      struct errmsg *e)
{
    int rc;
    *rendered = true;
    if (h < 1 || w < 1 || h > KURA_MAX_SIDE || w > KURA_MAX_SIDE)
        return errmsg_set(e, ERR_USAGE, "bad image size %dx%d", h, w);
    if ((rc = io_mkdir_p(dir, 0755, e)) || (rc = plot_epx(dir, en, rendered, e)) ||
        (rc = plot_area(dir, en, h, w, rendered, e)) ||
        (rc = plot_cycles(dir, en, h, w, rendered, e)))
        return rc;
    return 0;
}

/* theta_q of a Q1.15 map into a double map. */
static void q_to_theta(const int16_t *q, size_t n, double *th)
{
    for (size_t i = 0; i < n; i++)
        th[i] = kura_q_theta(q[i]);
}

struct trace_acc {
    /* per REVERSE step */
    int *step;
    double *err_max, *err_mean, *bound;
    double *alpha; /* (n_steps, n_shapes) */
    size_t n, cap;
};

static int acc_grow(struct trace_acc *a, int n_shapes)
{
    /* parallel arrays of a->cap rows: each grows from the same old capacity to the same new
     * one; a->cap moves last, when all have grown */
    size_t need = a->n + 1, c1 = a->cap, c2 = a->cap, c3 = a->cap, c4 = a->cap;
    size_t row = (size_t)(n_shapes ? n_shapes : 1) * sizeof *a->alpha;
    int rc = grow((void **)&a->step, &c1, need, sizeof *a->step);
    if (!rc)
        rc = grow((void **)&a->err_max, &c2, need, sizeof *a->err_max);
    if (!rc)
        rc = grow((void **)&a->err_mean, &c3, need, sizeof *a->err_mean);
    if (!rc)
        rc = grow((void **)&a->bound, &c4, need, sizeof *a->bound);
    if (!rc)
        rc = grow((void **)&a->alpha, &a->cap, need, row);
    return rc ? ERR_NOMEM : 0;
}

static void acc_free(struct trace_acc *a)
{
    mem_free(a->step);
    mem_free(a->err_max);
    mem_free(a->err_mean);
    mem_free(a->bound);
    mem_free(a->alpha);
}

static int write_trace_plots(const char *dir, const struct trace_acc *a, const int *hs,
                             const int *ws, int n_shapes, bool *rendered, struct errmsg *e)
{
    static const char *const c1[] = {"step", "err_max_rad", "err_mean_rad", "bound_x_rad"};
    struct csv_writer *wr = NULL;
    double *x = mem_alloc((a->n ? a->n : 1) * sizeof *x);
    double *col = mem_alloc((a->n ? a->n : 1) * sizeof *col);
    int rc = (!x || !col) ? errmsg_set(e, ERR_NOMEM, "out of memory") : 0;
    if (!rc)
        rc = csv_open(&wr, dir, "kura_drift_error", c1, 4, e);
    for (size_t i = 0; i < a->n && !rc; i++) {
        x[i] = a->step[i];
        rc = csv_i64(wr, a->step[i]);
        if (!rc)
            rc = csv_f64(wr, a->err_max[i]);
        if (!rc)
            rc = csv_f64(wr, a->err_mean[i]);
        if (!rc)
            rc = csv_f64(wr, a->bound[i]);
        if (!rc)
            rc = csv_end_row(wr);
    }
    if (wr) {
        int rc2 = csv_writer_close(wr);
        wr = NULL;
        if (!rc && rc2)
            rc = errmsg_set(e, rc2, "cannot write kura_drift_error.csv in '%s'", dir);
    }
    struct plot *p = NULL;
    if (!rc && a->n) {
        p = plot_new("kura_drift_error", PLOT_LINE);
        if (!p)
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    if (p) {
        plot_title(
            p,
            "Fixed-point vs float64 drift error per reverse step (docs/kura.md#fixed-point-drift)");
        plot_xlabel(p, "reverse step i", "");
        plot_ylabel(p, "|d pi/2^31 - u_f64(theta_q)|", "rad");
        plot_logscale(p, false, true);
        /* steps with no recorded error (unchecked) are left out of the log plot */
        size_t m = 0;
        for (size_t i = 0; i < a->n; i++)
            if (a->err_max[i] > 0)
                x[m] = a->step[i], col[m++] = a->err_max[i];
        rc = plot_series(p, 0, "max over pixels", x, col, m);
        m = 0;
        for (size_t i = 0; i < a->n && !rc; i++)
            if (a->err_mean[i] > 0)
                x[m] = a->step[i], col[m++] = a->err_mean[i];
        if (!rc)
            rc = plot_series(p, 0, "mean over pixels", x, col, m);
        for (size_t i = 0; i < a->n; i++)
            x[i] = a->step[i];
        if (!rc)
            rc = plot_series(p, 0, "bound X_i", x, a->bound, a->n);
        if (rc) {
            plot_free(p);
            rc = errmsg_set(e, rc, "cannot build kura_drift_error");
        } else {
            rc = finish_plot(p, dir, rendered, e);
        }
    }
    if (!rc && n_shapes > 0) {
        static const char *const c2[] = {"step", "shape", "alpha"};
        rc = csv_open(&wr, dir, "kura_activity", c2, 3, e);
        for (size_t i = 0; i < a->n && !rc; i++)
            for (int s = 0; s < n_shapes && !rc; s++) {
                char shape[32];
                snprintf(shape, sizeof shape, "H%dW%d", hs[s], ws[s]);
                rc = csv_i64(wr, a->step[i]);
                if (!rc)
                    rc = csv_str(wr, shape);
                if (!rc)
                    rc = csv_f64(wr, a->alpha[i * n_shapes + s]);
                if (!rc)
                    rc = csv_end_row(wr);
            }
        if (wr) {
            int rc2 = csv_writer_close(wr);
            if (!rc && rc2)
                rc = errmsg_set(e, rc2, "cannot write kura_activity.csv in '%s'", dir);
        }
        if (!rc && a->n) {
            p = plot_new("kura_activity", PLOT_LINE);
            if (!p)
                rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            else {
                plot_title(
                    p,
                    "Operand toggle rate alpha per reverse step (docs/kura.md#switching-activity)");
                plot_xlabel(p, "reverse step i", "");
                plot_ylabel(p, "alpha = toggles / bits written", "");
                for (int s = 0; s < n_shapes && !rc; s++) {
                    char shape[32];
                    snprintf(shape, sizeof shape, "H%dW%d", hs[s], ws[s]);
                    for (size_t i = 0; i < a->n; i++)
                        col[i] = a->alpha[i * n_shapes + s];
                    rc = plot_series(p, 0, shape, x, col, a->n);
                }
                if (rc) {
                    plot_free(p);
                    rc = errmsg_set(e, rc, "cannot build kura_activity");
                } else {
                    rc = finish_plot(p, dir, rendered, e);
                }
            }
        }
    }
    mem_free(x);
    mem_free(col);
    return rc;
}

/* The state of the trace pass of kura_plots_trace. */
struct kura_plots_pass {
    const char *dir;
    bool *rendered;
    const int *hs, *ws;
    int n_shapes, every_k;
    int hh, hw;             /* map size the header declares (0: unknown) */
    struct kura_sim **sims; /* (n_shapes) */
    struct trace_acc acc;
    int16_t *q, *q0; /* current map; the DATA map */
    uint32_t *sc;
    double *th, *th0;
    int h, w, n_rev;
};

/* A REVERSE step: every every_k-th phase map, the drift error and each shape's activity. */
static int kp_reverse(struct kura_plots_pass *p, const Acceltrace__KuraStep *ks,
                      const struct kura_step_info *info, struct errmsg *e)
{
    size_t n = (size_t)p->h * p->w;
    int rc;
    char png[4200];
    if (p->n_rev++ % p->every_k == 0) {
        q_to_theta(p->q, n, p->th);
        snprintf(png, sizeof png, "%s/kura_phase_step%d.png", p->dir, info->step);
        if ((rc = kura_png_phase(png, p->th, (size_t)p->h, (size_t)p->w, e)))
            return rc;
    }
    if ((rc = acc_grow(&p->acc, p->n_shapes)))
        return errmsg_set(e, rc, "out of memory");
    size_t i = p->acc.n++;
    p->acc.step[i] = info->step;
    p->acc.err_max[i] = ks->drift_err ? ks->drift_err->max : 0;
    p->acc.err_mean[i] = ks->drift_err ? ks->drift_err->mean : 0;
    /* docs/kura.md#fixed-point-drift X_i */
    p->acc.bound[i] = kura_drift_bound(info->k, info->kref, info->psi_ref);
    kura_sc_map(p->q, (size_t)p->h, (size_t)p->w, p->sc);
    for (int s = 0; s < p->n_shapes; s++) {
        struct kura_sim_opts o = {.activity = true};
        struct kura_sim_result res;
        if ((rc = kura_sim_run(p->sims[s], p->sc, p->h, p->w, NULL, NULL, &o, &res, e)))
            return rc;
        p->acc.alpha[i * p->n_shapes + s] = (double)res.toggles / (double)res.bits_written;
    }
    return 0;
}

/*
 * A map as a figure: a heatmap with axes (column, row of the oscillator grid) and a colour
 * bar, written over the raw PNG of the same name when gnuplot renders it (the raw one stays
 * where it cannot). cyclic: a phase in rad on the hue wheel [-pi, pi]; else |error| in rad
 * over [0, top].
 */
static int kp_map_figure(const char *dir, const char *name, const char *title, const double *v,
                         int h, int w, bool cyclic, double top, struct errmsg *e)
{
    struct plot *p = plot_new(name, PLOT_HEATMAP);
    double *xs = mem_alloc((size_t)w * sizeof *xs), *ys = mem_alloc((size_t)h * sizeof *ys);
    int rc = 0;
    if (!p || !xs || !ys) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < w; i++)
        xs[i] = i;
    for (int i = 0; i < h; i++)
        ys[i] = i;
    plot_title(p, title);
    plot_xlabel(p, "column j", "oscillator");
    plot_ylabel(p, "row i", "oscillator");
    plot_zlabel(p, cyclic ? "phase θ" : "|θ_{final} - θ_{0}|", "rad");
    plot_palette(p, cyclic ? PLOT_PAL_CYCLIC : PLOT_PAL_SEQUENTIAL);
    char line[96];
    snprintf(line, sizeof line, "set cbrange [%s:%.6g]", cyclic ? "-pi" : "0", cyclic ? M_PI : top);
    plot_extra(p, line);
    plot_extra(p, "set size ratio -1");
    plot_heatmap_image_rows(p);
    if ((rc = plot_heatmap(p, xs, (size_t)w, ys, (size_t)h, v, NULL)) < 0) {
        rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
        goto out;
    }
    bool rendered = false;
    rc = finish_plot(p, dir, &rendered, e);
    p = NULL;
out:
    plot_free(p);
    mem_free(xs);
    mem_free(ys);
    return rc;
}

/* The DATA and FINAL maps (and their difference) as PNGs. */
static int kp_data_final(struct kura_plots_pass *p, Acceltrace__KuraRole role, struct errmsg *e)
{
    size_t n = (size_t)p->h * p->w;
    int rc = 0;
    char png[4200];
    if (role == ACCELTRACE__KURA_ROLE__KURA_ROLE_DATA) {
        q_to_theta(p->q, n, p->th0);
        mem_free(p->q0);
        p->q0 = p->q;
        p->q = NULL;
        snprintf(png, sizeof png, "%s/kura_phase_data.png", p->dir);
        if ((rc = kura_png_phase(png, p->th0, (size_t)p->h, (size_t)p->w, e)))
            return rc;
        return kp_map_figure(p->dir, "kura_phase_data", "Phase map of the DATA record", p->th0,
                             p->h, p->w, true, 0, e);
    }
    q_to_theta(p->q, n, p->th);
    snprintf(png, sizeof png, "%s/kura_phase_final.png", p->dir);
    if ((rc = kura_png_phase(png, p->th, (size_t)p->h, (size_t)p->w, e)) ||
        (rc = kp_map_figure(p->dir, "kura_phase_final", "Phase map after the last reverse step",
                            p->th, p->h, p->w, true, 0, e)))
        return rc;
    if (p->q0) {
        /* |wrap(theta_final - theta_0)|: the Q1.15 difference wraps for free */
        for (size_t i = 0; i < n; i++)
            p->th[i] =
                fabs(kura_q_theta((int16_t)(uint16_t)((uint16_t)p->q[i] - (uint16_t)p->q0[i])));
        snprintf(png, sizeof png, "%s/kura_phase_error.png", p->dir);
        rc = kura_png_grey(png, p->th, (size_t)p->h, (size_t)p->w, 0.0, 0.2, e);
        if (!rc)
            rc = kp_map_figure(p->dir, "kura_phase_error",
                               "Phase error of the final map against DATA (colour bar clamps at "
                               "0.2 rad)",
                               p->th, p->h, p->w, false, 0.2, e);
    }
    return rc;
}

static int kp_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    struct kura_plots_pass *p = self;
    const Acceltrace__TraceHeader *hdr = trace_reader_header(pos->r);
    if (!hdr || !hdr->workload || strcmp(hdr->workload, "kura") || !hdr->kura)
        return errmsg_set(e, ERR_DATA, "not a kura trace ('%s')", pos->path);
    p->hh = hdr->kura->h <= KURA_MAX_SIDE ? (int)hdr->kura->h : 0;
    p->hw = hdr->kura->w <= KURA_MAX_SIDE ? (int)hdr->kura->w : 0;
    p->sims = mem_calloc((size_t)(p->n_shapes ? p->n_shapes : 1), sizeof *p->sims);
    if (!p->sims)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (int s = 0; s < p->n_shapes; s++) {
        int rc = kura_sim_new(&p->sims[s], p->hs[s], p->ws[s]);
        if (rc)
            return errmsg_set(e, rc, "bad shape H%dW%d", p->hs[s], p->ws[s]);
    }
    return 0;
}

static int kp_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                     struct errmsg *e)
{
    struct kura_plots_pass *p = self;
    if ((*rec)->body_case != ACCELTRACE__RECORD__BODY_KURA_STEP)
        return 0;
    const Acceltrace__KuraStep *ks = (*rec)->kura_step;
    struct kura_step_info info;
    int rc;
    mem_free(p->q);
    p->q = NULL;
    if ((rc = kura_step_decode(ks, p->hh, p->hw, &info, &p->q, e)))
        return rc;
    if (p->h && (info.h != p->h || info.w != p->w))
        return errmsg_set(e, ERR_DATA, "kura step %d: map size changes ('%s')", info.step,
                          pos->path);
    if (!p->h) {
        p->h = info.h;
        p->w = info.w;
        size_t n = (size_t)p->h * p->w;
        p->sc = mem_alloc(n * sizeof *p->sc);
        p->th = mem_alloc(n * sizeof *p->th);
        p->th0 = mem_alloc(n * sizeof *p->th0);
        if (!p->sc || !p->th || !p->th0)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    if (info.role == ACCELTRACE__KURA_ROLE__KURA_ROLE_DATA ||
        info.role == ACCELTRACE__KURA_ROLE__KURA_ROLE_FINAL)
        return kp_data_final(p, info.role, e);
    if (info.role == ACCELTRACE__KURA_ROLE__KURA_ROLE_REVERSE)
        return kp_reverse(p, ks, &info, e);
    return 0;
}

static void kp_release(struct kura_plots_pass *p)
{
    if (p->sims)
        for (int s = 0; s < p->n_shapes; s++)
            kura_sim_free(p->sims[s]);
    mem_free(p->sims);
    acc_free(&p->acc);
    mem_free(p->q);
    mem_free(p->q0);
    mem_free(p->sc);
    mem_free(p->th);
    mem_free(p->th0);
}

/* End of the passes: the drift error and activity figures. */
static int kp_finish(void *self, struct errmsg *e)
{
    struct kura_plots_pass *p = self;
    return write_trace_plots(p->dir, &p->acc, p->hs, p->ws, p->n_shapes, p->rendered, e);
}

static const struct analyzer_ops kp_ops = {
    .name = "kura_plots",
    .begin = kp_begin,
    .record = kp_record,
    .finish = kp_finish,
};

int kura_plots_pass_new(struct kura_plots_pass **out, const char *dir, const int *hs, const int *ws,
                        int n_shapes, int every_k, bool *rendered, struct errmsg *e)
{
    *out = NULL;
    *rendered = true;
    if (every_k < 1 || n_shapes < 0 || n_shapes > 64)
        return errmsg_set(e, ERR_USAGE, "bad plot options");
    int rc = io_mkdir_p(dir, 0755, e);
    if (rc)
        return rc;
    struct kura_plots_pass *p = mem_calloc(1, sizeof *p);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    *p = (struct kura_plots_pass){.dir = dir,
                                  .rendered = rendered,
                                  .hs = hs,
                                  .ws = ws,
                                  .n_shapes = n_shapes,
                                  .every_k = every_k};
    *out = p;
    return 0;
}

void kura_plots_pass_analyzer(struct kura_plots_pass *p, struct analyzer *out)
{
    out->ops = &kp_ops;
    out->self = p;
}

void kura_plots_pass_free(struct kura_plots_pass *p)
{
    if (!p)
        return;
    kp_release(p);
    mem_free(p);
}

int kura_plots_trace(const char *dir, const char *path, const int *hs, const int *ws, int n_shapes,
                     int every_k, bool *rendered, struct errmsg *e)
{
    struct kura_plots_pass *p = NULL;
    int rc = kura_plots_pass_new(&p, dir, hs, ws, n_shapes, every_k, rendered, e);
    if (rc)
        return rc;
    struct analyzer an;
    kura_plots_pass_analyzer(p, &an);
    rc = analyzer_run(path, &an, 1, NULL, e);
    if (rc == 0)
        rc = analyzer_finish(&an, 1, e);
    kura_plots_pass_free(p);
    return rc;
}
