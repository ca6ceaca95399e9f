/*
 * conflicts: channel-conflict analyzer of Salca traces (specs/salca.md sections 11-12;
 * docs/models.md#salca-replay).
 */
#include "analysis/conflicts.h"

#include <errno.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analyzer.h"
#include "analysis/plot.h"
#include "common/buf.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "traces/trace_salca.h"
#include "traces/trace_reader.h"
#include "replay/salca_model.h"

#define MAX_POL (1 + CONFLICTS_MAX_DEPTHS + CONFLICTS_MAX_WINDOWS)
#define MAX_P_ISS 4096

struct pol {
    struct hbm_pc_policy_cfg cfg;
    char name[32];
    uint64_t occ[CONFLICTS_OCC_BINS];
};

struct grp {
    char name[64];
    uint64_t jobs, nonempty, tokens, ideal, max_load;
    uint64_t slots[MAX_POL];
    double ajob_sum[MAX_POL], ajob_max[MAX_POL];
};

struct layer_acc {
    uint64_t jobs, ideal, max_load;
    uint64_t slots[MAX_POL];
};

/* Quality of one (group, method, rho): values kept for the 5th percentiles. */
struct qual {
    char group[64], method[32], rho[24];
    size_t n, cap;
    double *recall, *cosine;
    double ret_sum;
};

/* Heavy-channel stability of one (layer, prefix length m). */
struct stab {
    uint32_t l, m;
    uint64_t n, n_mass;
    double jsum, jmin;
    double msum; /* share of the final set's S mass the prefix set holds (n_mass sets) */
};

struct conflicts {
    struct conflicts_opts o;
    size_t n_pol;
    struct pol pol[MAX_POL];
    size_t n_grp;
    struct grp grp[CONFLICTS_MAX_GROUPS];
    size_t n_layers;
    struct layer_acc *layers;
    bool map_ok[3];
    uint64_t *conf[3]; /* conflicts per batch, p_iss bins, per map */
    struct hbm_pc_work work;
    uint16_t *pc, *pc2;
    uint32_t *idx;
    size_t cap, idx_cap;
    struct errmsg err;
    struct qual *qual;
    size_t n_qual, cap_qual;
    struct buf jobs_csv; /* per-job rows (opts.per_job) */
    char rho[24];
    char method_names[64][32]; /* by method id < 64, from the trace header */
    struct stab *stab;         /* sorted by (l, m) */
    size_t n_stab, cap_stab;
    uint64_t prefills, prefills_bare; /* SalcaPrefill records; those without the ladder */
    uint64_t *over;            /* (CONFLICTS_OVER_BINS_PER_N + 1) Salca overshoot bins */
    size_t over_bins;          /* one past the last non-empty bin */
    uint64_t over_n, over_above;
    double over_sum;
    struct tim *tim; /* timing mode state (opts.timing), else NULL */
};

/* Timing mode (issue 19): per policy totals and the running time base (refresh phase). */
struct tim {
    struct hbm_timing_cfg cfg;
    struct hbm_timing_work work;
    uint32_t *seq; /* 0..cap-1: the perfectly spread job */
    uint16_t *seq_pc;
    size_t cap;
    struct conflicts_timing acc[MAX_POL];
    uint64_t t0[MAX_POL], t0_spread[MAX_POL];
};

void conflicts_opts_default(struct conflicts_opts *o)
{
    memset(o, 0, sizeof *o);
    o->map.map = HBM_PC_MAP_MOD;
    o->map.h_att = 16; /* design h_att [paper] */
    o->map.seed = 0;
    /* spec section 11 says att_base = h_pre; 16 is the design point's h_pre (h 16/16, spec
     * 9), not the final design's 11 (decision; it only renumbers the reported PCs) */
    o->att_base = 16;
    o->p_iss = 0;
    /* in-order, then W in {16, 32, ..., 1024} (spec sections 11 and 12.3) */
    static const uint32_t w[] = {0, 16, 32, 64, 128, 256, 512, 1024};
    o->n_windows = sizeof w / sizeof w[0];
    memcpy(o->windows, w, sizeof w);
    o->n_depths = 3;
    o->depths[0] = 1;
    o->depths[1] = 2;
    o->depths[2] = 4;
    o->method = 0;
}

int conflicts_new(struct conflicts **out, const struct conflicts_opts *opts, struct errmsg *e)
{
    *out = NULL;
    int rc = hbm_pc_mapping_check(&opts->map, e);
    if (rc < 0)
        return rc;
    uint32_t p_iss = opts->p_iss ? opts->p_iss : opts->map.h_att;
    if (p_iss > MAX_P_ISS)
        return errmsg_set(e, ERR_CONFIG, "issue width %u above %d", p_iss, MAX_P_ISS);
    if (opts->n_windows > CONFLICTS_MAX_WINDOWS || opts->n_depths > CONFLICTS_MAX_DEPTHS)
        return errmsg_set(e, ERR_CONFIG, "at most %d windows and %d FIFO depths",
                          CONFLICTS_MAX_WINDOWS, CONFLICTS_MAX_DEPTHS);
    if (opts->n_depths == 0)
        return errmsg_set(e, ERR_CONFIG, "at least one in-order FIFO depth is needed");
    for (size_t i = 0; i < opts->n_depths; i++)
        if (opts->depths[i] < 1 || opts->depths[i] > 1u << 20)
            return errmsg_set(e, ERR_CONFIG, "FIFO depth %u outside [1, 1048576]",
                              opts->depths[i]);
    for (size_t i = 0; i < opts->n_windows; i++)
        if (opts->windows[i] > 1u << 24)
            return errmsg_set(e, ERR_CONFIG, "window %u above 16777216", opts->windows[i]);
    struct conflicts *c = mem_calloc(1, sizeof *c);
    if (!c)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    c->o = *opts;
    c->o.p_iss = p_iss;
    struct pol *p = &c->pol[c->n_pol++];
    p->cfg = (struct hbm_pc_policy_cfg){HBM_PC_BATCH, p_iss, 1, 0};
    snprintf(p->name, sizeof p->name, "batch");
    for (size_t i = 0; i < opts->n_depths; i++) {
        p = &c->pol[c->n_pol++];
        p->cfg = (struct hbm_pc_policy_cfg){HBM_PC_INORDER, p_iss, opts->depths[i], 0};
        snprintf(p->name, sizeof p->name, "inorder_d%u", opts->depths[i]);
    }
    for (size_t i = 0; i < opts->n_windows; i++) {
        if (opts->windows[i] == 0)
            continue;
        p = &c->pol[c->n_pol++];
        p->cfg = (struct hbm_pc_policy_cfg){HBM_PC_WINDOW, p_iss, 1, opts->windows[i]};
        snprintf(p->name, sizeof p->name, "window_%u", opts->windows[i]);
    }
    for (int m = 0; m < 3; m++) {
        struct hbm_pc_mapping mm = opts->map;
        mm.map = (enum hbm_pc_map)m;
        c->map_ok[m] = hbm_pc_mapping_check(&mm, NULL) == 0;
        c->conf[m] = mem_calloc(p_iss, sizeof(uint64_t));
        if (!c->conf[m]) {
            conflicts_free(c);
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        }
    }
    if (opts->timing) {
        if ((rc = hbm_timing_check(opts->timing, e)) < 0) {
            conflicts_free(c);
            return rc;
        }
        if (!(c->tim = mem_calloc(1, sizeof *c->tim))) {
            conflicts_free(c);
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        }
        c->tim->cfg = *opts->timing;
        c->o.timing = &c->tim->cfg;
    }
    *out = c;
    return 0;
}

