/*
 * disc_plots_trace: the capture views of `analyze disc --trace` (docs/disc.md#figures):
 * per-step statistics of each trace gathered in one reader pass, their line plots,
 * sparsity heatmaps, latent-difference, quality and FLOP views.
 */
#include "analysis/disc_plots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/disc_plots_impl.h"
#include "analysis/plot.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "traces/trace_reader.h"

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

#define LABEL_MAX 96
#define TOKEN_MASK_MAX (1u << 22) /* cells of the token masks held for their figures */
#define TOKEN_MASK_FIGS 16        /* token mask figures of a run at most (evenly spaced) */

/*
 * One --trace file for the capture views: per-step statistics gathered from its DiscStep
 * and DiscMask records (NaN where absent) and its Summary record. dh is owned by r and
 * stays valid while r is open.
 */
struct trace_views {
    const char *path;
    char label[LABEL_MAX]; /* file name without directory and ".atr", unique among traces */
    char fname[LABEL_MAX]; /* label with each character outside [A-Za-z0-9_.-] as '_' */
    struct trace_reader *r;
    const Acceltrace__DiscHeader *dh;
    size_t k, nb;                   /* steps, blocks */
    double *x;                      /* (k) step index */
    double *prune;                  /* (k) pruned tokens, % */
    double *sp;                     /* (k) pooled ST mask sparsity, % */
    double *tau, *d50, *d90, *dmax; /* (k) latent units */
    double *hz;                     /* (nb, k) mean sparsity over heads, % (NaN: no mask) */
    bool *gen;                      /* (k) generation step */
    double *tmask; /* (k, tokens) CTR token mask, 1 computed, 0 pruned; NaN: no mask; NULL
                    * when the masks would take more than TOKEN_MASK_MAX cells */
    bool any_mask, any_diff;
    Acceltrace__Record *summary; /* the last Summary with a disc part, or NULL */
};

static void trace_views_release(struct trace_views *tv)
{
    trace_record_free(tv->summary);
    mem_free(tv->x);
    mem_free(tv->prune);
    mem_free(tv->sp);
    mem_free(tv->tau);
    mem_free(tv->d50);
    mem_free(tv->d90);
    mem_free(tv->dmax);
    mem_free(tv->hz);
    mem_free(tv->gen);
    mem_free(tv->tmask);
    trace_reader_free(tv->r);
}

static const Acceltrace__DiscSummary *tv_summary(const struct trace_views *tv)
{
    return tv->summary ? tv->summary->summary->disc : NULL;
}

static bool fname_taken(const struct trace_views *tv, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (!strcmp(tv[j].fname, tv[i].fname))
            return true;
    return false;
}

/*
 * decision: trace i is labelled by its file name without directory and ".atr" (users name
 * their captures); a label whose file-name form an earlier trace already has gets "-2",
 * "-3", ... so series, bar categories and heatmap files stay apart.
 */
