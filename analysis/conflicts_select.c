/*
 * conflicts_select: selection quality (recall and output cosine vs retention,
 * docs/salca.md#figures plot 4), Salca's set overshoot (plot 8) and the structure of the selected
 * sets per head class (sink and recent-16 hit rates, run lengths; selection_structure.csv) of the
 * conflicts analyzer, with their tables and plots. Shared state: conflicts_impl.h.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/conflicts_impl.h"
#include "common/grow.h"
#include "common/mem.h"
#include "traces/trace_salca.h"

/* Run-length bins of selection_structure.csv: 1, 2, 3-4, ..., 257+ tokens. */
#define SS_BINS 10
#define SS_RECENT 16 /* the recent-token test: all of the last 16 positions selected */

/* Structure of the selections of one (group, method, rho, head class). */
struct ss_row {
    char group[64], method[32], rho[24], cls[16];
    uint64_t sel, sink_hit, recent_hit, runs, tokens;
    uint64_t bins[SS_BINS]; /* selected tokens in runs of each length bin */
};

struct selstruct {
    struct ss_row *row;
    size_t n, cap;
    char *head_class; /* of the current trace: 'R'/'S' per (l, h) row-major, or NULL */
    uint32_t H;       /* heads per layer of the current trace */
    uint32_t sinks;   /* sink tokens of the current trace's source (4 without one) */
    uint32_t *idx;
    size_t idx_cap;
};

void conflicts_select_release(struct conflicts *c)
{
    if (!c->ss)
        return;
    mem_free(c->ss->row);
    mem_free(c->ss->head_class);
    mem_free(c->ss->idx);
    mem_free(c->ss);
    c->ss = NULL;
}

/* The head classes and the sink count of a trace, from its params_json (the calibrated
 * source's "calibrated" object, else the synthetic source's sink_tokens). */
static int ss_begin(struct conflicts *c, const Acceltrace__TraceHeader *hdr)
{
    if (!c->ss && !(c->ss = mem_calloc(1, sizeof *c->ss)))
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    struct selstruct *ss = c->ss;
    mem_free(ss->head_class);
    ss->head_class = NULL;
    ss->sinks = 4;
    ss->H = hdr && hdr->salca ? hdr->salca->n_heads : 0;
    if (!hdr || !hdr->params_json || !hdr->params_json[0])
        return 0;
    json_t *o = json_loads(hdr->params_json, 0, NULL);
    if (!o)
        return 0; /* the header's own checks report bad JSON; the classes are optional */
    json_t *cal = json_object_get(o, "calibrated"), *syn = json_object_get(o, "synthetic");
    json_t *sk = json_object_get(cal ? cal : syn, "sink_tokens");
    if (json_is_integer(sk) && json_integer_value(sk) >= 0 && json_integer_value(sk) < 65536)
        ss->sinks = (uint32_t)json_integer_value(sk);
    const char *hc = json_string_value(json_object_get(cal, "head_class"));
    if (hc && ss->H && hdr->salca && strlen(hc) == (size_t)ss->H * hdr->salca->n_layers) {
        size_t n = strlen(hc) + 1;
        if (!(ss->head_class = mem_alloc(n))) {
            json_decref(o);
            return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
        }
        memcpy(ss->head_class, hc, n);
    }
    json_decref(o);
    return 0;
}

int conflicts_begin_trace(struct conflicts *c, const Acceltrace__TraceHeader *hdr)
{
    int src = ss_begin(c, hdr);
    if (src < 0)
        return src;
    for (size_t i = 0; i < 64; i++) {
        const char *std = trace_salca_method_name((uint32_t)i);
        if (std)
            snprintf(c->method_names[i], sizeof c->method_names[i], "%s", std);
        else
            snprintf(c->method_names[i], sizeof c->method_names[i], "method_%zu", i);
    }
    snprintf(c->rho, sizeof c->rho, "?");
    if (!hdr || !hdr->salca)
        return 0;
    const Acceltrace__SalcaHeader *h = hdr->salca;
    if (h->rho && h->rho[0])
        snprintf(c->rho, sizeof c->rho, "%s", h->rho);
    for (size_t i = 0; i < h->n_methods; i++) {
        const Acceltrace__SalcaMethodInfo *m = h->methods[i];
        if (m && m->id < 64 && m->name && m->name[0])
            snprintf(c->method_names[m->id], sizeof c->method_names[m->id], "%s", m->name);
    }
    return 0;
}

