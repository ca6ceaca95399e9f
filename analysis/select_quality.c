/*
 * select_quality: recall and cosine of every selection method and the structure of the
 * selected sets, their tables and plots (see the header).
 */
#include "analysis/select_quality.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/salca_out.h"
#include "common/grow.h"
#include "common/io.h"
#include "common/mem.h"
#include "traces/trace_reader.h"
#include "traces/trace_salca.h"

/* Quality of one (group, method, rho): values kept for the 5th percentiles. */
struct qual {
    char group[64], method[32], rho[24];
    size_t n, cap;
    double *recall, *cosine;
    double ret_sum;
};

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

struct select_quality {
    int32_t strict_method; /* malformed lists of this method are errors; -1 = every */
    struct qual *qual;
    size_t n_qual, cap_qual;
    char rho[24];
    char method_names[64][32]; /* by method id < 64, from the trace header */
    struct selstruct ss;
    /* the analyzer form (select_quality_analyzer) */
    const char *group_mode;
    const char *group; /* of the current trace (set by begin) */
    const char *dir;
    bool *rendered;
};

int select_quality_new(struct select_quality **out, int32_t strict_method, struct errmsg *e)
{
    if (!(*out = mem_calloc(1, sizeof **out)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    (*out)->strict_method = strict_method;
    return 0;
}

void select_quality_free(struct select_quality *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->n_qual; i++) {
        mem_free(q->qual[i].recall);
        mem_free(q->qual[i].cosine);
    }
    mem_free(q->qual);
    mem_free(q->ss.row);
    mem_free(q->ss.head_class);
    mem_free(q->ss.idx);
    mem_free(q);
}

/* The head classes and the sink count of a trace, from its params_json (the calibrated
 * source's "calibrated" object, else the synthetic source's sink_tokens). */
static int ss_begin(struct select_quality *c, const Acceltrace__TraceHeader *hdr, struct errmsg *e)
{
    struct selstruct *ss = &c->ss;
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
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        }
        memcpy(ss->head_class, hc, n);
    }
    json_decref(o);
    return 0;
}

int select_quality_begin_trace(struct select_quality *c, const Acceltrace__TraceHeader *hdr,
                               struct errmsg *e)
{
    int src = ss_begin(c, hdr, e);
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

static int add_quality(struct select_quality *c, const char *group,
                       const Acceltrace__SalcaSelect *s, struct errmsg *e)
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
            return errmsg_set(e, ERR_LIMIT, "more than 4096 (group, method, rho) keys");
        if (grow((void **)&c->qual, &c->cap_qual, c->n_qual + 1, sizeof *c->qual))
            return errmsg_set(e, ERR_NOMEM, "out of memory");
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
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    q->recall[q->n] = s->recall;
    q->cosine[q->n] = s->cosine;
    q->n++;
    q->ret_sum += s->n_ctx ? (double)s->count / (double)s->n_ctx : 0;
    return 0;
}