static void trace_label(struct trace_views *tv, size_t i)
{
    const char *base = strrchr(tv[i].path, '/');
    base = base ? base + 1 : tv[i].path;
    size_t n = strlen(base);
    if (n > 4 && !strcmp(base + n - 4, ".atr"))
        n -= 4;
    if (n == 0)
        base = "trace", n = 5;
    if (n > LABEL_MAX - 16)
        n = LABEL_MAX - 16;
    for (int suffix = 1;; suffix++) { /* ends: at most i labels are taken */
        if (suffix == 1)
            snprintf(tv[i].label, LABEL_MAX, "%.*s", (int)n, base);
        else
            snprintf(tv[i].label, LABEL_MAX, "%.*s-%d", (int)n, base, suffix);
        for (size_t c = 0;; c++) {
            char ch = tv[i].label[c];
            bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                      (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-' || !ch;
            tv[i].fname[c] = ok ? ch : '_';
            if (!ch)
                break;
        }
        if (!fname_taken(tv, i))
            break;
    }
}

/* The pass that fills one trace_views: its per-step sums while the records stream. */
struct tv_pass {
    struct trace_views *tv;
    double *nnz, *tot; /* (k) kept nonzeros and mask elements per step */
    double *hn;        /* (nb, k) heads with a finite sparsity */
};

static int tv_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **recp,
                     struct errmsg *e)
{
    (void)pos;
    (void)e;
    struct tv_pass *p = self;
    struct trace_views *tv = p->tv;
    const Acceltrace__Record *rec = *recp;
    const size_t k = tv->k, nb = tv->nb;
    if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_STEP && rec->disc_step->k < k) {
        const Acceltrace__DiscStep *st = rec->disc_step;
        tv->prune[st->k] = 100.0 * st->prune_ratio;
        tv->tau[st->k] = st->tau, tv->d50[st->k] = st->d_p50;
        tv->d90[st->k] = st->d_p90, tv->dmax[st->k] = st->d_max;
        const size_t nt = tv->dh->tokens;
        if (tv->tmask && st->token_mask.len * 8 >= nt)
            for (size_t i = 0; i < nt; i++) /* LSB-first bitset (formats/bitset.h) */
                tv->tmask[st->k * nt + i] = (st->token_mask.data[i >> 3] >> (i & 7)) & 1;
    }
    if (rec->body_case == ACCELTRACE__RECORD__BODY_SUMMARY && rec->summary && rec->summary->disc) {
        trace_record_free(tv->summary);
        tv->summary = *recp; /* kept for the quality and FLOP views */
        *recp = NULL;
        return 0;
    }
    if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_MASK && rec->disc_mask->step < k) {
        const Acceltrace__DiscMask *dm = rec->disc_mask;
        p->nnz[dm->step] += (double)dm->nnz;
        p->tot[dm->step] += (double)dm->rows * tv->dh->tokens;
        if (dm->block < nb && isfinite(dm->sparsity)) { /* mean over heads, NaN skipped */
            tv->hz[(size_t)dm->block * k + dm->step] += 100.0 * dm->sparsity;
            p->hn[(size_t)dm->block * k + dm->step] += 1;
        }
        tv->gen[dm->step] |= dm->generated;
    }
    return 0;
}

static const struct analyzer_ops tv_ops = {.name = "disc_views", .record = tv_record};

/* Reads one trace into tv (path and label set), feeding extra[0..n_extra) from the same
 * pass; ERR_DATA naming it when it is not disc. */
static int trace_views_load(struct trace_views *tv, const struct analyzer *extra, size_t n_extra,
                            struct errmsg *e)
{
    int rc = tv->r ? 0 : trace_reader_open(&tv->r, tv->path, NULL, e);
    if (rc < 0)
        return rc;
    const Acceltrace__TraceHeader *h = trace_reader_header(tv->r);
    const Acceltrace__DiscHeader *dh = h ? h->disc : NULL;
    if (!dh || dh->steps == 0 || dh->steps > 100000 || dh->tokens == 0 || dh->depth == 0 ||
        dh->depth > 1024)
        return errmsg_set(e, ERR_DATA, "'%s' is not a disc trace", tv->path);
    const size_t k = dh->steps, nb = dh->depth;
    tv->dh = dh, tv->k = k, tv->nb = nb;
    struct tv_pass p = {tv, mem_calloc(k, sizeof *p.nnz), mem_calloc(k, sizeof *p.tot),
                        mem_calloc(k * nb, sizeof *p.hn)};
    tv->x = mem_calloc(k, sizeof *tv->x), tv->prune = mem_calloc(k, sizeof *tv->prune);
    tv->sp = mem_calloc(k, sizeof *tv->sp), tv->tau = mem_calloc(k, sizeof *tv->tau);
    tv->d50 = mem_calloc(k, sizeof *tv->d50), tv->d90 = mem_calloc(k, sizeof *tv->d90);
    tv->dmax = mem_calloc(k, sizeof *tv->dmax), tv->gen = mem_calloc(k, sizeof *tv->gen);
    tv->hz = mem_calloc(k * nb, sizeof *tv->hz);
    if (k * dh->tokens <= TOKEN_MASK_MAX &&
        (tv->tmask = mem_alloc(k * dh->tokens * sizeof(double))))
        for (size_t i = 0; i < k * dh->tokens; i++)
            tv->tmask[i] = NAN;
    if (!p.nnz || !p.tot || !p.hn || !tv->x || !tv->prune || !tv->sp || !tv->tau || !tv->d50 ||
        !tv->d90 || !tv->dmax || !tv->gen || !tv->hz) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < k; i++)
        tv->x[i] = (double)i,
        tv->prune[i] = tv->tau[i] = tv->d50[i] = tv->d90[i] = tv->dmax[i] = NAN;
    struct analyzer an[1 + DISC_PLOTS_MAX_EXTRA] = {{&tv_ops, &p}};
    for (size_t i = 0; i < n_extra; i++)
        an[1 + i] = extra[i];
    if ((rc = analyzer_run_reader(tv->r, tv->path, an, 1 + n_extra, NULL, e)) < 0)
        goto out;
    for (size_t i = 0; i < k; i++) {
        /* docs/disc.md#trace-records: pooled */
        tv->sp[i] = p.tot[i] > 0 ? 100.0 * (1 - p.nnz[i] / p.tot[i]) : NAN;
        tv->any_mask |= p.tot[i] > 0;
        tv->any_diff |= isfinite(tv->dmax[i]) && tv->dmax[i] > 0;
    }
    for (size_t i = 0; i < k * nb; i++)
        tv->hz[i] = p.hn[i] > 0 ? tv->hz[i] / p.hn[i] : NAN;