size_t conflicts_n_quality(const struct conflicts *c)
{
    return c->n_qual;
}

static int add_quality(struct conflicts *c, const char *group, const Acceltrace__SalcaSelect *s)
{
    char method[32];
    if (s->method < 64 && c->method_names[0][0])
        snprintf(method, sizeof method, "%s", c->method_names[s->method]);
    else
        snprintf(method, sizeof method, "method_%u", s->method);
    if (!group || !*group)
        group = "all";
    if (!c->rho[0])
        snprintf(c->rho, sizeof c->rho, "?");
    struct qual *q = NULL;
    for (size_t i = 0; i < c->n_qual && !q; i++)
        if (!strncmp(c->qual[i].group, group, sizeof q->group - 1) &&
            !strcmp(c->qual[i].method, method) && !strcmp(c->qual[i].rho, c->rho))
            q = &c->qual[i];
    if (!q) {
        if (c->n_qual == 4096)
            return errmsg_set(&c->err, ERR_LIMIT, "more than 4096 (group, method, rho) keys");
        if (grow((void **)&c->qual, &c->cap_qual, c->n_qual + 1, sizeof *c->qual))
            return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
        q = &c->qual[c->n_qual++];
        memset(q, 0, sizeof *q);
        snprintf(q->group, sizeof q->group, "%s", group);
        snprintf(q->method, sizeof q->method, "%s", method);
        snprintf(q->rho, sizeof q->rho, "%s", c->rho);
    }
    /* recall and cosine are parallel arrays of q->cap: both grow to the same capacity */
    size_t cap_cos = q->cap;
    if (grow((void **)&q->cosine, &cap_cos, q->n + 1, sizeof *q->cosine) ||
        grow((void **)&q->recall, &q->cap, q->n + 1, sizeof *q->recall))
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    q->recall[q->n] = s->recall;
    q->cosine[q->n] = s->cosine;
    q->n++;
    q->ret_sum += s->n_ctx ? (double)s->count / (double)s->n_ctx : 0;
    return 0;
}

/* docs/salca.md#figures plot 8: (|S| - K)/n of Salca (method 0) into bins of 1/2000 of n. */
static int add_overshoot(struct conflicts *c, const Acceltrace__SalcaSelect *s)
{
    if (s->method != 0)
        return 0;
    if (s->n_ctx == 0 || s->count > s->n_ctx || s->count < s->k)
        return errmsg_set(&c->err, ERR_DATA,
                          "salca set size %u outside [K = %u, n_ctx = %u] (step %u layer %u "
                          "head %u)",
                          s->count, s->k, s->n_ctx, s->t, s->l, s->h);
    if (!c->over && !(c->over = mem_calloc(CONFLICTS_OVER_BINS_PER_N + 1, sizeof *c->over)))
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    uint64_t ov = (uint64_t)s->count - s->k;
    size_t b = (size_t)(ov * CONFLICTS_OVER_BINS_PER_N / s->n_ctx);
    c->over[b]++;
    if (b + 1 > c->over_bins)
        c->over_bins = b + 1;
    c->over_n++;
    c->over_sum += (double)ov / (double)s->n_ctx;
    /* ov/n > 0.19% [paper: the set grows by about half a bin, 0.19% of n;
     * docs/salca.md#int8-attention] */
    c->over_above += ov * 10000 > 19 * (uint64_t)s->n_ctx;
    return 0;
}

/* The row of (group, method, rho, class), created on first use; NULL when out of memory. */
static struct ss_row *ss_row_of(struct conflicts *c, const char *group, const char *method,
                                const char *cls)
{
    struct selstruct *ss = c->ss;
    for (size_t i = 0; i < ss->n; i++) {
        struct ss_row *r = &ss->row[i];
        if (!strncmp(r->group, group, sizeof r->group - 1) && !strcmp(r->method, method) &&
            !strcmp(r->rho, c->rho) && !strcmp(r->cls, cls))
            return r;
    }
    if (grow((void **)&ss->row, &ss->cap, ss->n + 1, sizeof *ss->row))
        return NULL;
    struct ss_row *r = &ss->row[ss->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->group, sizeof r->group, "%s", group);
    snprintf(r->method, sizeof r->method, "%s", method);
    snprintf(r->rho, sizeof r->rho, "%s", c->rho);
    snprintf(r->cls, sizeof r->cls, "%s", cls);
    return r;
}

