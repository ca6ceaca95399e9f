/*
 * overshoot: Salca's set overshoot, its table and histogram (see the header).
 */
#include "analysis/overshoot.h"

#include <stdio.h>

#include "analysis/analyzer.h"
#include "analysis/salca_out.h"
#include "common/io.h"
#include "common/mem.h"
#include "traces/trace_reader.h"
#include "traces/trace_salca.h"

struct overshoot {
    uint64_t *bins; /* (OVERSHOOT_BINS_PER_N + 1) counts, allocated on the first record */
    size_t n_bins;  /* one past the last non-empty bin */
    uint64_t n, above;
    double sum; /* of (|S| - K)/n */
    /* the analyzer form (overshoot_analyzer) */
    const char *dir;
    bool *rendered;
};

int overshoot_new(struct overshoot **out, struct errmsg *e)
{
    if (!(*out = mem_calloc(1, sizeof **out)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    return 0;
}

void overshoot_free(struct overshoot *o)
{
    if (!o)
        return;
    mem_free(o->bins);
    mem_free(o);
}

/* docs/salca.md#figures plot 8: (|S| - K)/n of Salca (method 0) into bins of 1/2000 of n. */
int overshoot_add(struct overshoot *o, const Acceltrace__SalcaSelect *s, struct errmsg *e)
{
    if (s->method != 0)
        return 0;
    if (s->n_ctx == 0 || s->count > s->n_ctx || s->count < s->k)
        return errmsg_set(e, ERR_DATA,
                          "salca set size %u outside [K = %u, n_ctx = %u] (step %u layer %u "
                          "head %u)",
                          s->count, s->k, s->n_ctx, s->t, s->l, s->h);
    if (!o->bins && !(o->bins = mem_calloc(OVERSHOOT_BINS_PER_N + 1, sizeof *o->bins)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    uint64_t ov = (uint64_t)s->count - s->k;
    size_t b = (size_t)(ov * OVERSHOOT_BINS_PER_N / s->n_ctx);
    o->bins[b]++;
    if (b + 1 > o->n_bins)
        o->n_bins = b + 1;
    o->n++;
    o->sum += (double)ov / (double)s->n_ctx;
    /* ov/n > 0.19% [paper: the set grows by about half a bin, 0.19% of n;
     * docs/salca.md#int8-attention] */
    o->above += ov * 10000 > 19 * (uint64_t)s->n_ctx;
    return 0;
}

void overshoot_stats(const struct overshoot *o, struct overshoot_stats *st)
{
    st->records = o->n;
    st->mean = o->n ? o->sum / (double)o->n : 0;
    st->above_paper = o->above;
    st->n_bins = o->n_bins;
    st->bins = o->n_bins ? o->bins : NULL;
}

/* The histogram of Salca's (|S| - K)/n in bins of 0.05% of n, with a mark at the paper's
 * 0.19% (docs/salca.md#figures plot 8). */
static int overshoot_plot(struct overshoot *o, const char *dir, bool *rendered, struct errmsg *e)
{
    const double w = 100.0 / OVERSHOOT_BINS_PER_N; /* bin width, % of n */
    struct plot *p = plot_new("overshoot", PLOT_HIST);
    double *edges = mem_alloc((o->n_bins + 1) * sizeof *edges);
    double *frac = mem_alloc(o->n_bins * sizeof *frac);
    if (!p || !edges || !frac) {
        plot_free(p);
        mem_free(edges);
        mem_free(frac);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    for (size_t b = 0; b <= o->n_bins; b++)
        edges[b] = (double)b * w;
    for (size_t b = 0; b < o->n_bins; b++)
        frac[b] = (double)o->bins[b] / (double)o->n;
    char title[160], name[96];
    snprintf(title, sizeof title,
             "Salca set overshoot over %llu selections (dashed: the paper's 0.19%%)",
             (unsigned long long)o->n);
    plot_title(p, title);
    plot_xlabel(p, "(|S| - K)/n", "% of n");
    plot_ylabel(p, "fraction of selections", "");
    plot_extra(p, "set xrange [0:*]");
    plot_extra(p, "set key top right");
    plot_extra(p, "set arrow from first 0.19, graph 0 to first 0.19, graph 1 nohead dt 2 lw 2");
    snprintf(name, sizeof name, "salca, mean %.3f%% of n", 100.0 * o->sum / (double)o->n);
    int rc = plot_hist_bins(p, name, edges, frac, o->n_bins);
    mem_free(edges);
    mem_free(frac);
    if (rc < 0) {
        plot_free(p);
        return errmsg_set(e, rc, "cannot build the overshoot plot");
    }
    return salca_out_plot(p, dir, rendered, e);
}

int overshoot_write(struct overshoot *o, const char *dir, bool *rendered, struct errmsg *e)
{
    bool r = true;
    if (!rendered)
        rendered = &r;
    if (!o->n)
        return 0;
    int rc = io_mkdir_p(dir, 0777, e);
    if (rc)
        return rc;
    const double w = 100.0 / OVERSHOOT_BINS_PER_N; /* bin width, % of n */
    struct csv_writer *cw;
    if ((rc = salca_out_csv_open(dir, "overshoot.csv", &cw, e)) < 0)
        return rc;
    static const char *const cols[] = {"bin_lo_pct_of_n", "bin_hi_pct_of_n", "records",
                                       "fraction_of_records"};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
        csv_str(cw, cols[k]);
    csv_end_row(cw);
    for (size_t b = 0; b < o->n_bins; b++) {
        csv_f64_fixed(cw, (double)b * w, 4);
        csv_f64_fixed(cw, (double)(b + 1) * w, 4);
        csv_u64(cw, o->bins[b]);
        csv_f64_fixed(cw, (double)o->bins[b] / (double)o->n, 6);
        csv_end_row(cw);
    }
    if ((rc = salca_out_csv_close(cw, dir, "overshoot.csv", e)) < 0)
        return rc;
    return overshoot_plot(o, dir, rendered, e);
}

/* ---- the analyzer of a trace pass ---- */

static int ov_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    (void)self;
    return trace_salca_header_check(trace_reader_header(pos->r), pos->path, e);
}

static int ov_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                     struct errmsg *e)
{
    const Acceltrace__Record *r = *rec;
    if (r->body_case != ACCELTRACE__RECORD__BODY_SALCA_SELECT)
        return 0;
    int rc = overshoot_add(self, r->salca_select, e);
    return rc < 0 ? analyzer_record_error(rc, pos, e) : 0;
}

static int ov_finish(void *self, struct errmsg *e)
{
    struct overshoot *o = self;
    return o->dir ? overshoot_write(o, o->dir, o->rendered, e) : 0;
}

static const struct analyzer_ops overshoot_ops = {
    .name = "overshoot",
    .begin = ov_begin,
    .record = ov_record,
    .finish = ov_finish,
};

void overshoot_analyzer(struct overshoot *o, const char *dir, bool *rendered, struct analyzer *out)
{
    o->dir = dir;
    o->rendered = rendered;
    out->ops = &overshoot_ops;
    out->self = o;
}