out:
    mem_free(p.nnz);
    mem_free(p.tot);
    mem_free(p.hn);
    return rc;
}

/* The name of a series of trace tv among n traces: single alone with one trace (the names
 * the one-trace figures always had), else "<label> what", or the label when what is NULL. */
static const char *series_name(char *buf, size_t len, const struct trace_views *tv, size_t n,
                               const char *single, const char *what)
{
    if (n == 1)
        snprintf(buf, len, "%s", single);
    else if (what)
        snprintf(buf, len, "%s %s", tv->label, what);
    else
        snprintf(buf, len, "%s", tv->label);
    return buf;
}

/* s with each ' doubled, for a gnuplot single-quoted string. */
static const char *gp_single_quoted(char *buf, size_t len, const char *s)
{
    size_t o = 0;
    for (; *s && o + 2 < len; s++) {
        if (*s == '\'')
            buf[o++] = '\'';
        buf[o++] = *s;
    }
    buf[o] = '\0';
    return buf;
}

static int plot_fail(struct plot *p, int rc, struct errmsg *e)
{
    rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
    plot_free(p);
    return rc;
}

/* prune_per_step and st_sparsity (docs/disc.md#figures items 1 and 3): one line per trace. */
static int plot_step_lines(const char *out, const struct trace_views *tv, size_t n, bool *rendered,
                           struct errmsg *e)
{
    char name[LABEL_MAX + 32];
    struct plot *p = plot_new("prune_per_step", PLOT_LINE);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    plot_title(p, "CTR token pruning per step (paper Table I band 25.3-62.6%)");
    plot_xlabel(p, "step", "");
    plot_ylabel(p, "pruned tokens", "%");
    int rc;
    /* a band of the driver: in the legend, and inside the y range with the data */
    if ((rc = plot_band(p, NAN, NAN, 25.3, 62.6, 5, "paper Table I: 25.3-62.6%")) < 0)
        return plot_fail(p, rc, e);
    if (n > 1) /* the lines of several traces fill the top left corner */
        plot_extra(p, "set key outside right top");
    for (size_t t = 0; t < n; t++)
        if ((rc = plot_series(p, 0, series_name(name, sizeof name, &tv[t], n, "prune ratio", NULL),
                              tv[t].x, tv[t].prune, tv[t].k)) < 0)
            return plot_fail(p, rc, e);
    if ((rc = disc_plots_finish(p, out, rendered, e)) < 0)
        return rc;
    bool any_mask = false;
    for (size_t t = 0; t < n; t++)
        any_mask |= tv[t].any_mask;
    if (!any_mask)
        return 0;
    p = plot_new("st_sparsity", PLOT_LINE);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    plot_title(p, "ST mask sparsity per step, pooled (paper Table I band 56.2-66.1%)");
    plot_xlabel(p, "step", "");
    plot_ylabel(p, "sparsity", "%");
    if ((rc = plot_band(p, NAN, NAN, 56.2, 66.1, 1, "paper Table I: 56.2-66.1%")) < 0)
        return plot_fail(p, rc, e);
    if (n > 1)
        plot_extra(p, "set key outside right top");
    for (size_t t = 0; t < n; t++) /* a trace without masks (ST off) has no line */
        if (tv[t].any_mask &&
            (rc = plot_series(p, 0, series_name(name, sizeof name, &tv[t], n, "sparsity", NULL),
                              tv[t].x, tv[t].sp, tv[t].k)) < 0)
            return plot_fail(p, rc, e);
    return disc_plots_finish(p, out, rendered, e);
}