void conflicts_free(struct conflicts *c)
{
    if (!c)
        return;
    for (int m = 0; m < 3; m++)
        mem_free(c->conf[m]);
    mem_free(c->layers);
    mem_free(c->pc);
    mem_free(c->pc2);
    mem_free(c->idx);
    hbm_pc_work_release(&c->work);
    for (size_t i = 0; i < c->n_qual; i++) {
        mem_free(c->qual[i].recall);
        mem_free(c->qual[i].cosine);
    }
    mem_free(c->qual);
    mem_free(c->stab);
    mem_free(c->over);
    buf_release(&c->jobs_csv);
    if (c->tim) {
        hbm_timing_work_release(&c->tim->work);
        mem_free(c->tim->seq);
        mem_free(c->tim->seq_pc);
        mem_free(c->tim);
    }
    mem_free(c);
}

const char *conflicts_errmsg(const struct conflicts *c)
{
    return errmsg_text(&c->err);
}

static int find_group(struct conflicts *c, const char *name, size_t *g)
{
    if (!name || !*name)
        name = "all";
    for (size_t i = 0; i < c->n_grp; i++)
        if (!strncmp(c->grp[i].name, name, sizeof c->grp[i].name - 1)) {
            *g = i;
            return 0;
        }
    if (c->n_grp == CONFLICTS_MAX_GROUPS)
        return errmsg_set(&c->err, ERR_LIMIT, "more than %d groups", CONFLICTS_MAX_GROUPS);
    struct grp *gr = &c->grp[c->n_grp];
    memset(gr, 0, sizeof *gr);
    snprintf(gr->name, sizeof gr->name, "%s", name);
    *g = c->n_grp++;
    return 0;
}

static int reserve(struct conflicts *c, size_t n)
{
    if (hbm_pc_work_reserve(&c->work, n) < 0)
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    if (n <= c->cap)
        return 0;
    size_t cap = c->cap ? c->cap : 4096;
    while (cap < n)
        cap *= 2;
    uint16_t *a = mem_realloc(c->pc, cap * sizeof *a);
    if (!a)
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    c->pc = a;
    uint16_t *b = mem_realloc(c->pc2, cap * sizeof *b);
    if (!b)
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    c->pc2 = b;
    c->cap = cap;
    return 0;
}

static int add_job_t(struct conflicts *c, const char *group, int64_t t, uint32_t l, uint32_t h,
                     const uint32_t *idx, size_t n);

int conflicts_add_job(struct conflicts *c, const char *group, uint32_t l, uint32_t h,
                      const uint32_t *idx, size_t n)
{
    return add_job_t(c, group, -1, l, h, idx, n);
}

/* Replays one job (pcs already mapped into c->pc) and its perfectly spread twin under
 * every policy in the timing mode; jobs run back to back for the refresh phase. */
static int timing_job(struct conflicts *c, const uint32_t *idx, size_t n)
{
    struct tim *tm = c->tim;
    uint32_t ha = c->o.map.h_att;
    if (hbm_timing_work_reserve(&tm->work, n, ha) < 0)
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    if (n > tm->cap) {
        uint32_t *q = mem_realloc(tm->seq, n * sizeof *q);
        if (q)
            tm->seq = q;
        uint16_t *qp = q ? mem_realloc(tm->seq_pc, n * sizeof *qp) : NULL;
        if (!qp)
            return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
        tm->seq_pc = qp;
        for (size_t k = tm->cap; k < n; k++) {
            tm->seq[k] = (uint32_t)k;
            tm->seq_pc[k] = (uint16_t)(k % ha);
        }
        tm->cap = n;
    }
    uint64_t ideal = hbm_timing_ideal(&tm->cfg, n, ha);
    for (size_t i = 0; i < c->n_pol; i++) {
        struct hbm_timing_result r, rs;
        hbm_timing_run(&tm->cfg, &c->pol[i].cfg, idx, c->pc, n, ha, tm->t0[i], &tm->work, &r);
        hbm_timing_run(&tm->cfg, &c->pol[i].cfg, tm->seq, tm->seq_pc, n, ha, tm->t0_spread[i],
                       &tm->work, &rs);
        struct conflicts_timing *a = &tm->acc[i];
        a->jobs++;
        a->tokens += n;
        a->ideal_cycles += ideal;
        a->cycles += r.cycles;
        a->spread_cycles += rs.cycles;
        a->row_hits += r.row_hits;
        a->row_misses += r.row_misses;
        tm->t0[i] += r.cycles;
        tm->t0_spread[i] += rs.cycles;
    }
    return 0;
}

int conflicts_timing_totals(const struct conflicts *c, size_t policy, struct conflicts_timing *t)
{
    if (!c->tim || policy >= c->n_pol)
        return ERR_USAGE;
    *t = c->tim->acc[policy];
    t->time_over_ideal = t->ideal_cycles ? (double)t->cycles / (double)t->ideal_cycles : 0;
    t->alpha = t->spread_cycles ? (double)t->cycles / (double)t->spread_cycles : 0;
    return 0;
}

