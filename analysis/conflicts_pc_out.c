/*
 * conflicts_pc_out: the PC-conflict tables and plots of the conflicts analyzer
 * (docs/salca.md#figures plots 1-3, hbm_time.csv of the timing mode) and conflicts_write, which
 * writes every output of the analyzer. Every table goes through formats/csv. Shared state:
 * conflicts_impl.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis/conflicts_impl.h"
#include "analysis/salca_out.h"
#include "common/io.h"
#include "common/mem.h"

/* A header row of fixed names, then one name per policy with a prefix ("slots_batch"). */
static void header_row(struct conflicts *c, struct csv_writer *w, const char *const *names,
                       size_t n, const char *policy_prefix)
{
    for (size_t k = 0; k < n; k++)
        csv_str(w, names[k]);
    for (size_t i = 0; policy_prefix && i < c->n_pol; i++) {
        char name[48];
        snprintf(name, sizeof name, "%s%s", policy_prefix, c->pol[i].name);
        csv_str(w, name);
    }
    csv_end_row(w);
}
/* Index of the policy an alpha-vs-window entry W stands for (0 = in-order depths[0]). */
static size_t window_policy(const struct conflicts *c, uint32_t w)
{
    for (size_t i = 0; i < c->n_pol; i++) {
        const struct hbm_pc_policy_cfg *p = &c->pol[i].cfg;
        if (w == 0 && p->policy == HBM_PC_INORDER && p->depth == c->o.depths[0])
            return i;
        if (w > 0 && p->policy == HBM_PC_WINDOW && p->window == w)
            return i;
    }
    return 0;
}

/* alpha_jobs.csv (opts.per_job): one row per job, the slots of every policy. */
static int write_jobs(struct conflicts *c, const char *dir, struct errmsg *e)
{
    if (!c->o.per_job)
        return 0;
    struct csv_writer *w;
    int rc = salca_out_csv_open(dir, "alpha_jobs.csv", &w, e);
    if (rc < 0)
        return rc;
    static const char *const cols[] = {"group", "step",  "layer",   "head",
                                       "n_sel", "ideal", "max_load"};
    header_row(c, w, cols, sizeof cols / sizeof cols[0], "slots_");
    for (size_t j = 0; j < c->n_jobs; j++) {
        const struct job_row *r = &c->jobs[j];
        csv_str(w, c->grp[r->g].name);
        csv_i64(w, r->t);
        csv_u64(w, r->l);
        csv_u64(w, r->h);
        csv_u64(w, r->n);
        csv_u64(w, r->ideal);
        csv_u64(w, r->max_load);
        for (size_t i = 0; i < c->n_pol; i++)
            csv_u64(w, c->job_slots[j * c->n_pol + i]);
        csv_end_row(w);
    }
    return salca_out_csv_close(w, dir, "alpha_jobs.csv", e);
}
/* alpha.csv: totals per policy, overall and (with several groups) per group. */
static int write_alpha(struct conflicts *c, const char *dir, struct errmsg *e)
{
    struct csv_writer *w;
    int rc = salca_out_csv_open(dir, "alpha.csv", &w, e);
    if (rc < 0)
        return rc;
    static const char *const cols[] = {
        "group", "policy", "p_iss", "depth", "window", "map",   "h_att",          "att_base",
        "jobs",  "tokens", "slots", "ideal", "alpha",  "bound", "alpha_job_mean", "alpha_job_max"};
    header_row(c, w, cols, sizeof cols / sizeof cols[0], NULL);
    for (int g = -1; g < (int)c->n_grp; g++) {
        if (g >= 0 && c->n_grp == 1)
            break; /* one group: the overall rows say it all */
        for (size_t i = 0; i < c->n_pol; i++) {
            struct conflicts_totals t;
            conflicts_totals(c, g, i, &t);
            const struct hbm_pc_policy_cfg *p = &c->pol[i].cfg;
            csv_str(w, g < 0 ? "all" : c->grp[g].name);
            csv_str(w, c->pol[i].name);
            csv_u64(w, p->p_iss);
            csv_u64(w, p->policy == HBM_PC_INORDER ? p->depth : 0);
            csv_u64(w, p->policy == HBM_PC_WINDOW ? p->window : 0);
            csv_str(w, hbm_pc_map_name(c->o.map.map));
            csv_u64(w, c->o.map.h_att);
            csv_u64(w, c->o.att_base);
            csv_u64(w, t.jobs);
            csv_u64(w, t.tokens);
            csv_u64(w, t.slots);
            csv_u64(w, t.ideal);
            csv_f64_fixed(w, t.alpha, 6);
            csv_f64_fixed(w, t.bound, 6);
            csv_f64_fixed(w, t.alpha_job_mean, 6);
            csv_f64_fixed(w, t.alpha_job_max, 6);
            csv_end_row(w);
        }
    }
    return salca_out_csv_close(w, dir, "alpha.csv", e);
}