/*
 * token_mask_kNNN: the CTR token mask of step k of the first trace on the token grid (x:
 * token column, y: token row, as the image's patches), computed vs pruned with a two-colour
 * bar; at most TOKEN_MASK_FIGS steps, evenly spaced. The capture's --png token_mask_k*.png
 * are the same masks as raw one-pixel-per-token images.
 */
static int plot_token_masks(const char *out, const struct trace_views *tv, bool *rendered,
                            struct errmsg *e)
{
    const size_t nt = tv->dh->tokens, gw = tv->dh->grid_w ? tv->dh->grid_w : nt;
    if (!tv->tmask || nt % gw)
        return 0;
    const size_t gh = nt / gw, every = (tv->k + TOKEN_MASK_FIGS - 1) / TOKEN_MASK_FIGS;
    double *xs = mem_alloc(gw * sizeof *xs), *ys = mem_alloc(gh * sizeof *ys);
    int rc = 0;
    if (!xs || !ys)
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < gw; i++)
        xs[i] = (double)i;
    for (size_t i = 0; !rc && i < gh; i++)
        ys[i] = (double)i;
    for (size_t k = 0; !rc && k < tv->k; k += every) {
        const double *m = tv->tmask + k * nt;
        if (!isfinite(m[0]))
            continue; /* no DiscStep of this step */
        size_t kept = 0;
        for (size_t i = 0; i < nt; i++)
            kept += m[i] > 0.5;
        char name[64], title[160];
        snprintf(name, sizeof name, "token_mask_k%03zu", k);
        snprintf(title, sizeof title, "CTR token mask, step %zu: %zu of %zu tokens computed", k,
                 kept, nt);
        struct plot *p = plot_new(name, PLOT_HEATMAP);
        if (!p) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            break;
        }
        plot_title(p, title);
        plot_xlabel(p, "token column", "patch");
        plot_ylabel(p, "token row", "patch");
        plot_zlabel(p, "token", "");
        plot_extra(p, "set palette maxcolors 2");
        plot_extra(p, "set palette defined (0 '#D55E00', 1 '#0072B2')");
        plot_extra(p, "set cbrange [-0.5:1.5]");
        plot_extra(p, "set cbtics (\"pruned\" 0, \"computed\" 1)");
        plot_extra(p, "set size ratio -1");
        plot_heatmap_image_rows(p);
        if ((rc = plot_heatmap(p, xs, gw, ys, gh, m, NULL)) < 0) {
            rc = plot_fail(p, rc, e);
            break;
        }
        rc = disc_plots_finish(p, out, rendered, e);
        if (rc > 0)
            rc = 0;
    }
    mem_free(xs);
    mem_free(ys);
    return rc < 0 ? rc : 0;
}

/*
 * st_sparsity_heatmap (docs/disc.md#figures item 3): step x block, generation steps marked.
 * decision: one file per trace with masks, st_sparsity_heatmap for the first such trace and
 * st_sparsity_heatmap_<label> for each further one.
 */
static int plot_heatmaps(const char *out, const struct trace_views *tv, size_t n, bool *rendered,
                         struct errmsg *e)
{
    bool first = true;
    for (size_t t = 0; t < n; t++) {
        if (!tv[t].any_mask)
            continue;
        const size_t k = tv[t].k, nb = tv[t].nb;
        double *yb = mem_calloc(nb, sizeof *yb);
        char name[LABEL_MAX + 32], title[LABEL_MAX + 128];
        if (first)
            snprintf(name, sizeof name, "st_sparsity_heatmap");
        else
            snprintf(name, sizeof name, "st_sparsity_heatmap_%s", tv[t].fname);
        struct plot *p = plot_new(name, PLOT_HEATMAP);
        if (!p || !yb) {
            plot_free(p);
            mem_free(yb);
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        }
        first = false;
        for (size_t b = 0; b < nb; b++)
            yb[b] = (double)b;
        if (n == 1)
            snprintf(title, sizeof title,
                     "ST mask sparsity by step and block, mean over heads "
                     "(G = generation step)");
        else
            snprintf(title, sizeof title,
                     "ST mask sparsity of %s by step and block, mean over "
                     "heads (G = generation step)",
                     tv[t].label);
        plot_title(p, title);
        plot_xlabel(p, "step", "");
        plot_ylabel(p, "block", "");
        plot_zlabel(p, "sparsity", "%");
        for (size_t i = 0; i < k && i < 200; i++)
            if (tv[t].gen[i]) {
                char cmd[96];
                snprintf(cmd, sizeof cmd, "set label 'G' at %zu, graph 1.02 center", i);
                plot_extra(p, cmd);
            }
        int rc = plot_heatmap(p, tv[t].x, k, yb, nb, tv[t].hz, NULL);
        mem_free(yb);
        if (rc < 0)
            return plot_fail(p, rc, e);
        if ((rc = disc_plots_finish(p, out, rendered, e)) < 0)
            return rc;
    }
    return 0;
}