/* Sink and recent-16 hits and the run lengths of one selection, by head class. */
static int add_structure(struct conflicts *c, const char *group, const Acceltrace__SalcaSelect *s)
{
    if (!c->ss && !(c->ss = mem_calloc(1, sizeof *c->ss)))
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    struct selstruct *ss = c->ss;
    /* a malformed list of a method the PC analysis ignores is ignored here too; one of the
     * analyzed method is the error the PC analysis reports (conflicts_add_select) */
    bool other = c->o.method >= 0 && s->method != (uint32_t)c->o.method;
    struct errmsg ign = {0}, *em = other ? &ign : &c->err;
    int rc = trace_salca_select_check(s, em);
    if (rc < 0)
        return other ? 0 : rc;
    if (s->count > ss->idx_cap) {
        uint32_t *p = mem_realloc(ss->idx, (size_t)s->count * sizeof *p);
        if (!p)
            return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
        ss->idx = p;
        ss->idx_cap = s->count;
    }
    size_t n = 0;
    if ((rc = trace_salca_select_decode(s, ss->idx, &n, em)) < 0)
        return other ? 0 : rc;
    const char *cls = "all";
    if (ss->head_class && ss->H && (size_t)s->l * ss->H + s->h < strlen(ss->head_class))
        cls = ss->head_class[(size_t)s->l * ss->H + s->h] == 'R' ? "retrieval" : "streaming";
    char method[32];
    snprintf(method, sizeof method, "%s", s->method < 64 ? c->method_names[s->method] : "method_x");
    struct ss_row *r = ss_row_of(c, group && *group ? group : "all", method, cls);
    if (!r)
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    const uint32_t *idx = ss->idx;
    uint32_t sinks = ss->sinks < s->n_ctx ? ss->sinks : s->n_ctx;
    uint32_t rec = s->n_ctx < SS_RECENT ? s->n_ctx : SS_RECENT;
    /* idx ascends (trace_salca_select_decode): the first `sinks` entries are 0..sinks-1
     * when every sink is selected, the last `rec` are n_ctx-rec..n_ctx-1 likewise */
    r->sink_hit += n >= sinks && (sinks == 0 || idx[sinks - 1] == sinks - 1);
    r->recent_hit += n >= rec && (rec == 0 || idx[n - rec] == s->n_ctx - rec);
    r->sel++;
    r->tokens += n;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && idx[j] == idx[j - 1] + 1)
            j++;
        size_t len = j - i, b = 0;
        while (b + 1 < SS_BINS && len > ((size_t)1 << b))
            b++;
        r->bins[b] += len;
        r->runs++;
        i = j;
    }
    return 0;
}

int conflicts_select_add(struct conflicts *c, const char *group, const Acceltrace__SalcaSelect *s)
{
    int rc = add_quality(c, group, s);
    if (rc >= 0)
        rc = add_structure(c, group, s);
    return rc < 0 ? rc : add_overshoot(c, s);
}

/* selection_structure.csv: per (group, method, rho, head class) the share of selections
 * holding every sink token and every one of the last 16 tokens, runs per selection, mean
 * run length and the share of the selected tokens that lie in runs of each length bin. */
static int write_structure(struct conflicts *c, const char *dir)
{
    if (!c->ss || !c->ss->n)
        return 0;
    struct csv_writer *w;
    int rc = conflicts_csv_open(c, dir, "selection_structure.csv", &w);
    if (rc < 0)
        return rc;
    static const char *const cols[] = {"group",
                                       "method",
                                       "rho",
                                       "head_class",
                                       "selections",
                                       "sink_hit_rate",
                                       "recent16_hit_rate",
                                       "runs_per_selection",
                                       "mean_run_len"};
    static const char *const bins[SS_BINS] = {"rl_1",       "rl_2",     "rl_3_4",   "rl_5_8",
                                              "rl_9_16",    "rl_17_32", "rl_33_64", "rl_65_128",
                                              "rl_129_256", "rl_257_up"};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
        csv_str(w, cols[k]);
    for (size_t k = 0; k < SS_BINS; k++)
        csv_str(w, bins[k]);
    csv_end_row(w);
    for (size_t i = 0; i < c->ss->n; i++) {
        const struct ss_row *r = &c->ss->row[i];
        double sel = r->sel ? (double)r->sel : 1, runs = r->runs ? (double)r->runs : 1;
        csv_str(w, r->group);
        csv_str(w, r->method);
        csv_str(w, r->rho);
        csv_str(w, r->cls);
        csv_u64(w, r->sel);
        csv_f64_fixed(w, (double)r->sink_hit / sel, 6);
        csv_f64_fixed(w, (double)r->recent_hit / sel, 6);
        csv_f64_fixed(w, (double)r->runs / sel, 3);
        csv_f64_fixed(w, (double)r->tokens / runs, 3);
        double tok = r->tokens ? (double)r->tokens : 1;
        for (size_t k = 0; k < SS_BINS; k++)
            csv_f64_fixed(w, (double)r->bins[k] / tok, 6);
        csv_end_row(w);
    }
    return conflicts_csv_close(c, w, dir, "selection_structure.csv");
}