/* alpha_layers.csv: per layer the bound and the alpha of every policy. */
static int write_layers(struct conflicts *c, const char *dir, struct errmsg *e)
{
    struct csv_writer *w;
    int rc = salca_out_csv_open(dir, "alpha_layers.csv", &w, e);
    if (rc < 0)
        return rc;
    static const char *const cols[] = {"layer", "jobs", "ideal", "bound"};
    header_row(c, w, cols, sizeof cols / sizeof cols[0], "");
    for (size_t l = 0; l < c->n_layers; l++) {
        const struct layer_acc *la = &c->layers[l];
        if (!la->jobs)
            continue;
        double id = la->ideal ? (double)la->ideal : 1;
        csv_u64(w, l);
        csv_u64(w, la->jobs);
        csv_u64(w, la->ideal);
        csv_f64_fixed(w, (double)la->max_load / id, 6);
        for (size_t i = 0; i < c->n_pol; i++)
            csv_f64_fixed(w, (double)la->slots[i] / id, 6);
        csv_end_row(w);
    }
    return salca_out_csv_close(w, dir, "alpha_layers.csv", e);
}

/* alpha_vs_window.csv: per window entry the alpha of each group and overall. */
static int write_windows(struct conflicts *c, const char *dir, struct errmsg *e)
{
    struct csv_writer *w;
    int rc = salca_out_csv_open(dir, "alpha_vs_window.csv", &w, e);
    if (rc < 0)
        return rc;
    csv_str(w, "window");
    csv_str(w, "policy");
    for (size_t g = 0; g < c->n_grp; g++) {
        char name[80];
        snprintf(name, sizeof name, "alpha_%s", c->grp[g].name);
        csv_str(w, name);
    }
    csv_str(w, "alpha_all");
    csv_str(w, "bound_all");
    csv_end_row(w);
    struct conflicts_totals t;
    for (size_t k = 0; k < c->o.n_windows; k++) {
        size_t pi = window_policy(c, c->o.windows[k]);
        csv_u64(w, c->o.windows[k]);
        csv_str(w, c->pol[pi].name);
        for (size_t g = 0; g < c->n_grp; g++) {
            conflicts_totals(c, (int)g, pi, &t);
            csv_f64_fixed(w, t.alpha, 6);
        }
        conflicts_totals(c, -1, pi, &t);
        csv_f64_fixed(w, t.alpha, 6);
        csv_f64_fixed(w, t.bound, 6);
        csv_end_row(w);
    }
    return salca_out_csv_close(w, dir, "alpha_vs_window.csv", e);
}

/* conflict_occupancy.csv: the occupancy histogram of every policy, as fractions. */
static int write_occupancy(struct conflicts *c, const char *dir, struct errmsg *e)
{
    struct csv_writer *w;
    int rc = salca_out_csv_open(dir, "conflict_occupancy.csv", &w, e);
    if (rc < 0)
        return rc;
    static const char *const cols[] = {"occupancy"};
    header_row(c, w, cols, 1, "");
    double tot[MAX_POL];
    for (size_t i = 0; i < c->n_pol; i++) {
        tot[i] = 0;
        for (size_t b = 0; b < CONFLICTS_OCC_BINS; b++)
            tot[i] += (double)c->pol[i].occ[b];
    }
    for (size_t b = 0; b < CONFLICTS_OCC_BINS; b++) {
        char bin[24];
        snprintf(bin, sizeof bin, "%zu%s", b, b == CONFLICTS_OCC_BINS - 1 ? "+" : "");
        csv_str(w, bin);
        for (size_t i = 0; i < c->n_pol; i++)
            csv_f64_fixed(w, tot[i] > 0 ? (double)c->pol[i].occ[b] / tot[i] : 0.0, 8);
        csv_end_row(w);
    }
    return salca_out_csv_close(w, dir, "conflict_occupancy.csv", e);
}