/* hbm_time.csv: one row per policy of the timing mode. */
static int write_timing(struct conflicts *c, const char *dir)
{
    if (!c->tim)
        return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/hbm_time.csv", dir);
    struct csv_writer *w = NULL;
    int rc = csv_writer_open(&w, path, false, &c->err);
    if (rc < 0)
        return rc;
    static const char *const cols[] = {"policy", "depth",        "window",    "jobs",
                                       "tokens", "ideal_cycles", "cycles",    "time_over_ideal",
                                       "alpha",  "row_hits",     "row_misses"};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0] && rc == 0; k++)
        rc = csv_str(w, cols[k]);
    if (rc == 0)
        rc = csv_end_row(w);
    for (size_t i = 0; i < c->n_pol && rc == 0; i++) {
        struct conflicts_timing t;
        conflicts_timing_totals(c, i, &t);
        const struct hbm_pc_policy_cfg *p = &c->pol[i].cfg;
        rc = csv_str(w, c->pol[i].name);
        if (rc == 0)
            rc = csv_u64(w, p->policy == HBM_PC_INORDER ? p->depth : 0);
        if (rc == 0)
            rc = csv_u64(w, p->policy == HBM_PC_WINDOW ? p->window : 0);
        if (rc == 0)
            rc = csv_u64(w, t.jobs);
        if (rc == 0)
            rc = csv_u64(w, t.tokens);
        if (rc == 0)
            rc = csv_u64(w, t.ideal_cycles);
        if (rc == 0)
            rc = csv_u64(w, t.cycles);
        if (rc == 0)
            rc = csv_f64(w, t.time_over_ideal);
        if (rc == 0)
            rc = csv_f64(w, t.alpha);
        if (rc == 0)
            rc = csv_u64(w, t.row_hits);
        if (rc == 0)
            rc = csv_u64(w, t.row_misses);
        if (rc == 0)
            rc = csv_end_row(w);
    }
    int crc = csv_writer_close(w);
    if (rc == 0)
        rc = crc;
    if (rc < 0)
        return errmsg_set(&c->err, rc, "cannot write '%s'", path);
    return 0;
}

static int add_job_t(struct conflicts *c, const char *group, int64_t t, uint32_t l, uint32_t h,
                     const uint32_t *idx, size_t n)
{
    size_t g = 0;
    int rc = find_group(c, group, &g);
    if (rc < 0)
        return rc;
    if (l >= CONFLICTS_MAX_LAYERS)
        return errmsg_set(&c->err, ERR_LIMIT, "layer %u above %d", l, CONFLICTS_MAX_LAYERS - 1);
    if (l >= c->n_layers) {
        struct layer_acc *la = mem_realloc(c->layers, (l + 1) * sizeof *la);
        if (!la)
            return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
        memset(la + c->n_layers, 0, (l + 1 - c->n_layers) * sizeof *la);
        c->layers = la;
        c->n_layers = l + 1;
    }
    if ((rc = reserve(c, n)) < 0)
        return rc;
    uint32_t ha = c->o.map.h_att;
    hbm_pc_map_indices(&c->o.map, l, h, idx, n, c->pc);
    uint64_t ideal = hbm_pc_ideal(n, ha), mx = hbm_pc_max_load(c->pc, n, ha);
    struct grp *gr = &c->grp[g];
    struct layer_acc *la = &c->layers[l];
    gr->jobs++;
    gr->tokens += n;
    gr->ideal += ideal;
    gr->max_load += mx;
    la->jobs++;
    la->ideal += ideal;
    la->max_load += mx;
    if (n)
        gr->nonempty++;
    if (c->o.per_job &&
        buf_printf(&c->jobs_csv, "%s,%lld,%u,%u,%zu,%llu,%llu", gr->name, (long long)t, l, h, n,
                   (unsigned long long)ideal, (unsigned long long)mx) < 0)
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < c->n_pol; i++) {
        struct pol *p = &c->pol[i];
        uint64_t s = hbm_pc_slots(&p->cfg, c->pc, n, ha, &c->work, p->occ, CONFLICTS_OCC_BINS);
        if (c->o.per_job && buf_printf(&c->jobs_csv, ",%llu", (unsigned long long)s) < 0)
            return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
        gr->slots[i] += s;
        la->slots[i] += s;
        if (n) {
            double a = (double)s / (double)ideal;
            gr->ajob_sum[i] += a;
            if (a > gr->ajob_max[i])
                gr->ajob_max[i] = a;
        }
    }
    if (c->o.per_job && buf_printf(&c->jobs_csv, "\n") < 0)
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    if (c->tim && (rc = timing_job(c, idx, n)) < 0)
        return rc;
    /* Conflicts per batch under each mapping (spec section 12 plot 2). */
    for (int m = 0; m < 3; m++) {
        if (!c->map_ok[m])
            continue;
        const uint16_t *pcs = c->pc;
        if ((enum hbm_pc_map)m != c->o.map.map) {
            struct hbm_pc_mapping mm = c->o.map;
            mm.map = (enum hbm_pc_map)m;
            hbm_pc_map_indices(&mm, l, h, idx, n, c->pc2);
            pcs = c->pc2;
        }
        hbm_pc_batch_conflicts(pcs, n, ha, c->o.p_iss, &c->work, c->conf[m]);
    }
    return 0;
}

int conflicts_begin_trace(struct conflicts *c, const Acceltrace__TraceHeader *hdr)
{
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

/* ---- the analyzer of a trace pass ---- */

static int feed_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    struct conflicts_feed *f = self;
    const Acceltrace__TraceHeader *hdr = trace_reader_header(pos->r);
    if (!hdr || strcmp(hdr->workload, "salca") != 0)
        return errmsg_set(e, ERR_DATA, "not a salca trace ('%s' workload '%s')", pos->path,
                          hdr ? hdr->workload : "");
    f->group = "all";
    if (!strcmp(f->group_mode, "family") && hdr->salca && hdr->salca->task_family[0])
        f->group = hdr->salca->task_family;
    else if (!strcmp(f->group_mode, "task") && hdr->salca && hdr->salca->task_name[0])
        f->group = hdr->salca->task_name;
    else if (!strcmp(f->group_mode, "file"))
        f->group = pos->path;
    int rc = conflicts_begin_trace(f->c, hdr);
    return rc < 0 ? errmsg_set(e, rc, "%s", conflicts_errmsg(f->c)) : 0;
}

