/*
 * salca_report: the aggregates of a salca capture (docs/salca.md#metrics): the per-method result,
 * the summary table, the per-layer CSV and the Summary record (see salca_capture_impl.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/salca/salca_capture_impl.h"
#include "common/mem.h"
#include "common/progress.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void salca_stats(double *v, uint64_t n, double *mean, double *median, double *p5)
{
    if (n == 0) {
        *mean = *median = *p5 = 0;
        return;
    }
    double s = 0;
    for (uint64_t i = 0; i < n; i++)
        s += v[i];
    *mean = s / (double)n;
    qsort(v, n, sizeof *v, cmp_double);
    *median = v[(n - 1) / 2];
    *p5 = v[(uint64_t)floor(0.05 * (double)(n - 1))];
}

static void fill_table(struct salca_capture_result *res, const struct salca_capture_params *p)
{
    size_t off = 0, cap = sizeof res->table;
    off +=
        (size_t)snprintf(res->table + off, cap - off, "%-10s %7s %8s %8s %8s %8s %9s %9s %6s %8s\n",
                         "method", "jobs", "recall", "rec_p5", "cosine", "cos_p5", "retention",
                         "overshoot", "top1", "needles");
    for (int m = 0; m < SALCA_NSLOT && off < cap; m++) {
        const struct salca_capture_method *x = &res->m[m];
        if (!x->run)
            continue;
        char top1[16], nd[24];
        if (x->top1 >= 0)
            snprintf(top1, sizeof top1, "%.3f", x->top1);
        else
            snprintf(top1, sizeof top1, "-");
        if (x->spans_total)
            snprintf(nd, sizeof nd, "%u/%u", x->spans_recalled, x->spans_total);
        else
            snprintf(nd, sizeof nd, "-");
        off += (size_t)snprintf(res->table + off, cap - off,
                                "%-10s %7llu %8.4f %8.4f %8.4f %8.4f %8.3f%% %8.3f%% %6s %8s\n",
                                x->name, (unsigned long long)x->jobs, x->recall_mean, x->recall_p5,
                                x->cosine_mean, x->cosine_p5, 100 * x->retention_mean,
                                100 * x->overshoot_mean, top1, nd);
    }
    for (uint32_t v = 0; v < p->n_variants && off < cap; v++)
        off += (size_t)snprintf(res->table + off, cap - off, "abl%u: salca with %s\n", 16 + v,
                                p->variant_text[v]);
}

/* Writes one CSV row per (sample, method, layer) and one "all" row per method
 * (docs/salca.md#metrics aggregates). Job j of the arrays is in layer salca_job_layer(c, j). */