/* conflict_per_batch.csv: conflicts per batch of p_iss requests under each map. */
static int write_per_batch(struct conflicts *c, const char *dir, struct errmsg *e)
{
    struct csv_writer *w;
    int rc = salca_out_csv_open(dir, "conflict_per_batch.csv", &w, e);
    if (rc < 0)
        return rc;
    csv_str(w, "conflicts");
    double ctot[3] = {0, 0, 0};
    for (int m = 0; m < 3; m++) {
        if (!c->map_ok[m])
            continue;
        csv_str(w, hbm_pc_map_name((enum hbm_pc_map)m));
        for (uint32_t b = 0; b < c->o.p_iss; b++)
            ctot[m] += (double)c->conf[m][b];
    }
    csv_end_row(w);
    for (uint32_t b = 0; b < c->o.p_iss; b++) {
        csv_u64(w, b);
        for (int m = 0; m < 3; m++)
            if (c->map_ok[m])
                csv_f64_fixed(w, ctot[m] > 0 ? (double)c->conf[m][b] / ctot[m] : 0.0, 8);
        csv_end_row(w);
    }
    return salca_out_csv_close(w, dir, "conflict_per_batch.csv", e);
}

static int write_csvs(struct conflicts *c, const char *dir, struct errmsg *e)
{
    int rc = write_alpha(c, dir, e);
    if (rc == 0)
        rc = write_layers(c, dir, e);
    if (rc == 0)
        rc = write_windows(c, dir, e);
    if (rc == 0)
        rc = write_occupancy(c, dir, e);
    return rc < 0 ? rc : write_per_batch(c, dir, e);
}
static int write_plots(struct conflicts *c, const char *dir, bool *rendered, struct errmsg *e)
{
    int rc = 0;
    double x[CONFLICTS_OCC_BINS > MAX_P_ISS ? CONFLICTS_OCC_BINS : MAX_P_ISS];
    double y[MAX_P_ISS];
    /* 1. occupancy: batch, in-order D_f, window 128 (or the largest window)
     * [docs/salca.md#figures]. */
    struct plot *p = plot_new("conflict_occupancy", PLOT_LINE);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    plot_title(p, "Per-PC queue occupancy per slot");
    plot_xlabel(p, "occupancy per PC per slot", "requests");
    plot_ylabel(p, "fraction of samples", "");
    size_t last_occ = 0;
    for (size_t i = 0; i < c->n_pol; i++)
        for (size_t b = 0; b < CONFLICTS_OCC_BINS; b++)
            if (c->pol[i].occ[b] && b > last_occ)
                last_occ = b;
    for (size_t i = 0; i < c->n_pol && rc == 0; i++) {
        const struct hbm_pc_policy_cfg *pc = &c->pol[i].cfg;
        if (pc->policy == HBM_PC_WINDOW && pc->window != 128)
            continue;
        double tot = 0;
        for (size_t b = 0; b < CONFLICTS_OCC_BINS; b++)
            tot += (double)c->pol[i].occ[b];
        for (size_t b = 0; b <= last_occ; b++) {
            x[b] = (double)b;
            y[b] = tot > 0 ? (double)c->pol[i].occ[b] / tot : 0;
        }
        rc = plot_series(p, 0, c->pol[i].name, x, y, last_occ + 1);
    }
    if (rc < 0) {
        plot_free(p);
        return errmsg_set(e, rc, "out of memory");
    }
    if ((rc = salca_out_plot(p, dir, rendered, e)) < 0)
        return rc;

    /* 2. conflicts per batch per map [docs/salca.md#figures]. */
    if (!(p = plot_new("conflict_per_batch", PLOT_LINE)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    plot_title(p, "Conflicts per batch of p_{iss} requests");
    plot_xlabel(p, "conflicts in a batch", "requests");
    plot_ylabel(p, "fraction of batches", "");
    for (int m = 0; m < 3 && rc == 0; m++) {
        if (!c->map_ok[m])
            continue;
        double tot = 0;
        for (uint32_t b = 0; b < c->o.p_iss; b++)
            tot += (double)c->conf[m][b];
        for (uint32_t b = 0; b < c->o.p_iss; b++) {
            x[b] = b;
            y[b] = tot > 0 ? (double)c->conf[m][b] / tot : 0;
        }
        rc = plot_series(p, 0, hbm_pc_map_name((enum hbm_pc_map)m), x, y, c->o.p_iss);
    }
    if (rc < 0) {
        plot_free(p);
        return errmsg_set(e, rc, "out of memory");
    }
    if ((rc = salca_out_plot(p, dir, rendered, e)) < 0)
        return rc;

    /* 3. alpha vs window per group, bound, paper lines 2.18 and 1.17 [docs/salca.md#figures]. */
    if (!(p = plot_new("alpha_vs_window", PLOT_LINE)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    plot_title(p, "Conflict factor α vs reorder window W (W = 0: in-order)");
    plot_xlabel(p, "window W", "requests");
    plot_ylabel(p, "α", "");
    plot_extra(p, "set arrow from graph 0, first 2.18 to graph 1, first 2.18 nohead dt 2");
    plot_extra(p, "set arrow from graph 0, first 1.17 to graph 1, first 1.17 nohead dt 3");
    plot_extra(p, "set label \"paper, in-order: 2.18\" at graph 0.98, first 2.18 right "
                  "offset 0,0.6 front");
    plot_extra(p, "set label \"paper, window 128: 1.17\" at graph 0.98, first 1.17 right "
                  "offset 0,0.6 front");
    size_t nw = 0;
    uint32_t ws[CONFLICTS_MAX_WINDOWS];
    for (size_t k = 0; k < c->o.n_windows; k++)
        if (c->o.windows[k] > 0)
            ws[nw++] = c->o.windows[k];
    if (nw > 1)
        plot_logscale(p, true, false);
    {
        /* keep the paper's 2.18 line in view */
        double top = 2.3;
        for (size_t i = 0; i < c->n_pol; i++) {
            struct conflicts_totals tt;
            conflicts_totals(c, -1, i, &tt);
            const struct hbm_pc_policy_cfg *pp = &c->pol[i].cfg;
            if (pp->policy != HBM_PC_BATCH && tt.alpha * 1.05 > top)
                top = tt.alpha * 1.05;
        }
        char yr[64];
        snprintf(yr, sizeof yr, "set yrange [1:%.3f]", top);
        plot_extra(p, yr);
    }
    struct conflicts_totals t;
    double yb[CONFLICTS_MAX_WINDOWS], yi[CONFLICTS_MAX_WINDOWS];
    for (int g = (c->n_grp > 1 ? 0 : -1); g < (int)c->n_grp && rc == 0; g++) {
        for (size_t k = 0; k < nw; k++) {
            size_t pi = window_policy(c, ws[k]);
            conflicts_totals(c, g, pi, &t);
            x[k] = ws[k];
            y[k] = t.alpha;
        }
        rc = plot_series(p, 0, g < 0 ? "window" : c->grp[g].name, x, y, nw);
        if (g == (int)c->n_grp - 1 || g < 0) {
            /* in-order and the bound over every group (the bound does not depend on the
             * policy) */
            conflicts_totals(c, -1, window_policy(c, 0), &t);
            for (size_t k = 0; k < nw; k++) {
                yi[k] = t.alpha;
                yb[k] = t.bound;
            }
            if (rc == 0)
                rc = plot_series(p, 0, c->pol[window_policy(c, 0)].name, x, yi, nw);
            if (rc == 0)
                rc = plot_series(p, 0, "bound", x, yb, nw);
            break;
        }
    }
    if (rc < 0) {
        plot_free(p);
        return errmsg_set(e, rc, "out of memory");
    }
    return salca_out_plot(p, dir, rendered, e);
}

/* The timing row of policy i (totals t) after the leading cells: the columns of
 * hbm_time.csv from "policy" on. */
static int timing_row(struct csv_writer *w, const struct conflicts *c, size_t i,
                      const struct conflicts_timing *t)
{
    const struct hbm_pc_policy_cfg *p = &c->pol[i].cfg;
    int rc = csv_str(w, c->pol[i].name);
    if (rc == 0)
        rc = csv_u64(w, p->policy == HBM_PC_INORDER ? p->depth : 0);
    if (rc == 0)
        rc = csv_u64(w, p->policy == HBM_PC_WINDOW ? p->window : 0);
    if (rc == 0)
        rc = csv_u64(w, t->jobs);
    if (rc == 0)
        rc = csv_u64(w, t->tokens);
    if (rc == 0)
        rc = csv_u64(w, t->ideal_cycles);
    if (rc == 0)
        rc = csv_u64(w, t->cycles);
    if (rc == 0)
        rc = csv_f64(w, t->time_over_ideal);
    if (rc == 0)
        rc = csv_f64(w, t->alpha);
    if (rc == 0)
        rc = csv_u64(w, t->row_hits);
    if (rc == 0)
        rc = csv_u64(w, t->row_misses);
    return rc == 0 ? csv_end_row(w) : rc;
}

/* hbm_time.csv: one row per policy of the timing mode; with compare (opts.compare_presets)
 * hbm_presets.csv: one row per preset and policy, the preset first. */
static int write_timing(struct conflicts *c, const char *dir, bool compare, struct errmsg *e)
{
    if (!c->tim || (compare && !c->cmp))
        return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, compare ? "hbm_presets.csv" : "hbm_time.csv");
    struct csv_writer *w = NULL;
    int rc = csv_writer_open(&w, path, false, e);
    if (rc < 0)
        return rc;
    static const char *const cols[] = {"policy", "depth",        "window",    "jobs",
                                       "tokens", "ideal_cycles", "cycles",    "time_over_ideal",
                                       "alpha",  "row_hits",     "row_misses"};
    if (compare)
        rc = csv_str(w, "preset");
    for (size_t k = 0; k < sizeof cols / sizeof cols[0] && rc == 0; k++)
        rc = csv_str(w, cols[k]);
    if (rc == 0)
        rc = csv_end_row(w);
    for (size_t k = 0; k < (compare ? c->n_cmp : 1) && rc == 0; k++)
        for (size_t i = 0; i < c->n_pol && rc == 0; i++) {
            struct conflicts_timing t;
            if (compare) {
                conflicts_preset_totals(c, k, i, &t);
                rc = csv_str(w, c->cmp[k].cfg.t.name);
            } else {
                conflicts_timing_totals(c, i, &t);
            }
            if (rc == 0)
                rc = timing_row(w, c, i, &t);
        }
    int crc = csv_writer_close(w);
    int en = errno; /* the cause when crc failed (csv.h) */
    if (rc == 0)
        rc = crc;
    if (rc < 0)
        return errmsg_set(e, rc, "cannot write '%s': %s", path, strerror(crc ? en : ENOMEM));
    return 0;
}

/* hbm_presets_vs_window: alpha (left) and time over ideal (right) of the window policies
 * against W, one series per preset (opts.compare_presets; docs/models.md#hbm-timing-mode). */
static int write_presets_plot(struct conflicts *c, const char *dir, bool *rendered,
                              struct errmsg *e)
{
    if (!c->cmp)
        return 0;
    size_t nw = 0;
    double x[CONFLICTS_MAX_WINDOWS], ya[CONFLICTS_MAX_WINDOWS], yt[CONFLICTS_MAX_WINDOWS];
    uint32_t ws[CONFLICTS_MAX_WINDOWS];
    for (size_t k = 0; k < c->o.n_windows; k++)
        if (c->o.windows[k] > 0)
            ws[nw++] = c->o.windows[k];
    if (nw == 0)
        return 0;
    struct plot *p = plot_new("hbm_presets_vs_window", PLOT_LINE);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    plot_title(p, "HBM parts: conflict factor and time over ideal vs reorder window W");
    plot_size(p, 1100, 480);
    int rc = plot_panels(p, 1, 2);
    if (rc == 0)
        rc = plot_panel(p, 0, "α = cycles / spread cycles (timing mode)", "window W", "tokens", "α",
                        "");
    if (rc == 0)
        rc = plot_panel(p, 1, "time over ideal = cycles / ideal cycles", "window W", "tokens",
                        "time over ideal", "");
    if (rc == 0 && nw > 1)
        plot_logscale(p, true, false);
    for (size_t k = 0; k < c->n_cmp && rc == 0; k++) {
        for (size_t j = 0; j < nw; j++) {
            struct conflicts_timing t;
            conflicts_preset_totals(c, k, window_policy(c, ws[j]), &t);
            x[j] = ws[j];
            ya[j] = t.alpha;
            yt[j] = t.time_over_ideal;
        }
        rc = plot_series(p, 0, c->cmp[k].cfg.t.name, x, ya, nw);
        if (rc == 0)
            rc = plot_series(p, 1, c->cmp[k].cfg.t.name, x, yt, nw);
    }
    if (rc < 0) {
        plot_free(p);
        return errmsg_set(e, rc, "out of memory");
    }
    return salca_out_plot(p, dir, rendered, e);
}

int conflicts_write(struct conflicts *c, const char *dir, bool *rendered, struct errmsg *e)
{
    bool r = true;
    int rc = io_mkdir_p(dir, 0777, e);
    if (rc)
        return rc;
    rc = write_csvs(c, dir, e);
    if (rc == 0)
        rc = write_jobs(c, dir, e);
    if (rc == 0)
        rc = write_plots(c, dir, &r, e);
    if (rc == 0)
        rc = write_timing(c, dir, false, e);
    if (rc == 0)
        rc = write_timing(c, dir, true, e);
    if (rc == 0)
        rc = write_presets_plot(c, dir, &r, e);
    if (rendered)
        *rendered = r;
    return rc;
}