static int feed_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                       struct errmsg *e)
{
    struct conflicts_feed *f = self;
    const Acceltrace__Record *r = *rec;
    int rc = 0;
    if (r->body_case == ACCELTRACE__RECORD__BODY_SALCA_SELECT)
        rc = conflicts_add_select(f->c, f->group, r->salca_select);
    else if (r->body_case == ACCELTRACE__RECORD__BODY_SALCA_PREFILL)
        rc = conflicts_add_prefill(f->c, r->salca_prefill);
    if (rc < 0)
        return errmsg_set(e, rc, "%s ('%s' record %llu)", conflicts_errmsg(f->c), pos->path,
                          (unsigned long long)pos->record);
    return 0;
}

static const struct analyzer_ops feed_ops = {
    .name = "conflicts",
    .begin = feed_begin,
    .record = feed_record,
};

void conflicts_analyzer(struct conflicts_feed *f, struct analyzer *out)
{
    out->ops = &feed_ops;
    out->self = f;
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
        if (c->n_qual == c->cap_qual) {
            size_t cap = c->cap_qual ? 2 * c->cap_qual : 16;
            struct qual *p = mem_realloc(c->qual, cap * sizeof *p);
            if (!p)
                return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
            c->qual = p;
            c->cap_qual = cap;
        }
        q = &c->qual[c->n_qual++];
        memset(q, 0, sizeof *q);
        snprintf(q->group, sizeof q->group, "%s", group);
        snprintf(q->method, sizeof q->method, "%s", method);
        snprintf(q->rho, sizeof q->rho, "%s", c->rho);
    }
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 256;
        double *a = mem_realloc(q->recall, cap * sizeof *a);
        if (!a)
            return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
        q->recall = a;
        double *b = mem_realloc(q->cosine, cap * sizeof *b);
        if (!b)
            return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
        q->cosine = b;
        q->cap = cap;
    }
    q->recall[q->n] = s->recall;
    q->cosine[q->n] = s->cosine;
    q->n++;
    q->ret_sum += s->n_ctx ? (double)s->count / (double)s->n_ctx : 0;
    return 0;
}

/* Spec section 12 plot 8: (|S| - K)/n of Salca (method 0) into bins of 1/2000 of n. */
static int add_overshoot(struct conflicts *c, const Acceltrace__SalcaSelect *s)
{
    if (s->method != 0)
        return 0;
    if (s->n_ctx == 0 || s->count > s->n_ctx || s->count < s->k)
        return errmsg_set(&c->err, ERR_DATA,
                          "salca set size %u outside [K = %u, n_ctx = %u] (step %u layer %u "
                          "head %u)", s->count, s->k, s->n_ctx, s->t, s->l, s->h);
    if (!c->over && !(c->over = mem_calloc(CONFLICTS_OVER_BINS_PER_N + 1, sizeof *c->over)))
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    uint64_t ov = (uint64_t)s->count - s->k;
    size_t b = (size_t)(ov * CONFLICTS_OVER_BINS_PER_N / s->n_ctx);
    c->over[b]++;
    if (b + 1 > c->over_bins)
        c->over_bins = b + 1;
    c->over_n++;
    c->over_sum += (double)ov / (double)s->n_ctx;
    /* ov/n > 0.19% [paper: the set grows by about half a bin, 0.19% of n; spec 5.11] */
    c->over_above += ov * 10000 > 19 * (uint64_t)s->n_ctx;
    return 0;
}

int conflicts_add_select(struct conflicts *c, const char *group, const Acceltrace__SalcaSelect *s)
{
    int qrc = add_quality(c, group, s);
    if (qrc < 0)
        return qrc;
    if ((qrc = add_overshoot(c, s)) < 0)
        return qrc;
    if (c->o.method >= 0 && s->method != (uint32_t)c->o.method)
        return 0;
    if (c->o.steps && (s->t < c->o.step_lo || s->t > c->o.step_hi))
        return 0;
    int rc = trace_salca_select_check(s, &c->err);
    if (rc < 0)
        return rc;
    if (s->count > c->idx_cap) {
        uint32_t *p = mem_realloc(c->idx, (size_t)s->count * sizeof *p);
        if (!p)
            return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
        c->idx = p;
        c->idx_cap = s->count;
    }
    size_t got = 0;
    if ((rc = trace_salca_select_decode(s, c->idx, &got, &c->err)) < 0)
        return rc;
    return add_job_t(c, group, s->t, s->l, s->h, c->idx, got);
}

double conflicts_jaccard(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    bool in_a[256] = {false}, in_b[256] = {false};
    for (size_t i = 0; i < na; i++)
        in_a[a[i]] = true;
    for (size_t i = 0; i < nb; i++)
        in_b[b[i]] = true;
    unsigned inter = 0, uni = 0;
    for (int j = 0; j < 256; j++) {
        inter += in_a[j] && in_b[j];
        uni += in_a[j] || in_b[j];
    }
    return uni ? (double)inter / (double)uni : 1.0;
}

/* Strictly ascending channel list (a set written as the capture writes it). */
static bool ascending(const uint8_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (v[i] <= v[i - 1])
            return false;
    return true;
}

/* Row of (l, m), inserted in (l, m) order when new; NULL with the error set. */
static struct stab *stab_row(struct conflicts *c, uint32_t l, uint32_t m)
{
    size_t i = 0;
    while (i < c->n_stab && (c->stab[i].l < l || (c->stab[i].l == l && c->stab[i].m < m)))
        i++;
    if (i < c->n_stab && c->stab[i].l == l && c->stab[i].m == m)
        return &c->stab[i];
    if (c->n_stab == CONFLICTS_MAX_STABILITY) {
        errmsg_set(&c->err, ERR_LIMIT, "more than %d (layer, prefix length) rows",
                   CONFLICTS_MAX_STABILITY);
        return NULL;
    }
    if (c->n_stab == c->cap_stab) {
        size_t cap = c->cap_stab ? 2 * c->cap_stab : 64;
        struct stab *p = mem_realloc(c->stab, cap * sizeof *p);
        if (!p) {
            errmsg_set(&c->err, ERR_NOMEM, "out of memory");
            return NULL;
        }
        c->stab = p;
        c->cap_stab = cap;
    }
    memmove(c->stab + i + 1, c->stab + i, (c->n_stab - i) * sizeof *c->stab);
    c->n_stab++;
    c->stab[i] = (struct stab){.l = l, .m = m, .jmin = 1.0};
    return &c->stab[i];
}