/* latent_diff (docs/disc.md#figures item 2): the quantiles and tau_k of each trace that has them.
 */
static int plot_latent(const char *out, const struct trace_views *tv, size_t n, bool *rendered,
                       struct errmsg *e)
{
    bool any = false;
    for (size_t t = 0; t < n; t++)
        any |= tv[t].any_diff;
    if (!any)
        return 0;
    struct plot *p = plot_new("latent_diff", PLOT_LINE);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    plot_title(p, "CTR input change per step: per-token max |x_{k} - x_{k-1}| quantiles, τ_{k}");
    plot_xlabel(p, "step", "");
    plot_ylabel(p, "latent change", "latent units");
    plot_logscale(p, false, true);
    static const char *const what[4] = {"d_p50", "d_p90", "d_max", "tau_k"};
    for (size_t t = 0; t < n; t++) {
        if (!tv[t].any_diff)
            continue;
        const double *y[4] = {tv[t].d50, tv[t].d90, tv[t].dmax, tv[t].tau};
        for (size_t q = 0; q < 4; q++) {
            char name[LABEL_MAX + 32];
            int rc = plot_series(p, 0, series_name(name, sizeof name, &tv[t], n, what[q], what[q]),
                                 tv[t].x, y[q], tv[t].k);
            if (rc < 0)
                return plot_fail(p, rc, e);
        }
    }
    return disc_plots_finish(p, out, rendered, e);
}

/*
 * quality_per_step and quality.csv (docs/disc.md#figures item 4): rel_err per step of each compared
 * run of each trace; the final cosine and PSNR in the plot and in quality.csv (columns trace, run,
 * cosine, psnr, rel_err_final).
 */
static int plot_quality(const char *out, const struct trace_views *tv, size_t n, bool *rendered,
                        struct errmsg *e)
{
    size_t kmax = 0;
    bool any = false;
    for (size_t t = 0; t < n; t++) {
        const Acceltrace__DiscSummary *ds = tv_summary(&tv[t]);
        any |= ds && ds->n_quality;
        kmax = tv[t].k > kmax ? tv[t].k : kmax;
    }
    if (!any)
        return 0;
    struct plot *p = plot_new("quality_per_step", PLOT_LINE);
    double *y = mem_calloc(kmax + 1, sizeof *y);
    char path[4096];
    snprintf(path, sizeof path, "%s/quality.csv", out);
    struct csv_writer *w = NULL;
    int rc = 0;
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
    int wr = csv_str(w, "trace") | csv_str(w, "run") | csv_str(w, "cosine") |
             csv_str(w, "psnr [dB]") | csv_str(w, "rel_err_final") | csv_end_row(w);
    plot_title(p, "Relative L2 error of x_{k+1} against the dense run");
    plot_xlabel(p, "step", "");
    plot_ylabel(p, "rel_err", "");
    plot_logscale(p, false, true);
    plot_extra(p, "set key bottom right");
    size_t line = 0;
    for (size_t t = 0; t < n && rc >= 0; t++) {
        const Acceltrace__DiscSummary *ds = tv_summary(&tv[t]);
        const Acceltrace__DiscHeader *dh = tv[t].dh;
        bool st_on = dh->st_mode && strcmp(dh->st_mode, "off");
        for (size_t q = 0; ds && q < ds->n_quality && rc >= 0; q++, line++) {
            const Acceltrace__DiscQuality *dq = ds->quality[q];
            bool main_run = dq->run && !strcmp(dq->run, "main");
            const char *run = !main_run ? "CTR-only" : st_on ? "CTR+ST" : "CTR (main run)";
            char label[LABEL_MAX + 32], quoted[2 * sizeof label], cmd[sizeof quoted + 128];
            series_name(label, sizeof label, &tv[t], n, run, run);
            size_t m = dq->n_rel_err < tv[t].k ? dq->n_rel_err : tv[t].k;
            for (size_t i = 0; i < m; i++) /* 0 (identical steps) has no place on a log axis */
                y[i] = dq->rel_err[i] > 0 ? dq->rel_err[i] : NAN;
            snprintf(cmd, sizeof cmd,
                     "set label %zu '%s: cosine %.6f, PSNR %.2f dB' at graph 0.03, graph %.2f",
                     line + 1, gp_single_quoted(quoted, sizeof quoted, label), dq->cosine, dq->psnr,
                     0.95 - 0.06 * (double)line);
            plot_extra(p, cmd);
            if ((rc = plot_series(p, 0, label, tv[t].x, y, m)) < 0)
                rc = errmsg_set(e, rc, "%s", plot_errmsg(p));
            wr |= csv_str(w, tv[t].label) | csv_str(w, run) | csv_f64(w, dq->cosine) |
                  csv_f64(w, dq->psnr) | csv_f64(w, m ? dq->rel_err[m - 1] : NAN) | csv_end_row(w);
        }
    }
    mem_free(y);
    int wc = csv_writer_close(w);
    if (rc >= 0 && (wr || wc))
        rc = errmsg_set(e, ERR_IO, "cannot write '%s'", path);
    if (rc < 0) {
        plot_free(p);
        return rc;
    }
    return disc_plots_finish(p, out, rendered, e);
}

