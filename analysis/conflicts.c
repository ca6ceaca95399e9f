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

#include "analysis/plot.h"
#include "common/buf.h"
#include "common/mem.h"
#include "formats/varint.h"
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
};

void conflicts_opts_default(struct conflicts_opts *o)
{
    memset(o, 0, sizeof *o);
    o->map.map = HBM_PC_MAP_MOD;
    o->map.h_att = 16; /* design h_att [paper] */
    o->map.seed = 0;
    o->att_base = 16;  /* att_base defaults to h_pre (spec section 11) */
    o->p_iss = 0;
    static const uint32_t w[] = {0, 16, 32, 64, 128, 256};
    o->n_windows = 6;
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
    buf_release(&c->jobs_csv);
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
    static const char *const std_names[] = {"salca", "std_topk", "pl_topk", "full_feat",
                                            "quest", "dense"};
    for (size_t i = 0; i < 64; i++) {
        if (i < sizeof std_names / sizeof std_names[0])
            snprintf(c->method_names[i], sizeof c->method_names[i], "%s", std_names[i]);
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

int conflicts_add_select(struct conflicts *c, const char *group, const Acceltrace__SalcaSelect *s)
{
    int qrc = add_quality(c, group, s);
    if (qrc < 0)
        return qrc;
    if (c->o.method >= 0 && s->method != (uint32_t)c->o.method)
        return 0;
    if (s->n_ctx > CONFLICTS_MAX_CTX)
        return errmsg_set(&c->err, ERR_LIMIT, "n_ctx %u above %u (step %u layer %u head %u)",
                          s->n_ctx, CONFLICTS_MAX_CTX, s->t, s->l, s->h);
    if (s->count > s->n_ctx)
        return errmsg_set(&c->err, ERR_DATA,
                          "count %u above n_ctx %u (step %u layer %u head %u)", s->count,
                          s->n_ctx, s->t, s->l, s->h);
    if (s->count > c->idx_cap) {
        uint32_t *p = mem_realloc(c->idx, (size_t)s->count * sizeof *p);
        if (!p)
            return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
        c->idx = p;
        c->idx_cap = s->count;
    }
    size_t got = 0;
    int rc = varint_decode_indices(s->sel.data, s->sel.len, s->n_ctx, c->idx, s->count, &got);
    if (rc < 0 || got != s->count)
        return errmsg_set(&c->err, ERR_DATA,
                          "bad selection list (%s%zu of %u indices) at step %u layer %u head %u",
                          rc == ERR_LIMIT ? "more than " : "", got, s->count, s->t, s->l, s->h);
    return add_job_t(c, group, s->t, s->l, s->h, c->idx, got);
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
    return close_out(c, f, dir, "recall_vs_retention.csv");
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
 * per method, a panel per group; marks at 5% and 5.8% [paper retention targets]. */
static int quality_plot(struct conflicts *c, const char *dir, bool *rendered, bool cosine)
{
    struct plot *p = plot_new(cosine ? "cosine_vs_retention" : "recall_vs_retention", PLOT_LINE);
    if (!p)
        return errmsg_set(&c->err, ERR_NOMEM, "out of memory");
    const char *ylab = cosine ? "mean output cosine" : "mean recall";
    plot_title(p, cosine ? "Output cosine vs retention" : "Recall vs retention");
    plot_xlabel(p, "mean |S|/n", "");
    plot_ylabel(p, ylab, "");
    plot_logscale(p, true, false);
    plot_extra(p, "set arrow from first 0.05, graph 0 to first 0.05, graph 1 nohead dt 2");
    plot_extra(p, "set arrow from first 0.058, graph 0 to first 0.058, graph 1 nohead dt 3");
    /* distinct groups, in order of appearance */
    const char *groups[CONFLICTS_MAX_GROUPS];
    size_t ng = 0;
    for (size_t i = 0; i < c->n_qual && ng < CONFLICTS_MAX_GROUPS; i++) {
        bool seen = false;
        for (size_t g = 0; g < ng; g++)
            seen = seen || !strcmp(groups[g], c->qual[i].group);
        if (!seen)
            groups[ng++] = c->qual[i].group;
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
    double *x = mem_alloc(c->n_qual * sizeof *x), *y = mem_alloc(c->n_qual * sizeof *y);
    bool *used = mem_calloc(c->n_qual ? c->n_qual : 1, sizeof *used);
    if (!x || !y || !used)
        rc = ERR_NOMEM;
    for (size_t i = 0; i < c->n_qual && rc == 0; i++) {
        if (used[i])
            continue;
        size_t g = 0;
        while (g + 1 < ng && strcmp(groups[g], c->qual[i].group))
            g++;
        size_t k = 0;
        for (size_t j = i; j < c->n_qual; j++) {
            const struct qual *q = &c->qual[j];
            if (used[j] || strcmp(q->group, c->qual[i].group) || strcmp(q->method, c->qual[i].method))
                continue;
            used[j] = true;
            /* insertion by x so lines run left to right */
            double xv = q->n ? q->ret_sum / (double)q->n : 0;
            double yv = mean(cosine ? q->cosine : q->recall, q->n);
            size_t m = k++;
            while (m > 0 && x[m - 1] > xv) {
                x[m] = x[m - 1];
                y[m] = y[m - 1];
                m--;
            }
            x[m] = xv;
            y[m] = yv;
        }
        rc = plot_series(p, ng > 1 ? (int)g : 0, c->qual[i].method, x, y, k);
    }
    mem_free(x);
    mem_free(y);
    mem_free(used);
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