int conflicts_add_prefill(struct conflicts *c, const Acceltrace__SalcaPrefill *p)
{
    c->prefills++;
    if (p->n_prefix_len == 0 && p->prefix_heavy.len == 0) {
        c->prefills_bare++;
        return 0;
    }
    size_t r = p->heavy.len, np = p->n_prefix_len;
    const char *bad = NULL;
    if (r == 0 || r > 256)
        bad = "heavy set size outside [1, 256]";
    else if (np > CONFLICTS_MAX_PREFIX)
        bad = "more than 64 prefix lengths";
    else if (p->prefix_heavy.len != np * r)
        bad = "prefix_heavy is not r bytes per prefix length";
    else if (!ascending(p->heavy.data, r))
        bad = "heavy channels not strictly ascending";
    for (size_t a = 0; a < np && !bad; a++) {
        if (p->prefix_len[a] == 0 || (a && p->prefix_len[a] <= p->prefix_len[a - 1]) ||
            (p->n0 && p->prefix_len[a] > p->n0))
            bad = "prefix lengths not ascending within [1, n0]";
        else if (!ascending(p->prefix_heavy.data + a * r, r))
            bad = "prefix channels not strictly ascending";
    }
    if (!bad && p->l >= CONFLICTS_MAX_LAYERS)
        bad = "layer above the analyzer's limit";
    if (bad)
        return errmsg_set(&c->err, ERR_DATA, "bad salca prefill at layer %u kv head %u: %s",
                          p->l, p->g, bad);
    /* final S mass of I_g, when chan_sum covers every channel index */
    double mass_final = 0;
    bool mass = p->n_chan_sum >= 256 || (p->n_chan_sum > 0 && p->heavy.data[r - 1] < p->n_chan_sum);
    for (size_t a = 0; a < np && mass; a++)
        mass = p->n_chan_sum >= 256 || p->prefix_heavy.data[a * r + r - 1] < p->n_chan_sum;
    for (size_t k = 0; k < r && mass; k++)
        mass_final += fabs((double)p->chan_sum[p->heavy.data[k]]);
    mass = mass && mass_final > 0;
    for (size_t a = 0; a < np; a++) {
        struct stab *row = stab_row(c, p->l, p->prefix_len[a]);
        if (!row)
            return c->err.code;
        /* spec section 12 plot 7: overlap of the prefix's top-r set with the final I_g */
        const uint8_t *set = p->prefix_heavy.data + a * r;
        double j = conflicts_jaccard(set, r, p->heavy.data, r);
        row->n++;
        row->jsum += j;
        if (j < row->jmin)
            row->jmin = j;
        if (mass) {
            /* decision: the final S_j mass the prefix set keeps, sum over the prefix set
             * / sum over I_g (1 when the prefix set is as heavy as I_g) */
            double ms = 0;
            for (size_t k = 0; k < r; k++)
                ms += fabs((double)p->chan_sum[set[k]]);
            row->msum += ms / mass_final;
            row->n_mass++;
        }
    }
    return 0;
}

size_t conflicts_n_stability(const struct conflicts *c)
{
    return c->n_stab;
}

int conflicts_stability(const struct conflicts *c, size_t i, struct conflicts_stability *s)
{
    memset(s, 0, sizeof *s);
    if (i >= c->n_stab)
        return ERR_USAGE;
    const struct stab *row = &c->stab[i];
    s->layer = row->l;
    s->prefix_len = row->m;
    s->sets = row->n;
    s->jaccard_mean = row->n ? row->jsum / (double)row->n : 0;
    s->jaccard_min = row->jmin;
    s->mass_kept_mean = row->n_mass ? row->msum / (double)row->n_mass : -1.0;
    return 0;
}

uint64_t conflicts_prefill_records(const struct conflicts *c, uint64_t *without_ladder)
{
    if (without_ladder)
        *without_ladder = c->prefills_bare;
    return c->prefills;
}

void conflicts_overshoot(const struct conflicts *c, struct conflicts_overshoot *o)
{
    o->records = c->over_n;
    o->mean = c->over_n ? c->over_sum / (double)c->over_n : 0;
    o->above_paper = c->over_above;
    o->n_bins = c->over_bins;
    o->bins = c->over_bins ? c->over : NULL;
}

size_t conflicts_n_policies(const struct conflicts *c)
{
    return c->n_pol;
}

const char *conflicts_policy_name(const struct conflicts *c, size_t i)
{
    return i < c->n_pol ? c->pol[i].name : "";
}

const struct hbm_pc_policy_cfg *conflicts_policy(const struct conflicts *c, size_t i)
{
    return i < c->n_pol ? &c->pol[i].cfg : NULL;
}

size_t conflicts_n_groups(const struct conflicts *c)
{
    return c->n_grp;
}

const char *conflicts_group_name(const struct conflicts *c, size_t g)
{
    return g < c->n_grp ? c->grp[g].name : "";
}

int conflicts_totals(const struct conflicts *c, int group, size_t policy,
                     struct conflicts_totals *t)
{
    memset(t, 0, sizeof *t);
    if (policy >= c->n_pol || (group >= 0 && (size_t)group >= c->n_grp))
        return ERR_USAGE;
    double ajs = 0;
    uint64_t ne = 0;
    for (size_t g = 0; g < c->n_grp; g++) {
        if (group >= 0 && (size_t)group != g)
            continue;
        const struct grp *gr = &c->grp[g];
        t->jobs += gr->jobs;
        t->tokens += gr->tokens;
        t->ideal += gr->ideal;
        t->max_load += gr->max_load;
        t->slots += gr->slots[policy];
        ajs += gr->ajob_sum[policy];
        ne += gr->nonempty;
        if (gr->ajob_max[policy] > t->alpha_job_max)
            t->alpha_job_max = gr->ajob_max[policy];
    }
    /* alpha = sum slots / sum ideal, bound = sum max load / sum ideal [spec section 11] */
    if (t->ideal) {
        t->alpha = (double)t->slots / (double)t->ideal;
        t->bound = (double)t->max_load / (double)t->ideal;
    }
    t->alpha_job_mean = ne ? ajs / (double)ne : 0;
    return 0;
}

const uint64_t *conflicts_occupancy(const struct conflicts *c, size_t policy)
{
    return policy < c->n_pol ? c->pol[policy].occ : NULL;
}