/*
 * Stacked FLOP bars (docs/disc.md#figures items 5-6, paper Fig. 17): per trace with a Summary one
 * group of three bars (dense, CTR, CTR+ST) split into parts, each in % of that trace's dense total
 * of the parts. With one trace the categories are "dense", "CTR", "CTR+ST"; with several "<label>
 * dense", ... and dashed lines between the groups.
 */
static int plot_flops(const char *out, const char *name, const char *title,
                      const struct trace_views *tv, size_t n, const char *const *parts,
                      const char *const *const *members, size_t n_parts, bool *rendered,
                      struct errmsg *e)
{
    static const char *const runs[3] = {"dense", "CTR", "CTR+ST"};
    if (n_parts > 16 || n > DISC_PLOTS_MAX_TRACES)
        return errmsg_set(e, ERR_USAGE, "too many FLOP parts or traces");
    double v[16 * 3 * DISC_PLOTS_MAX_TRACES];
    char names[3 * DISC_PLOTS_MAX_TRACES][LABEL_MAX + 16];
    const char *cats[3 * DISC_PLOTS_MAX_TRACES];
    size_t group[DISC_PLOTS_MAX_TRACES], ng = 0;
    double total[DISC_PLOTS_MAX_TRACES];
    for (size_t t = 0; t < n; t++) {
        const Acceltrace__DiscSummary *ds = tv_summary(&tv[t]);
        if (!ds)
            continue;
        double tot = 0.0;
        for (size_t s = 0; s < n_parts; s++)
            tot += flop_sum(ds->flops_dense, ds->n_flops_dense, tv[t].dh, members[s]);
        if (tot > 0)
            total[ng] = tot, group[ng++] = t;
    }
    if (ng == 0)
        return 0;
    const size_t nc = 3 * ng;
    for (size_t g = 0; g < ng; g++) {
        const struct trace_views *q = &tv[group[g]];
        const Acceltrace__DiscSummary *ds = tv_summary(q);
        const uint64_t *f[3] = {ds->flops_dense, ds->flops_ctr, ds->flops_all};
        const size_t nf[3] = {ds->n_flops_dense, ds->n_flops_ctr, ds->n_flops_all};
        for (size_t c = 0; c < 3; c++) {
            cats[3 * g + c] =
                series_name(names[3 * g + c], sizeof names[0], q, n, runs[c], runs[c]);
            for (size_t s = 0; s < n_parts; s++)
                v[s * nc + 3 * g + c] = 100.0 * flop_sum(f[c], nf[c], q->dh, members[s]) / total[g];
        }
    }
    struct plot *p = plot_new(name, PLOT_BARS);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    char t[256];
    if (n == 1) {
        const Acceltrace__DiscHeader *dh = tv[0].dh;
        snprintf(t, sizeof t, "%s: %s at %u px, %u steps", title, dh->model ? dh->model : "",
                 dh->image_size, dh->steps);
    } else {
        snprintf(t, sizeof t, "%s: each trace in %% of its own dense", title);
    }
    plot_title(p, t);
    plot_ylabel(p, "FLOPs, % of dense", "%");
    plot_extra(p, "set key outside right top");
    for (size_t g = 1; g < ng; g++) { /* bar c sits at x = c: a line between the groups */
        char cmd[160];
        snprintf(cmd, sizeof cmd,
                 "set arrow %zu from first %.1f, graph 0 to first %.1f, "
                 "graph 1 nohead dt 2 lc rgb 'gray50'",
                 g, 3.0 * (double)g - 0.5, 3.0 * (double)g - 0.5);
        plot_extra(p, cmd);
    }
    if (nc > 9)
        plot_size(p, 400 + 45 * (int)nc, 600);
    int rc = plot_bars(p, cats, nc, parts, n_parts, v, true);
    if (rc < 0)
        return plot_fail(p, rc, e);
    if ((rc = disc_plots_finish(p, out, rendered, e)) < 0)
        return rc;
    return disc_plots_bars_csv(out, name, cats, nc, parts, n_parts, v, e);
}

