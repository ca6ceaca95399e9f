/*
 * conflicts_pc: the conflict analyzer (docs/salca.md#conflict-analyzer;
 * docs/models.md#salca-replay): policies, jobs mapped to the attention pseudo-channels,
 * the timing mode and the analyzer of a trace pass. Shared state: conflicts_impl.h.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/conflicts_impl.h"
#include "common/grow.h"
#include "common/mem.h"
#include "traces/trace_reader.h"
#include "traces/trace_salca.h"

void conflicts_opts_default(struct conflicts_opts *o)
{
    memset(o, 0, sizeof *o);
    o->map.map = HBM_PC_MAP_MOD;
    o->map.h_att = 16; /* design h_att [paper] */
    o->map.seed = 0;
    /* docs/salca.md#conflict-analyzer says att_base = h_pre; 16 is the design point's h_pre (h
     * 16/16, docs/salca.md#analytic-performance-model), not the final design's 11 (decision; it
     * only renumbers the reported PCs) */
    o->att_base = 16;
    o->p_iss = 0;
    /* in-order, then W in {16, 32, ..., 1024} (docs/salca.md#conflict-analyzer,
     * docs/salca.md#figures) */
    static const uint32_t w[] = {0, 16, 32, 64, 128, 256, 512, 1024};
    o->n_windows = sizeof w / sizeof w[0];
    memcpy(o->windows, w, sizeof w);
    o->n_depths = 3;
    o->depths[0] = 1;
    o->depths[1] = 2;
    o->depths[2] = 4;
    o->method = 0;
}

/* Frees what timing state tm holds (not tm); NULL is a no-op. */
static void tim_release(struct tim *tm)
{
    if (!tm)
        return;
    hbm_timing_work_release(&tm->work);
    mem_free(tm->seq);
    mem_free(tm->seq_pc);
}

/* One timing state per preset for opts.compare_presets: the main configuration with the
 * preset's timing. 0 or ERR_NOMEM / ERR_CONFIG with e set. */