const uint64_t *conflicts_per_batch(const struct conflicts *c, enum hbm_pc_map m)
{
    if ((int)m < 0 || (int)m > 2 || !c->map_ok[m])
        return NULL;
    return c->conf[m];
}

/* ---- output ---- */

static FILE *open_out(struct conflicts *c, const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        errmsg_set(&c->err, ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return f;
}

static int close_out(struct conflicts *c, FILE *f, const char *dir, const char *name)
{
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad)
        return errmsg_set(&c->err, ERR_IO, "cannot write '%s/%s'", dir, name);
    return 0;
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

static int write_jobs(struct conflicts *c, const char *dir)
{
    if (!c->o.per_job)
        return 0;
    FILE *f = open_out(c, dir, "alpha_jobs.csv");
    if (!f)
        return c->err.code;
    fprintf(f, "group,step,layer,head,n_sel,ideal,max_load");
    for (size_t i = 0; i < c->n_pol; i++)
        fprintf(f, ",slots_%s", c->pol[i].name);
    fprintf(f, "\n");
    if (c->jobs_csv.len)
        fwrite(c->jobs_csv.data, 1, c->jobs_csv.len, f);
    return close_out(c, f, dir, "alpha_jobs.csv");
}

static int write_quality(struct conflicts *c, const char *dir)
{
    if (!c->n_qual)
        return 0;
    FILE *f = open_out(c, dir, "recall_vs_retention.csv");
    if (!f)
        return c->err.code;
    fprintf(f, "group,method,rho,jobs,retention_mean,recall_mean,recall_p5,cosine_mean,cosine_p5\n");
    for (size_t i = 0; i < c->n_qual; i++) {
        struct qual *q = &c->qual[i];
        double rm = mean(q->recall, q->n), cm = mean(q->cosine, q->n);
        fprintf(f, "%s,%s,%s,%zu,%.6f,%.6f,%.6f,%.6f,%.6f\n", q->group, q->method, q->rho, q->n,
                q->n ? q->ret_sum / (double)q->n : 0, rm, p5(q->recall, q->n), cm,
                p5(q->cosine, q->n));
    }
    int rc = close_out(c, f, dir, "recall_vs_retention.csv");
    if (rc < 0)
        return rc;
    /* the cosine plot's own CSV (spec section 12: a CSV beside each plot) */
    if (!(f = open_out(c, dir, "cosine_vs_retention.csv")))
        return c->err.code;
    fprintf(f, "group,method,rho,jobs,retention_mean,cosine_mean,cosine_p5\n");
    for (size_t i = 0; i < c->n_qual; i++) {
        struct qual *q = &c->qual[i];
        fprintf(f, "%s,%s,%s,%zu,%.6f,%.6f,%.6f\n", q->group, q->method, q->rho, q->n,
                q->n ? q->ret_sum / (double)q->n : 0, mean(q->cosine, q->n),
                p5(q->cosine, q->n));
    }
    return close_out(c, f, dir, "cosine_vs_retention.csv");
}

static int write_csvs(struct conflicts *c, const char *dir)
{
    struct conflicts_totals t;
    FILE *f = open_out(c, dir, "alpha.csv");
    if (!f)
        return c->err.code;
    fprintf(f, "group,policy,p_iss,depth,window,map,h_att,att_base,jobs,tokens,slots,ideal,"
               "alpha,bound,alpha_job_mean,alpha_job_max\n");
    for (int g = -1; g < (int)c->n_grp; g++) {
        if (g >= 0 && c->n_grp == 1)
            break; /* one group: the overall rows say it all */
        for (size_t i = 0; i < c->n_pol; i++) {
            conflicts_totals(c, g, i, &t);
            const struct hbm_pc_policy_cfg *p = &c->pol[i].cfg;
            fprintf(f, "%s,%s,%u,%u,%u,%s,%u,%u,%llu,%llu,%llu,%llu,%.6f,%.6f,%.6f,%.6f\n",
                    g < 0 ? "all" : c->grp[g].name, c->pol[i].name, p->p_iss,
                    p->policy == HBM_PC_INORDER ? p->depth : 0,
                    p->policy == HBM_PC_WINDOW ? p->window : 0, hbm_pc_map_name(c->o.map.map),
                    c->o.map.h_att, c->o.att_base, (unsigned long long)t.jobs,
                    (unsigned long long)t.tokens, (unsigned long long)t.slots,
                    (unsigned long long)t.ideal, t.alpha, t.bound, t.alpha_job_mean,
                    t.alpha_job_max);
        }
    }
    int rc = close_out(c, f, dir, "alpha.csv");
    if (rc < 0)
        return rc;

    if (!(f = open_out(c, dir, "alpha_layers.csv")))
        return c->err.code;
    fprintf(f, "layer,jobs,ideal,bound");
    for (size_t i = 0; i < c->n_pol; i++)
        fprintf(f, ",%s", c->pol[i].name);
    fprintf(f, "\n");
    for (size_t l = 0; l < c->n_layers; l++) {
        const struct layer_acc *la = &c->layers[l];
        if (!la->jobs)
            continue;
        double id = la->ideal ? (double)la->ideal : 1;
        fprintf(f, "%zu,%llu,%llu,%.6f", l, (unsigned long long)la->jobs,
                (unsigned long long)la->ideal, (double)la->max_load / id);
        for (size_t i = 0; i < c->n_pol; i++)
            fprintf(f, ",%.6f", (double)la->slots[i] / id);
        fprintf(f, "\n");
    }
    if ((rc = close_out(c, f, dir, "alpha_layers.csv")) < 0)
        return rc;

    if (!(f = open_out(c, dir, "alpha_vs_window.csv")))
        return c->err.code;
    fprintf(f, "window,policy");
    for (size_t g = 0; g < c->n_grp; g++)
        fprintf(f, ",alpha_%s", c->grp[g].name);
    fprintf(f, ",alpha_all,bound_all\n");
    for (size_t k = 0; k < c->o.n_windows; k++) {
        size_t pi = window_policy(c, c->o.windows[k]);
        fprintf(f, "%u,%s", c->o.windows[k], c->pol[pi].name);
        for (size_t g = 0; g < c->n_grp; g++) {
            conflicts_totals(c, (int)g, pi, &t);
            fprintf(f, ",%.6f", t.alpha);
        }
        conflicts_totals(c, -1, pi, &t);
        fprintf(f, ",%.6f,%.6f\n", t.alpha, t.bound);
    }
    if ((rc = close_out(c, f, dir, "alpha_vs_window.csv")) < 0)
        return rc;

    if (!(f = open_out(c, dir, "conflict_occupancy.csv")))
        return c->err.code;
    fprintf(f, "occupancy");
    for (size_t i = 0; i < c->n_pol; i++)
        fprintf(f, ",%s", c->pol[i].name);
    fprintf(f, "\n");
    double tot[MAX_POL];
    for (size_t i = 0; i < c->n_pol; i++) {
        tot[i] = 0;
        for (size_t b = 0; b < CONFLICTS_OCC_BINS; b++)
            tot[i] += (double)c->pol[i].occ[b];
    }
    for (size_t b = 0; b < CONFLICTS_OCC_BINS; b++) {
        fprintf(f, "%zu%s", b, b == CONFLICTS_OCC_BINS - 1 ? "+" : "");
        for (size_t i = 0; i < c->n_pol; i++)
            fprintf(f, ",%.8f", tot[i] > 0 ? (double)c->pol[i].occ[b] / tot[i] : 0.0);
        fprintf(f, "\n");
    }
    if ((rc = close_out(c, f, dir, "conflict_occupancy.csv")) < 0)
        return rc;

    if (!(f = open_out(c, dir, "conflict_per_batch.csv")))
        return c->err.code;
    fprintf(f, "conflicts");
    double ctot[3] = {0, 0, 0};
    for (int m = 0; m < 3; m++) {
        if (!c->map_ok[m])
            continue;
        fprintf(f, ",%s", hbm_pc_map_name((enum hbm_pc_map)m));
        for (uint32_t b = 0; b < c->o.p_iss; b++)
            ctot[m] += (double)c->conf[m][b];
    }
    fprintf(f, "\n");
    for (uint32_t b = 0; b < c->o.p_iss; b++) {
        fprintf(f, "%u", b);
        for (int m = 0; m < 3; m++)
            if (c->map_ok[m])
                fprintf(f, ",%.8f", ctot[m] > 0 ? (double)c->conf[m][b] / ctot[m] : 0.0);
        fprintf(f, "\n");
    }
    return close_out(c, f, dir, "conflict_per_batch.csv");
}

static int plot_done(struct conflicts *c, struct plot *p, const char *dir, bool *rendered)
{
    bool r = false;
    int rc = plot_write(p, dir, &r);
    if (rc < 0)
        errmsg_set(&c->err, rc, "plot '%s': %s", dir, plot_errmsg(p));
    if (!r)
        *rendered = false;
    plot_free(p);
    return rc;
}

static int write_plots(struct conflicts *c, const char *dir, bool *rendered)
{
    int rc = 0;
    double x[CONFLICTS_OCC_BINS > MAX_P_ISS ? CONFLICTS_OCC_BINS : MAX_P_ISS];
    double y[MAX_P_ISS];
    /* 1. occupancy: batch, in-order D_f, window 128 (or the largest window) [spec 12.1]. */
    struct plot *p = plot_new("conflict_occupancy", PLOT_LINE);
    if (!p)
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
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
        return errmsg_set(&c->err, rc, "out of memory");
    }
    if ((rc = plot_done(c, p, dir, rendered)) < 0)
        return rc;

    /* 2. conflicts per batch per map [spec 12.2]. */
    if (!(p = plot_new("conflict_per_batch", PLOT_LINE)))
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    plot_title(p, "Conflicts per batch of p_iss requests");
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
        return errmsg_set(&c->err, rc, "out of memory");
    }
    if ((rc = plot_done(c, p, dir, rendered)) < 0)
        return rc;

    /* 3. alpha vs window per group, bound, paper lines 2.18 and 1.17 [spec 12.3]. */
    if (!(p = plot_new("alpha_vs_window", PLOT_LINE)))
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    plot_title(p, "Conflict factor alpha vs reorder window (window 0 = in-order)");
    plot_xlabel(p, "window W", "requests");
    plot_ylabel(p, "alpha", "");
    plot_extra(p, "set arrow from graph 0, first 2.18 to graph 1, first 2.18 nohead dt 2");
    plot_extra(p, "set arrow from graph 0, first 1.17 to graph 1, first 1.17 nohead dt 3");
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
        return errmsg_set(&c->err, rc, "out of memory");
    }
    return plot_done(c, p, dir, rendered);
}