/* flops_self_attention (Fig. 17a: the self-attention classes) and flops_network (Fig. 17b:
 * the network in seven parts). */
static int plot_all_flops(const char *out, const struct trace_views *tv, size_t n, bool *rendered,
                          struct errmsg *e)
{
    static const char *const sa_parts[] = {"sa_qkv", "sa_qk", "sa_softmax", "sa_pv", "sa_proj"};
    static const char *const m_qkv[] = {"sa_qkv", NULL}, *const m_qk[] = {"sa_qk", NULL};
    static const char *const m_sm[] = {"sa_softmax", NULL}, *const m_pv[] = {"sa_pv", NULL};
    static const char *const m_proj[] = {"sa_proj", NULL};
    static const char *const *const sa_members[] = {m_qkv, m_qk, m_sm, m_pv, m_proj};
    int rc = plot_flops(out, "flops_self_attention", "Self-attention FLOPs (Fig. 17a)", tv, n,
                        sa_parts, sa_members, 5, rendered, e);
    if (rc < 0)
        return rc;
    static const char *const net_parts[] = {"SA linear",       "QK^T", "softmax", "PV",
                                            "cross-attention", "FFN",  "other"};
    static const char *const m_lin[] = {"sa_qkv", "sa_proj", NULL};
    static const char *const m_ca[] = {"ca_q",  "ca_kv",   "ca_qk", "ca_softmax",
                                       "ca_pv", "ca_proj", NULL};
    static const char *const m_ffn[] = {"ffn_up", "ffn_act", "ffn_down", NULL};
    static const char *const m_other[] = {"vec", "embed", NULL};
    static const char *const *const net_members[] = {m_lin, m_qk, m_sm, m_pv, m_ca, m_ffn, m_other};
    return plot_flops(out, "flops_network", "Network FLOPs (Fig. 17b)", tv, n, net_parts,
                      net_members, 7, rendered, e);
}

/* The capture views of docs/disc.md#figures items 1-6 from the traces' own records. */
int disc_plots_traces(const char *const *traces, size_t n, struct trace_reader *first,
                      const struct analyzer *extra, size_t n_extra, const char *out, bool *rendered,
                      struct errmsg *e)
{
    struct trace_views *tv = n ? mem_calloc(n, sizeof *tv) : NULL;
    if (!tv) {
        trace_reader_free(first);
        return n ? errmsg_set(e, ERR_NOMEM, "out of memory") : 0;
    }
    tv[0].r = first; /* trace_views_load reads it; trace_views_release frees it */
    int rc = 0;
    for (size_t t = 0; t < n && rc == 0; t++) {
        tv[t].path = traces[t];
        trace_label(tv, t);
        rc = trace_views_load(&tv[t], t ? NULL : extra, t ? 0 : n_extra, e);
    }
    if (rc == 0)
        rc = plot_step_lines(out, tv, n, rendered, e);
    if (rc == 0)
        rc = plot_heatmaps(out, tv, n, rendered, e);
    if (rc == 0)
        rc = plot_token_masks(out, &tv[0], rendered, e);
    if (rc == 0)
        rc = plot_latent(out, tv, n, rendered, e);
    if (rc == 0)
        rc = plot_quality(out, tv, n, rendered, e);
    if (rc == 0)
        rc = plot_all_flops(out, tv, n, rendered, e);
    for (size_t t = 0; t < n; t++)
        trace_views_release(&tv[t]);
    mem_free(tv);
    return rc;
}