static int compare_init(struct conflicts *c, struct errmsg *e)
{
    const char *const *names = hbm_timing_preset_names();
    size_t n = 0;
    while (names[n])
        n++;
    if (!(c->cmp = mem_calloc(n, sizeof *c->cmp)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    c->n_cmp = n;
    for (size_t k = 0; k < n; k++) {
        struct hbm_timing_cfg *cf = &c->cmp[k].cfg;
        *cf = c->tim->cfg;
        hbm_timing_preset(names[k], &cf->t);
        cf->per_bank = cf->per_bank && cf->t.nREFIpb > 0;
        int rc = hbm_timing_check(cf, e);
        if (rc < 0)
            return rc;
    }
    return 0;
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
            return errmsg_set(e, ERR_CONFIG, "FIFO depth %u outside [1, 1048576]", opts->depths[i]);
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
        if (opts->compare_presets && (rc = compare_init(c, e)) < 0) {
            conflicts_free(c);
            return rc;
        }
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
    mem_free(c->jobs);
    mem_free(c->job_slots);
    tim_release(c->tim);
    mem_free(c->tim);
    for (size_t k = 0; c->cmp && k < c->n_cmp; k++)
        tim_release(&c->cmp[k]);
    mem_free(c->cmp);
    mem_free(c);
}

static int find_group(struct conflicts *c, const char *name, size_t *g, struct errmsg *e)
{
    if (!name || !*name)
        name = "all";
    for (size_t i = 0; i < c->n_grp; i++)
        if (!strncmp(c->grp[i].name, name, sizeof c->grp[i].name - 1)) {
            *g = i;
            return 0;
        }
    if (c->n_grp == CONFLICTS_MAX_GROUPS)
        return errmsg_set(e, ERR_LIMIT, "more than %d groups", CONFLICTS_MAX_GROUPS);
    struct grp *gr = &c->grp[c->n_grp];
    memset(gr, 0, sizeof *gr);
    snprintf(gr->name, sizeof gr->name, "%s", name);
    *g = c->n_grp++;
    return 0;
}

static int reserve(struct conflicts *c, size_t n, struct errmsg *e)
{
    if (hbm_pc_work_reserve(&c->work, n) < 0)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    size_t cap2 = c->cap; /* pc and pc2 are parallel arrays of c->cap */
    if (grow((void **)&c->pc2, &cap2, n, sizeof *c->pc2) ||
        grow((void **)&c->pc, &c->cap, n, sizeof *c->pc))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    return 0;
}

static int add_job_t(struct conflicts *c, const char *group, int64_t t, uint32_t l, uint32_t h,
                     const uint32_t *idx, size_t n, struct errmsg *e);

int conflicts_add_job(struct conflicts *c, const char *group, uint32_t l, uint32_t h,
                      const uint32_t *idx, size_t n, struct errmsg *e)
{
    return add_job_t(c, group, -1, l, h, idx, n, e);
}

/* Replays one job (pcs already mapped into c->pc) and its perfectly spread twin under
 * every policy in timing state tm; jobs run back to back for the refresh phase. */
static int timing_job(struct conflicts *c, struct tim *tm, const uint32_t *idx, size_t n,
                      struct errmsg *e)
{
    uint32_t ha = c->o.map.h_att;
    if (hbm_timing_work_reserve(&tm->work, n, ha) < 0)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    if (n > tm->cap) {
        uint32_t *q = mem_realloc(tm->seq, n * sizeof *q);
        if (q)
            tm->seq = q;
        uint16_t *qp = q ? mem_realloc(tm->seq_pc, n * sizeof *qp) : NULL;
        if (!qp)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
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

int conflicts_preset_totals(const struct conflicts *c, size_t k, size_t policy,
                            struct conflicts_timing *t)
{
    if (!c->cmp || k >= c->n_cmp || policy >= c->n_pol)
        return ERR_USAGE;
    *t = c->cmp[k].acc[policy];
    t->time_over_ideal = t->ideal_cycles ? (double)t->cycles / (double)t->ideal_cycles : 0;
    t->alpha = t->spread_cycles ? (double)t->cycles / (double)t->spread_cycles : 0;
    return 0;
}

/* One more row of the per-job table (opts.per_job). 0 or ERR_NOMEM with c->err set. */
static int job_push(struct conflicts *c, struct errmsg *e)
{
    /* jobs and job_slots (n_pol per job) are parallel arrays of c->cap_jobs jobs */
    size_t cap_slots = c->cap_jobs;
    if (grow((void **)&c->job_slots, &cap_slots, c->n_jobs + 1,
             (size_t)c->n_pol * sizeof *c->job_slots) ||
        grow((void **)&c->jobs, &c->cap_jobs, c->n_jobs + 1, sizeof *c->jobs))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    c->n_jobs++;
    return 0;
}

static int add_job_t(struct conflicts *c, const char *group, int64_t t, uint32_t l, uint32_t h,
                     const uint32_t *idx, size_t n, struct errmsg *e)
{
    size_t g = 0;
    int rc = find_group(c, group, &g, e);
    if (rc < 0)
        return rc;
    if (l >= CONFLICTS_MAX_LAYERS)
        return errmsg_set(e, ERR_LIMIT, "layer %u above %d", l, CONFLICTS_MAX_LAYERS - 1);
    if (l >= c->n_layers) {
        struct layer_acc *la = mem_realloc(c->layers, (l + 1) * sizeof *la);
        if (!la)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        memset(la + c->n_layers, 0, (l + 1 - c->n_layers) * sizeof *la);
        c->layers = la;
        c->n_layers = l + 1;
    }
    if ((rc = reserve(c, n, e)) < 0)
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
    uint64_t *job_slots = NULL;
    if (c->o.per_job) {
        if ((rc = job_push(c, e)) < 0)
            return rc;
        c->jobs[c->n_jobs - 1] = (struct job_row){g, t, l, h, n, ideal, mx};
        job_slots = c->job_slots + (c->n_jobs - 1) * c->n_pol;
    }
    for (size_t i = 0; i < c->n_pol; i++) {
        struct pol *p = &c->pol[i];
        uint64_t s = hbm_pc_slots(&p->cfg, c->pc, n, ha, &c->work, p->occ, CONFLICTS_OCC_BINS);
        if (job_slots)
            job_slots[i] = s;
        gr->slots[i] += s;
        la->slots[i] += s;
        if (n) {
            double a = (double)s / (double)ideal;
            gr->ajob_sum[i] += a;
            if (a > gr->ajob_max[i])
                gr->ajob_max[i] = a;
        }
    }
    if (c->tim && (rc = timing_job(c, c->tim, idx, n, e)) < 0)
        return rc;
    for (size_t k = 0; c->cmp && k < c->n_cmp; k++)
        if ((rc = timing_job(c, &c->cmp[k], idx, n, e)) < 0)
            return rc;
    /* Conflicts per batch under each mapping (docs/salca.md#figures plot 2). */
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

int conflicts_add_select(struct conflicts *c, const char *group, const Acceltrace__SalcaSelect *s,
                         struct errmsg *e)
{
    if (c->o.method >= 0 && s->method != (uint32_t)c->o.method)
        return 0;
    if (c->o.steps && (s->t < c->o.step_lo || s->t > c->o.step_hi))
        return 0;
    int rc = trace_salca_select_check(s, e);
    if (rc < 0)
        return rc;
    if (s->count > c->idx_cap) {
        uint32_t *p = mem_realloc(c->idx, (size_t)s->count * sizeof *p);
        if (!p)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        c->idx = p;
        c->idx_cap = s->count;
    }
    size_t got = 0;
    if ((rc = trace_salca_select_decode(s, c->idx, &got, e)) < 0)
        return rc;
    return add_job_t(c, group, s->t, s->l, s->h, c->idx, got, e);
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
    /* alpha = sum slots / sum ideal, bound = sum max load / sum ideal
     * [docs/salca.md#conflict-analyzer] */
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

/* ---- the analyzer of a trace pass ---- */

static int feed_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    struct conflicts *c = self;
    const Acceltrace__TraceHeader *hdr = trace_reader_header(pos->r);
    int rc = trace_salca_header_check(hdr, pos->path, e);
    if (rc < 0)
        return rc;
    c->group = trace_salca_group(hdr, c->group_mode, pos->path);
    return 0;
}

static int feed_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                       struct errmsg *e)
{
    struct conflicts *c = self;
    const Acceltrace__Record *r = *rec;
    if (r->body_case != ACCELTRACE__RECORD__BODY_SALCA_SELECT)
        return 0;
    int rc = conflicts_add_select(c, c->group, r->salca_select, e);
    return rc < 0 ? analyzer_record_error(rc, pos, e) : 0;
}

static int feed_finish(void *self, struct errmsg *e)
{
    struct conflicts *c = self;
    return c->dir ? conflicts_write(c, c->dir, c->rendered, e) : 0;
}

static const struct analyzer_ops feed_ops = {
    .name = "conflicts",
    .begin = feed_begin,
    .record = feed_record,
    .finish = feed_finish,
};

void conflicts_analyzer(struct conflicts *c, const char *group_mode, const char *dir,
                        bool *rendered, struct analyzer *out)
{
    c->group_mode = group_mode;
    c->dir = dir;
    c->rendered = rendered;
    out->ops = &feed_ops;
    out->self = c;
}