void conflicts_overshoot(const struct conflicts *c, struct conflicts_overshoot *o)
{
    o->records = c->over_n;
    o->mean = c->over_n ? c->over_sum / (double)c->over_n : 0;
    o->above_paper = c->over_above;
    o->n_bins = c->over_bins;
    o->bins = c->over_bins ? c->over : NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* 5th percentile by nearest rank on a sorted copy (decision); v is reordered. */
static double p5(double *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return v[(size_t)floor(0.05 * (double)(n - 1))];
}

static double mean(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return n ? s / (double)n : 0;
}

/* One row of the quality tables: keys, jobs, mean retention, then the given columns. */
static void quality_keys(struct csv_writer *w, const struct qual *q)
{
    csv_str(w, q->group);
    csv_str(w, q->method);
    csv_str(w, q->rho);
    csv_u64(w, q->n);
    csv_f64_fixed(w, q->n ? q->ret_sum / (double)q->n : 0, 6);
}

int conflicts_write_quality(struct conflicts *c, const char *dir)
{
    if (!c->n_qual)
        return 0;
    struct csv_writer *w;
    int rc = write_structure(c, dir);
    if (rc < 0)
        return rc;
    rc = conflicts_csv_open(c, dir, "recall_vs_retention.csv", &w);
    if (rc < 0)
        return rc;
    static const char *const cols[] = {"group",     "method",         "rho",
                                       "jobs",      "retention_mean", "recall_mean",
                                       "recall_p5", "cosine_mean",    "cosine_p5"};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
        csv_str(w, cols[k]);
    csv_end_row(w);
    for (size_t i = 0; i < c->n_qual; i++) {
        struct qual *q = &c->qual[i];
        double rm = mean(q->recall, q->n), cm = mean(q->cosine, q->n);
        quality_keys(w, q);
        csv_f64_fixed(w, rm, 6);
        csv_f64_fixed(w, p5(q->recall, q->n), 6);
        csv_f64_fixed(w, cm, 6);
        csv_f64_fixed(w, p5(q->cosine, q->n), 6);
        csv_end_row(w);
    }
    if ((rc = conflicts_csv_close(c, w, dir, "recall_vs_retention.csv")) < 0)
        return rc;
    /* the cosine plot's own CSV (docs/salca.md#figures: a CSV beside each plot) */
    if ((rc = conflicts_csv_open(c, dir, "cosine_vs_retention.csv", &w)) < 0)
        return rc;
    static const char *const ccols[] = {"group",          "method",      "rho",      "jobs",
                                        "retention_mean", "cosine_mean", "cosine_p5"};
    for (size_t k = 0; k < sizeof ccols / sizeof ccols[0]; k++)
        csv_str(w, ccols[k]);
    csv_end_row(w);
    for (size_t i = 0; i < c->n_qual; i++) {
        struct qual *q = &c->qual[i];
        quality_keys(w, q);
        csv_f64_fixed(w, mean(q->cosine, q->n), 6);
        csv_f64_fixed(w, p5(q->cosine, q->n), 6);
        csv_end_row(w);
    }
    return conflicts_csv_close(c, w, dir, "cosine_vs_retention.csv");
}
/* docs/salca.md#figures plot 4: x mean |S|/n per rho (log), y mean recall (cosine), a series
 * per method, a panel per group; marks at 5% and 5.8% [paper retention targets]. The
 * documented 5th-percentile bars are drawn as a dashed series "METHOD p5" in the method's
 * colour (the plot driver has no error bars; decision). */
static int quality_plot(struct conflicts *c, const char *dir, bool *rendered, bool cosine)
{
    struct plot *p = plot_new(cosine ? "cosine_vs_retention" : "recall_vs_retention", PLOT_LINE);
    if (!p)
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    const char *ylab = cosine ? "output cosine" : "recall";
    plot_title(p, cosine ? "Output cosine vs retention (solid: mean, dashed: 5th percentile)"
                         : "Recall vs retention (solid: mean, dashed: 5th percentile)");
    plot_xlabel(p, "mean |S|/n", "");
    plot_ylabel(p, ylab, "");
    plot_logscale(p, true, false);
    plot_extra(p, "set arrow from first 0.05, graph 0 to first 0.05, graph 1 nohead dt 2");
    plot_extra(p, "set arrow from first 0.058, graph 0 to first 0.058, graph 1 nohead dt 3");
    plot_extra(p, "set label \"5%\" at first 0.05, graph 1 right offset -0.3,-0.8 front");
    plot_extra(p, "set label \"paper r_{min} 5.8%\" at first 0.058, graph 1 left offset "
                  "0.3,-0.8 front");
    /* distinct groups and methods, in order of appearance */
    const char *groups[CONFLICTS_MAX_GROUPS], *methods[64];
    size_t ng = 0, nm = 0;
    for (size_t i = 0; i < c->n_qual; i++) {
        bool seen = false;
        for (size_t g = 0; g < ng; g++)
            seen = seen || !strcmp(groups[g], c->qual[i].group);
        if (!seen && ng < CONFLICTS_MAX_GROUPS)
            groups[ng++] = c->qual[i].group;
        seen = false;
        for (size_t m = 0; m < nm; m++)
            seen = seen || !strcmp(methods[m], c->qual[i].method);
        if (!seen && nm < 64)
            methods[nm++] = c->qual[i].method;
    }
    /* Each panel plots, per method, the mean (solid) and the p5 (dashed) series in the
     * method's palette colour. One retention point (one trace) is no curve: say so, and
     * give the log axis a decade around it instead of a degenerate range. */
    double x_lo = INFINITY, x_hi = -INFINITY;
    size_t most = 0; /* points of the longest (group, method) series */
    for (size_t i = 0; i < c->n_qual; i++) {
        double xv = c->qual[i].n ? c->qual[i].ret_sum / (double)c->qual[i].n : 0;
        if (xv > 0) {
            x_lo = fmin(x_lo, xv);
            x_hi = fmax(x_hi, xv);
        }
        size_t same = 0;
        for (size_t j = 0; j < c->n_qual; j++)
            same += !strcmp(c->qual[j].group, c->qual[i].group) &&
                    !strcmp(c->qual[j].method, c->qual[i].method);
        most = same > most ? same : most;
    }
    if (most <= 1 && x_lo <= x_hi) {
        char line[160];
        snprintf(line, sizeof line, "set xrange [%.6g:%.6g]", fmin(x_lo / 3, 0.04),
                 fmax(x_hi * 3, 0.07));
        plot_extra(p, line);
        plot_extra(p, "set label 990 \"one retention point:\\ncapture at several\\n--retention "
                      "values\\nfor a curve\" at graph 0.03, graph 0.5 left front noenhanced");
    }
    int rc = 0;
    if (ng > 1) {
        /* A grid without empty panels (an empty panel fails to render on log axes). */
        int cols = (int)ng;
        static const int prefer[] = {3, 4, 2, 5};
        for (size_t k = 0; k < 4; k++)
            if (ng > (size_t)prefer[k] && ng % (size_t)prefer[k] == 0) {
                cols = prefer[k];
                break;
            }
        int rows = (int)ng / cols;
        plot_size(p, 420 * cols, 380 * rows + 60);
        rc = plot_panels(p, rows, cols);
        for (size_t g = 0; g < ng && rc == 0; g++)
            rc = plot_panel(p, (int)g, groups[g], "mean |S|/n", "", ylab, "");
    }
    size_t cap = c->n_qual ? c->n_qual : 1;
    double *x = mem_alloc(cap * sizeof *x), *y = mem_alloc(cap * sizeof *y),
           *y5 = mem_alloc(cap * sizeof *y5);
    if (!x || !y || !y5)
        rc = ERR_NOMEM;
    for (size_t g = 0; g < ng && rc == 0; g++)
        for (size_t m = 0; m < nm && rc == 0; m++) {
            size_t k = 0;
            for (size_t j = 0; j < c->n_qual; j++) {
                struct qual *q = &c->qual[j];
                if (strcmp(q->group, groups[g]) || strcmp(q->method, methods[m]))
                    continue;
                /* insertion by x so lines run left to right */
                double xv = q->n ? q->ret_sum / (double)q->n : 0;
                double *v = cosine ? q->cosine : q->recall;
                double yv = mean(v, q->n), y5v = p5(v, q->n);
                size_t i = k++;
                while (i > 0 && x[i - 1] > xv) {
                    x[i] = x[i - 1];
                    y[i] = y[i - 1];
                    y5[i] = y5[i - 1];
                    i--;
                }
                x[i] = xv;
                y[i] = yv;
                y5[i] = y5v;
            }
            if (!k)
                continue;
            char name[48];
            snprintf(name, sizeof name, "%s p5", methods[m]);
            rc = plot_series(p, ng > 1 ? (int)g : 0, methods[m], x, y, k);
            if (rc == 0)
                rc = plot_series_style(p, (int)m, 0);
            if (rc == 0)
                rc = plot_series(p, ng > 1 ? (int)g : 0, name, x, y5, k);
            if (rc == 0)
                rc = plot_series_style(p, (int)m, 1);
        }
    mem_free(x);
    mem_free(y);
    mem_free(y5);
    if (rc < 0) {
        plot_free(p);
        return errmsg_set(&c->err, rc, "cannot build the retention plot");
    }
    return conflicts_plot_done(c, p, dir, rendered);
}

int conflicts_write_quality_plots(struct conflicts *c, const char *dir, bool *rendered)
{
    if (!c->n_qual)
        return 0;
    int rc = quality_plot(c, dir, rendered, false);
    return rc < 0 ? rc : quality_plot(c, dir, rendered, true);
}

/* docs/salca.md#figures plot 8: overshoot.csv and the histogram of Salca's (|S| - K)/n in bins
 * of 0.05% of n, with a mark at the paper's 0.19%. */
int conflicts_write_overshoot(struct conflicts *c, const char *dir, bool *rendered)
{
    if (!c->over_n)
        return 0;
    const double w = 100.0 / CONFLICTS_OVER_BINS_PER_N; /* bin width, % of n */
    struct csv_writer *cw;
    int rc = conflicts_csv_open(c, dir, "overshoot.csv", &cw);
    if (rc < 0)
        return rc;
    static const char *const cols[] = {"bin_lo_pct_of_n", "bin_hi_pct_of_n", "records",
                                       "fraction_of_records"};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
        csv_str(cw, cols[k]);
    csv_end_row(cw);
    for (size_t b = 0; b < c->over_bins; b++) {
        csv_f64_fixed(cw, (double)b * w, 4);
        csv_f64_fixed(cw, (double)(b + 1) * w, 4);
        csv_u64(cw, c->over[b]);
        csv_f64_fixed(cw, (double)c->over[b] / (double)c->over_n, 6);
        csv_end_row(cw);
    }
    if ((rc = conflicts_csv_close(c, cw, dir, "overshoot.csv")) < 0)
        return rc;
    struct plot *p = plot_new("overshoot", PLOT_HIST);
    double *edges = mem_alloc((c->over_bins + 1) * sizeof *edges);
    double *frac = mem_alloc(c->over_bins * sizeof *frac);
    if (!p || !edges || !frac) {
        plot_free(p);
        mem_free(edges);
        mem_free(frac);
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    }
    for (size_t b = 0; b <= c->over_bins; b++)
        edges[b] = (double)b * w;
    for (size_t b = 0; b < c->over_bins; b++)
        frac[b] = (double)c->over[b] / (double)c->over_n;
    char title[160], name[96];
    snprintf(title, sizeof title,
             "Salca set overshoot over %llu selections (dashed: the paper's 0.19%%)",
             (unsigned long long)c->over_n);
    plot_title(p, title);
    plot_xlabel(p, "(|S| - K)/n", "% of n");
    plot_ylabel(p, "fraction of selections", "");
    plot_extra(p, "set xrange [0:*]");
    plot_extra(p, "set key top right");
    plot_extra(p, "set arrow from first 0.19, graph 0 to first 0.19, graph 1 nohead dt 2 lw 2");
    snprintf(name, sizeof name, "salca, mean %.3f%% of n", 100.0 * c->over_sum / (double)c->over_n);
    rc = plot_hist_bins(p, name, edges, frac, c->over_bins);
    mem_free(edges);
    mem_free(frac);
    if (rc < 0) {
        plot_free(p);
        return errmsg_set(&c->err, rc, "cannot build the overshoot plot");
    }
    return conflicts_plot_done(c, p, dir, rendered);
}