/* Spec section 12 plot 4: x mean |S|/n per rho (log), y mean recall (cosine), a series
 * per method, a panel per group; marks at 5% and 5.8% [paper retention targets]. The
 * spec's 5th-percentile bars are drawn as a dashed series "METHOD p5" in the method's
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
    /* Each panel plots, per method, the mean then the p5 series: odd linetypes solid, even
     * ones dashed, a pair sharing gnuplot's default colour of that method's index (its
     * yellow darkened to read on white). */
    static const char *const colour[8] = {"#9400d3", "#009e73", "#56b4e9", "#e69f00",
                                          "#b08800", "#0072b2", "#e51e10", "#000000"};
    for (size_t m = 0; m < nm; m++) {
        char line[96];
        snprintf(line, sizeof line, "set linetype %zu lc rgb '%s' dt 1", 2 * m + 1,
                 colour[m % 8]);
        plot_extra(p, line);
        snprintf(line, sizeof line, "set linetype %zu lc rgb '%s' dt 2", 2 * m + 2,
                 colour[m % 8]);
        plot_extra(p, line);
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
                rc = plot_series(p, ng > 1 ? (int)g : 0, name, x, y5, k);
        }
    mem_free(x);
    mem_free(y);
    mem_free(y5);
    if (rc < 0) {
        plot_free(p);
        return errmsg_set(&c->err, rc, "cannot build the retention plot");
    }
    return plot_done(c, p, dir, rendered);
}

static int write_quality_plots(struct conflicts *c, const char *dir, bool *rendered)
{
    if (!c->n_qual)
        return 0;
    int rc = quality_plot(c, dir, rendered, false);
    return rc < 0 ? rc : quality_plot(c, dir, rendered, true);
}

/* Spec section 12 plot 7: heavy_stability.csv and a line per layer, x the prefix length
 * m (log2), y the mean Jaccard overlap of the prefix's top-r set with the final I_g. */