/* The row of (group, method, rho, class), created on first use; NULL when out of memory. */
static struct ss_row *ss_row_of(struct select_quality *c, const char *group, const char *method,
                                const char *cls)
{
    struct selstruct *ss = &c->ss;
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
static int add_structure(struct select_quality *c, const char *group,
                         const Acceltrace__SalcaSelect *s, struct errmsg *e)
{
    struct selstruct *ss = &c->ss;
    /* a malformed list of a method other than strict_method is left out silently (the
     * conflict analyzer ignores that method too); one of strict_method is an error, the
     * same one conflicts_add_select reports for it */
    bool other = c->strict_method >= 0 && s->method != (uint32_t)c->strict_method;
    struct errmsg ign = {0}, *em = other ? &ign : e;
    int rc = trace_salca_select_check(s, em);
    if (rc < 0)
        return other ? 0 : rc;
    if (s->count > ss->idx_cap) {
        uint32_t *p = mem_realloc(ss->idx, (size_t)s->count * sizeof *p);
        if (!p)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
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
        return errmsg_set(e, ERR_NOMEM, "out of memory");
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

/* selection_structure.csv: per (group, method, rho, head class) the share of selections
 * holding every sink token and every one of the last 16 tokens, runs per selection, mean
 * run length and the share of the selected tokens that lie in runs of each length bin. */
static int write_structure(struct select_quality *c, const char *dir, struct errmsg *e)
{
    if (!c->ss.n)
        return 0;
    struct csv_writer *w;
    int rc = salca_out_csv_open(dir, "selection_structure.csv", &w, e);
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
    for (size_t i = 0; i < c->ss.n; i++) {
        const struct ss_row *r = &c->ss.row[i];
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
    return salca_out_csv_close(w, dir, "selection_structure.csv", e);
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

static int write_quality(struct select_quality *c, const char *dir, struct errmsg *e)
{
    if (!c->n_qual)
        return 0;
    struct csv_writer *w;
    int rc = write_structure(c, dir, e);
    if (rc < 0)
        return rc;
    rc = salca_out_csv_open(dir, "recall_vs_retention.csv", &w, e);
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
    if ((rc = salca_out_csv_close(w, dir, "recall_vs_retention.csv", e)) < 0)
        return rc;
    /* the cosine plot's own CSV (docs/salca.md#figures: a CSV beside each plot) */
    if ((rc = salca_out_csv_open(dir, "cosine_vs_retention.csv", &w, e)) < 0)
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
    return salca_out_csv_close(w, dir, "cosine_vs_retention.csv", e);
}
/* docs/salca.md#figures plot 4: x mean |S|/n per rho (log), y mean recall (cosine), a series
 * per method, a panel per group; marks at 5% and 5.8% [paper retention targets]. The
 * documented 5th-percentile bars are drawn as a dashed series "METHOD p5" in the method's
 * colour (the plot driver has no error bars; decision). */
static int quality_plot(struct select_quality *c, const char *dir, bool *rendered, bool cosine,
                        struct errmsg *e)
{
    struct plot *p = plot_new(cosine ? "cosine_vs_retention" : "recall_vs_retention", PLOT_LINE);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
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
    const char *groups[SELECT_QUALITY_MAX_GROUPS], *methods[64];
    size_t ng = 0, nm = 0;
    for (size_t i = 0; i < c->n_qual; i++) {
        bool seen = false;
        for (size_t g = 0; g < ng; g++)
            seen = seen || !strcmp(groups[g], c->qual[i].group);
        if (!seen && ng < SELECT_QUALITY_MAX_GROUPS)
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
        return errmsg_set(e, rc, "cannot build the retention plot");
    }
    return salca_out_plot(p, dir, rendered, e);
}

static int write_quality_plots(struct select_quality *c, const char *dir, bool *rendered,
                               struct errmsg *e)
{
    if (!c->n_qual)
        return 0;
    int rc = quality_plot(c, dir, rendered, false, e);
    return rc < 0 ? rc : quality_plot(c, dir, rendered, true, e);
}

size_t select_quality_n_rows(const struct select_quality *q)
{
    return q->n_qual;
}

int select_quality_add(struct select_quality *q, const char *group,
                       const Acceltrace__SalcaSelect *s, struct errmsg *e)
{
    int rc = add_quality(q, group, s, e);
    return rc < 0 ? rc : add_structure(q, group, s, e);
}

int select_quality_write(struct select_quality *q, const char *dir, bool *rendered,
                         struct errmsg *e)
{
    bool r = true;
    if (!rendered)
        rendered = &r;
    if (!q->n_qual)
        return 0;
    int rc = io_mkdir_p(dir, 0777, e);
    if (rc == 0)
        rc = write_quality(q, dir, e);
    return rc < 0 ? rc : write_quality_plots(q, dir, rendered, e);
}

/* ---- the analyzer of a trace pass ---- */

static int sq_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    struct select_quality *q = self;
    const Acceltrace__TraceHeader *hdr = trace_reader_header(pos->r);
    int rc = trace_salca_header_check(hdr, pos->path, e);
    if (rc < 0)
        return rc;
    q->group = trace_salca_group(hdr, q->group_mode, pos->path);
    return select_quality_begin_trace(q, hdr, e);
}

static int sq_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                     struct errmsg *e)
{
    struct select_quality *q = self;
    const Acceltrace__Record *r = *rec;
    if (r->body_case != ACCELTRACE__RECORD__BODY_SALCA_SELECT)
        return 0;
    int rc = select_quality_add(q, q->group, r->salca_select, e);
    return rc < 0 ? analyzer_record_error(rc, pos, e) : 0;
}

static int sq_finish(void *self, struct errmsg *e)
{
    struct select_quality *q = self;
    return q->dir ? select_quality_write(q, q->dir, q->rendered, e) : 0;
}

static const struct analyzer_ops select_quality_ops = {
    .name = "select_quality",
    .begin = sq_begin,
    .record = sq_record,
    .finish = sq_finish,
};

void select_quality_analyzer(struct select_quality *q, const char *group_mode, const char *dir,
                             bool *rendered, struct analyzer *out)
{
    q->group_mode = group_mode;
    q->dir = dir;
    q->rendered = rendered;
    out->ops = &select_quality_ops;
    out->self = q;
}