static int write_csv(const struct salca_capture_params *p, const struct salca_task *task,
                     const struct cap *c, uint64_t jobs, double *const *rec, double *const *cos,
                     double *const *ret, double *const *over, struct errmsg *e)
{
    FILE *f = fopen(p->csv_path, "w");
    if (!f)
        return errmsg_set(e, ERR_IO, "cannot create '%s'", p->csv_path);
    double *buf = mem_alloc((jobs + 1) * 4 * sizeof(double));
    if (!buf) {
        fclose(f);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    fprintf(f, "sample,task,method,layer,jobs,recall_mean,recall_median,recall_p5,"
               "cosine_mean,cosine_median,cosine_p5,retention_mean,overshoot_mean\n");
    for (int m = 0; m < SALCA_NSLOT; m++) {
        if (!slot_on(p, m))
            continue;
        for (int64_t l = 0; l <= (int64_t)c->L; l++) { /* l == L: every layer */
            uint64_t k = 0;
            double *r = buf, *co = buf + jobs + 1, sr = 0, so = 0;
            for (uint64_t j = 0; j < jobs; j++) {
                if (l < (int64_t)c->L && (int64_t)salca_job_layer(c, j) != l)
                    continue;
                r[k] = rec[m][j];
                co[k] = cos[m][j];
                sr += ret[m][j];
                so += over[m][j];
                k++;
            }
            double rm, rmed, rp5, cm, cmed, cp5;
            salca_stats(r, k, &rm, &rmed, &rp5);
            salca_stats(co, k, &cm, &cmed, &cp5);
            char layer[24];
            if (l < (int64_t)c->L)
                snprintf(layer, sizeof layer, "%lld", (long long)l);
            else
                snprintf(layer, sizeof layer, "all");
            char name[16];
            slot_name(m, name, sizeof name);
            fprintf(f, "%u,%s,%s,%s,%llu,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n", p->sample,
                    task->info->name, name, layer, (unsigned long long)k, rm, rmed, rp5, cm, cmed,
                    cp5, k ? sr / k : 0, k ? so / k : 0);
        }
    }
    mem_free(buf);
    if (fclose(f) != 0)
        return errmsg_set(e, ERR_IO, "cannot write '%s'", p->csv_path);
    return 0;
}

/* Sum of v[0..n) in order. */
static double sum_of(const double *v, uint64_t n)
{
    double s = 0;
    for (uint64_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* Puts the per-job values of the layer-major plan, made in (l, t, h) order, into the
 * step-major plan's (t, l, h) order through tmp, so that every mean below sums the same
 * values in the same order whatever the plan: the two plans' Summary records are equal. */
static void to_step_order(const struct cap *c, double *v, double *tmp)
{
    for (uint64_t t = 0, k = 0; t < c->N; t++)
        for (uint64_t l = 0; l < c->L; l++)
            for (uint64_t h = 0; h < c->H; h++)
                tmp[k++] = v[(l * c->N + t) * c->H + h];
    memcpy(v, tmp, (size_t)c->N * c->L * c->H * sizeof *v);
}

/* Phase 5a, one slot's aggregates into the result and its SalcaMethodSummary. */
static void summarize_slot(struct salca_capture *x, int m, Acceltrace__SalcaMethodSummary *ms)
{
    struct salca_acc *a = &x->acc;
    const struct cap *c = &x->c;
    uint64_t jobs = a->jobs_done;
    struct salca_capture_method *r = &x->res.m[m];
    r->run = true;
    r->id = slot_id(m);
    slot_name(m, r->name, sizeof r->name);
    r->jobs = jobs;
    salca_stats(a->recall[m], jobs, &r->recall_mean, &r->recall_median, &r->recall_p5);
    salca_stats(a->cos[m], jobs, &r->cosine_mean, &r->cosine_median, &r->cosine_p5);
    r->recall_min = jobs ? a->recall[m][0] : 0; /* sorted by stats() */
    r->cosine_min = jobs ? a->cos[m][0] : 0;
    r->retention_mean = jobs ? sum_of(a->ret[m], jobs) / jobs : 0;
    r->overshoot_mean = jobs ? sum_of(a->over[m], jobs) / jobs : 0;
    r->top1 = x->subst_on && c->N ? (double)a->agree[m] / c->N : -1.0;
    r->logit_diff = x->subst_on ? a->ldiff[m] : -1.0;
    r->spans_total = c->n_needles;
    r->span_coverage_min = 1.0;
    r->span_mass_mean = 1.0;
    for (uint32_t i = 0; i < c->n_needles; i++) {
        /* a needle span counts as recalled when the jobs keep on average >= 90% of its
         * dense attention mass (layers >= early_layers for synthetic) */
        double mean = a->cov_n[i] ? a->cov_sum[m][i] / a->cov_n[i] : 1.0;
        r->spans_recalled += mean >= 0.9;
        if (mean < r->span_mass_mean)
            r->span_mass_mean = mean;
        if (a->cov_min[m][i] < r->span_coverage_min)
            r->span_coverage_min = a->cov_min[m][i];
    }
    acceltrace__salca_method_summary__init(ms);
    ms->method = slot_id(m);
    ms->name = r->name;
    ms->jobs = r->jobs;
    ms->recall_mean = r->recall_mean;
    ms->recall_median = r->recall_median;
    ms->recall_p5 = r->recall_p5;
    ms->cosine_mean = r->cosine_mean;
    ms->cosine_median = r->cosine_median;
    ms->cosine_p5 = r->cosine_p5;
    ms->retention_mean = r->retention_mean;
    ms->overshoot_mean = r->overshoot_mean;
    ms->top1_agreement = r->top1;
    ms->spans_total = r->spans_total;
    ms->spans_recalled = r->spans_recalled;
    ms->runs_mean_len = jobs ? sum_of(a->runlen[m], jobs) / jobs : 0.0;
}

/* Phase 5, the summary (docs/salca.md#metrics aggregates): the CSV, the result and the Summary
 * record. */
int salca_emit_summary(struct salca_capture *x, struct capture_sink *sink, struct errmsg *e)
{
    struct salca_capture_result *res = &x->res;
    const struct cap *c = &x->c;
    res->n0 = c->n0;
    res->n_raw = x->task.n_raw;
    res->steps = c->N;
    res->L = c->L;
    res->H = c->H;
    res->G = c->G;
    res->d = c->d;
    if (x->p.csv_path) {
        int rc = write_csv(&x->p, &x->task, c, x->acc.jobs_done, x->acc.recall, x->acc.cos,
                           x->acc.ret, x->acc.over, e);
        if (rc)
            return rc;
    }
    uint64_t jobs = x->acc.jobs_done;
    if (c->layer_major && jobs == (uint64_t)c->N * c->L * c->H) {
        double *tmp = mem_alloc((jobs + 1) * sizeof *tmp);
        if (!tmp)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        for (int m = 0; m < SALCA_NSLOT; m++) {
            if (!slot_on(&x->p, m))
                continue;
            struct salca_acc *a = &x->acc;
            double *v[5] = {a->recall[m], a->cos[m], a->ret[m], a->over[m], a->runlen[m]};
            for (int i = 0; i < 5; i++)
                to_step_order(c, v[i], tmp);
        }
        mem_free(tmp);
    }
    Acceltrace__SalcaMethodSummary ms[SALCA_NSLOT], *msp[SALCA_NSLOT];
    size_t nm = 0;
    for (int m = 0; m < SALCA_NSLOT; m++) {
        if (!slot_on(&x->p, m))
            continue;
        summarize_slot(x, m, &ms[nm]);
        msp[nm] = &ms[nm];
        nm++;
    }
    fill_table(res, &x->p);
    res->wall_seconds = progress_now_s() - x->t_start;
    Acceltrace__SalcaSummary ss = ACCELTRACE__SALCA_SUMMARY__INIT;
    ss.n_methods = nm;
    ss.methods = msp;
    ss.selects = res->selects;
    ss.sel_bytes = res->sel_bytes;
    ss.table = res->table;
    Acceltrace__Summary sm = ACCELTRACE__SUMMARY__INIT;
    sm.workload = (char *)capture_salca_ops.name;
    /* wall time stays out of the record so equal runs give equal bytes (the determinism check) */
    sm.wall_seconds = 0;
    sm.salca = &ss;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_SUMMARY;
    rec.summary = &sm;
    return capture_emit(sink, &rec, NULL, e);
}