static int write_stability(struct conflicts *c, const char *dir, bool *rendered)
{
    if (!c->n_stab)
        return 0;
    FILE *f = open_out(c, dir, "heavy_stability.csv");
    if (!f)
        return c->err.code;
    fprintf(f, "layer,prefix_len_tokens,sets,jaccard_mean,jaccard_min,s_mass_kept_mean\n");
    for (size_t i = 0; i < c->n_stab; i++) {
        const struct stab *row = &c->stab[i];
        fprintf(f, "%u,%u,%llu,%.6f,%.6f,", row->l, row->m, (unsigned long long)row->n,
                row->jsum / (double)row->n, row->jmin);
        if (row->n_mass)
            fprintf(f, "%.6f\n", row->msum / (double)row->n_mass);
        else
            fprintf(f, "\n");
    }
    int rc = close_out(c, f, dir, "heavy_stability.csv");
    if (rc < 0)
        return rc;
    struct plot *p = plot_new("heavy_stability", PLOT_LINE);
    double *x = mem_alloc(c->n_stab * sizeof *x), *y = mem_alloc(c->n_stab * sizeof *y);
    double *wt = mem_alloc(c->n_stab * sizeof *wt);
    if (!p || !x || !y || !wt) {
        plot_free(p);
        mem_free(x);
        mem_free(y);
        mem_free(wt);
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    }
    plot_title(p, "Heavy-channel stability: top-r set of a prefill prefix vs the final I_g");
    plot_xlabel(p, "prefix length m used to find I_g", "tokens");
    plot_ylabel(p, "Jaccard overlap with the final set, mean over KV heads", "");
    plot_extra(p, "set yrange [0:1.1]");
    plot_extra(p, "set key bottom right");
    bool many_m = false;
    for (size_t i = 0, k; i < c->n_stab && rc == 0; i += k) {
        char name[32];
        for (k = 0; i + k < c->n_stab && c->stab[i + k].l == c->stab[i].l; k++) {
            x[k] = c->stab[i + k].m;
            y[k] = c->stab[i + k].jsum / (double)c->stab[i + k].n;
        }
        many_m = many_m || k > 1;
        snprintf(name, sizeof name, "layer %u", c->stab[i].l);
        rc = plot_series(p, 0, name, x, y, k);
    }
    /* the S mass kept, over every layer per m: near 1 when the sets differ only in
     * channels of near-equal magnitude */
    size_t nm = 0;
    for (size_t i = 0; i < c->n_stab && rc == 0; i++) {
        const struct stab *row = &c->stab[i];
        if (!row->n_mass)
            continue;
        size_t k = 0;
        while (k < nm && x[k] < row->m)
            k++;
        if (k == nm || x[k] != row->m) {
            memmove(x + k + 1, x + k, (nm - k) * sizeof *x);
            memmove(y + k + 1, y + k, (nm - k) * sizeof *y);
            memmove(wt + k + 1, wt + k, (nm - k) * sizeof *wt);
            x[k] = row->m;
            y[k] = 0;
            wt[k] = 0;
            nm++;
        }
        y[k] += row->msum;
        wt[k] += (double)row->n_mass;
    }
    for (size_t k = 0; k < nm; k++)
        y[k] /= wt[k];
    if (nm && rc == 0)
        rc = plot_series(p, 0, "S mass kept, all layers", x, y, nm);
    if (many_m)
        plot_extra(p, "set logscale x 2");
    mem_free(wt);
    mem_free(x);
    mem_free(y);
    if (rc < 0) {
        plot_free(p);
        return errmsg_set(&c->err, rc, "cannot build the heavy-stability plot");
    }
    return plot_done(c, p, dir, rendered);
}

/* Spec section 12 plot 8: overshoot.csv and the histogram of Salca's (|S| - K)/n in bins
 * of 0.05% of n, with a mark at the paper's 0.19%. */
static int write_overshoot(struct conflicts *c, const char *dir, bool *rendered)
{
    if (!c->over_n)
        return 0;
    const double w = 100.0 / CONFLICTS_OVER_BINS_PER_N; /* bin width, % of n */
    FILE *f = open_out(c, dir, "overshoot.csv");
    if (!f)
        return c->err.code;
    fprintf(f, "bin_lo_pct_of_n,bin_hi_pct_of_n,records,fraction_of_records\n");
    for (size_t b = 0; b < c->over_bins; b++)
        fprintf(f, "%.4f,%.4f,%llu,%.6f\n", (double)b * w, (double)(b + 1) * w,
                (unsigned long long)c->over[b], (double)c->over[b] / (double)c->over_n);
    int rc = close_out(c, f, dir, "overshoot.csv");
    if (rc < 0)
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
    return plot_done(c, p, dir, rendered);
}

int conflicts_write(struct conflicts *c, const char *dir, bool *rendered)
{
    bool r = true;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return errmsg_set(&c->err, ERR_IO, "cannot create '%s': %s", dir, strerror(errno));
    int rc = write_csvs(c, dir);
    if (rc == 0)
        rc = write_jobs(c, dir);
    if (rc == 0)
        rc = write_quality(c, dir);
    if (rc == 0)
        rc = write_plots(c, dir, &r);
    if (rc == 0)
        rc = write_quality_plots(c, dir, &r);
    if (rc == 0)
        rc = write_stability(c, dir, &r);
    if (rc == 0)
        rc = write_overshoot(c, dir, &r);
    if (rc == 0)
        rc = write_timing(c, dir);
    if (rendered)
        *rendered = r;
    return rc;
}

/* ---- synthetic selections ---- */

int conflicts_synth_parse(const char *s, enum conflicts_synth_kind *out)
{
    if (!s)
        return ERR_USAGE;
    if (!strcmp(s, "uniform"))
        *out = CONFLICTS_SYNTH_UNIFORM;
    else if (!strcmp(s, "clustered"))
        *out = CONFLICTS_SYNTH_CLUSTERED;
    else if (!strcmp(s, "needle"))
        *out = CONFLICTS_SYNTH_NEEDLE;
    else
        return ERR_USAGE;
    return 0;
}

int conflicts_synth(enum conflicts_synth_kind kind, uint32_t n, double retention, uint64_t seed,
                    uint64_t a, uint64_t b, uint32_t *idx, size_t *count)
{
    /* The generator lives in replay/ (the model's retention what-if uses it too). */
    return salca_synth_selection((int)kind, n, retention, seed, a, b, idx, count);
}
