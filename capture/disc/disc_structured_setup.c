/*
 * disc_structured_setup: parameters, shape checks, header and the capture interface of the
 * structured synthetic DiSC mask source (see disc_structured.h).
 */
#include "capture/disc/disc_structured.h"
#include "capture/disc/disc_structured_impl.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_ctr.h"
#include "capture/disc/disc_flops.h"
#include "capture/disc/disc_keep.h"
#include "capture/disc/dit_sampler.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/rng.h"
#include "common/threads.h"
#include "formats/bitset.h"
#include "formats/disc_hash.h"

/* ---- the capture interface ---- */

static void struct_close(void *inst)
{
    struct disc_structured *c = inst;
    if (!c)
        return;
    disc_keep_release(&c->keep);
    mem_free(c->win);
    mem_free(c->targets);
    if (c->pool)
        pool_free(c->pool);
    disc_lb_free(c->lb);
    mem_free(c->hc.stripes);
    mem_free(c->hc.stripe_bm);
    mem_free(c->hc.b32);
    mem_free(c->hc.b);
    mem_free(c->hc.m);
    mem_free(c->hc.q);
    mem_free(c->row_gen);
    mem_free(c->tokmask);
    mem_free(c->kept);
    mem_free(c->field);
    mem_free(c->ftmp);
    mem_free(c->acc);
    mem_free(c->rs);
    mem_free(c->wrow);
    mem_free(c->scratch);
    mem_free(c->ejs);
    mem_free(c->ess);
    mem_free(c->kbits);
    mem_free(c->krow_nnz);
    mem_free(c->blk_nnz);
    mem_free(c->blk_cells);
    mem_free(c->sparsity_block);
    mem_free(c->nnz_block);
    mem_free(c->sched.t);
    mem_free(c->sched.alpha);
    mem_free(c->sched.sigma);
    mem_free(c->sched.lambda);
    free(c->params_json); /* jansson's malloc */
    free(c->model_json);
    mem_free(c);
}

/* The generator's parameters in range; ERR_USAGE naming the option otherwise. */
static int check_shape(const struct disc_struct_shape *s, struct errmsg *e)
{
    if (s->radius < 0 || s->radius > 64)
        return errmsg_set(e, ERR_USAGE, "--struct-radius %d out of range (0..64)", s->radius);
    if (!(s->decay >= 0 && s->decay <= 1e6))
        return errmsg_set(e, ERR_USAGE, "--struct-decay must be a number in 0..1e6");
    if (s->stripes < 0 || s->stripes > 65536)
        return errmsg_set(e, ERR_USAGE, "--struct-stripes %d out of range (0..65536)", s->stripes);
    if (!(s->stripe_keep >= 0 && s->stripe_keep <= 1))
        return errmsg_set(e, ERR_USAGE, "--struct-stripe-keep must lie in [0, 1]");
    if (!(s->density >= 0 && s->density <= 1))
        return errmsg_set(e, ERR_USAGE, "--struct-density must lie in [0, 1]");
    if (!(s->spread >= 0 && s->spread <= 2))
        return errmsg_set(e, ERR_USAGE, "--struct-spread must lie in [0, 2]");
    if (!(s->row_sigma >= 0 && s->row_sigma <= 4))
        return errmsg_set(e, ERR_USAGE, "--struct-row-sigma must lie in [0, 4]");
    if (s->cluster < 0 || s->cluster > 256)
        return errmsg_set(e, ERR_USAGE, "--struct-cluster %d out of range (0..256)", s->cluster);
    if (!(s->jaccard >= 0 && s->jaccard <= 1))
        return errmsg_set(e, ERR_USAGE, "--struct-jaccard must lie in [0, 1]");
    return 0;
}

/* The model shape with the --heads and --blocks overrides. */
static int shape_config(struct disc_structured *c, struct errmsg *e)
{
    const struct disc_struct_params *p = &c->p;
    struct dit_config *g = &c->cfg;
    int rc = dit_config_get(g, p->model, p->image_size, e);
    if (rc)
        return rc;
    if (p->heads) {
        if (p->heads < 1 || g->hidden % p->heads)
            return errmsg_set(e, ERR_USAGE, "--heads %d does not divide the hidden width %d of %s",
                              p->heads, g->hidden, g->name);
        g->heads = p->heads;
        g->head_dim = g->hidden / p->heads;
    }
    if (p->blocks) {
        if (p->blocks < 1 || p->blocks > g->depth)
            return errmsg_set(e, ERR_USAGE, "--blocks %d out of range (1..%d for %s)", p->blocks,
                              g->depth, g->name);
        g->depth = p->blocks;
    }
    if ((unsigned)g->tokens > DISC_STRUCT_MAX_TOKENS)
        return errmsg_set(e, ERR_USAGE, "N = %d tokens is above the replay's %u", g->tokens,
                          DISC_STRUCT_MAX_TOKENS);
    c->K = p->steps ? p->steps : g->default_steps;
    if (c->K < 1 || c->K > 1000)
        return errmsg_set(e, ERR_USAGE, "steps %d out of range (1..1000)", c->K);
    if (p->st_refresh < 1)
        return errmsg_set(e, ERR_USAGE, "--st-refresh must be >= 1");
    c->L = g->depth, c->H = g->heads, c->N = g->tokens, c->G = g->grid;
    c->words = (c->N + 63) / 64;
    return 0;
}

/* The window offsets (self excluded) with exp(-dist / decay); decay 0: no locality. */
static int build_window(struct disc_structured *c, struct errmsg *e)
{
    const int R = c->p.s.radius;
    c->win = mem_alloc(((size_t)(2 * R + 1) * (2 * R + 1)) * sizeof *c->win);
    if (!c->win)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    c->n_win = 0;
    for (int dy = -R; dy <= R; dy++)
        for (int dx = -R; dx <= R; dx++) {
            if (!dy && !dx)
                continue;
            double d = sqrt((double)(dy * dy + dx * dx));
            double pr = c->p.s.decay > 0 ? exp(-d / c->p.s.decay) : 0.0;
            c->win[c->n_win++] = (struct woff){dy, dx, pr};
        }
    return 0;
}

/* Head densities: stratified draws of Uniform(D - W/2, D + W/2) over the (block, head)
 * pairs in a seeded order, clipped to [1/N, 1]. */
static int build_targets(struct disc_structured *c, struct errmsg *e)
{
    const size_t n = (size_t)c->L * c->H;
    c->targets = mem_alloc(n * sizeof(double));
    uint32_t *perm = mem_alloc(n * sizeof(uint32_t));
    if (!c->targets || !perm) {
        mem_free(perm);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    struct rng g;
    rng_stream(&g, c->p.seed, "struct-density", 0, 0);
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    for (size_t i = n; i > 1; i--) { /* Fisher-Yates */
        size_t j = (size_t)rng_below(&g, (uint64_t)i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    const double D = c->p.s.density, W = c->p.s.spread, lo = 1.0 / c->N;
    c->res.density_lo = INFINITY, c->res.density_hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double d = D + W * (((double)perm[i] + 0.5) / (double)n - 0.5);
        d = d < lo ? lo : d > 1.0 ? 1.0 : d;
        c->targets[i] = d;
        c->res.density_lo = d < c->res.density_lo ? d : c->res.density_lo;
        c->res.density_hi = d > c->res.density_hi ? d : c->res.density_hi;
    }
    mem_free(perm);
    return 0;
}

/* Peak bytes: per-row statistics, the head's row arrays, per-thread buffers, the step's
 * mask statistics and, with kept masks, one whole mask plus its encoded record twice (the
 * packed record and its compressed frame). */
static double estimate(const struct disc_structured *c)
{
    const double N = c->N, words = c->words, T = c->threads, LH = (double)c->L * c->H;
    const double ecap = c->n_win + (c->p.s.stripes < c->N ? c->p.s.stripes : c->N);
    double b = N * sizeof(struct disc_lb_rowstat);
    b += N * (4 * 8.0 + 4 * 4.0) + 2.0 * words * 8 + (double)c->p.s.stripes * 4;
    b += T * (words * 8 + 3.0 * 128 * 4 + ecap * 12);
    b += LH * (sizeof(struct disc_lb_acc) + 8.0);
    if (disc_keep_count(&c->keep))
        b += 3.0 * N * words * 8 + N * 4;
    return b;
}

static int struct_open(void **inst, const void *params, struct errmsg *e)
{
    struct disc_structured *c = mem_calloc(1, sizeof *c);
    *inst = NULL;
    if (!c)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    c->p = *(const struct disc_struct_params *)params;
    int rc = check_shape(&c->p.s, e);
    if (!rc)
        rc = shape_config(c, e);
    if (!rc && c->p.ctr_on) {
        uint64_t num;
        int frac;
        rc = disc_ctr_parse_target(c->p.ctr_target, &num, &frac, e);
        if (!rc)
            c->n_prune = disc_ctr_n_prune(num, frac, (uint64_t)c->N);
    }
    if (!rc)
        rc = disc_keep_parse(&c->keep, c->p.keep_masks, c->L, c->H, c->K, 1, e);
    if (!rc)
        rc = build_window(c, e);
    if (!rc)
        rc = build_targets(c, e);
    if (rc) {
        struct_close(c);
        return rc;
    }
    c->threads = c->p.threads > 0 ? c->p.threads : threads_default();
    c->mem_est = estimate(c);
    *inst = c;
    return 0;
}

static uint64_t struct_estimate(const void *inst)
{
    double b = ceil(((const struct disc_structured *)inst)->mem_est);
    return b < 1.8e19 ? (uint64_t)b : UINT64_MAX;
}

static void struct_what(const void *inst, char *what, size_t n)
{
    const struct disc_structured *c = inst;
    snprintf(what, n, "capture disc --source structured of %s at %d px (N = %d)", c->cfg.name,
             c->cfg.image, c->N);
}

/* The run's state, after the memory check. */
static int struct_prepare(void *inst, struct errmsg *e)
{
    struct disc_structured *c = inst;
    const size_t N = (size_t)c->N, W = (size_t)c->words, T = (size_t)c->threads;
    const size_t LH = (size_t)c->L * c->H, L = (size_t)c->L;
    c->pool = pool_new(c->threads);
    if (!c->pool)
        return errmsg_set(e, ERR_NOMEM, "cannot start %d threads", c->threads);
    int rc = disc_lb_new_std(&c->lb, N, DISC_HASH_K_ODD);
    if (rc)
        return errmsg_set(e, rc, "cannot set up the load-balance counters");
    c->ecap = (size_t)c->n_win + (size_t)c->p.s.stripes;
    struct head_ctx *hc = &c->hc;
    hc->stripes = mem_alloc(((size_t)c->p.s.stripes + 1) * sizeof(uint32_t));
    hc->stripe_bm = mem_alloc(W * sizeof(uint64_t));
    hc->b32 = mem_alloc(N * sizeof(uint64_t));
    hc->b = mem_alloc(N * sizeof(double));
    hc->m = mem_alloc(N * sizeof(double));
    hc->q = mem_alloc(N * sizeof(double));
    c->row_gen = mem_calloc(N, sizeof(uint32_t));
    c->tokmask = mem_alloc(W * sizeof(uint64_t));
    c->kept = mem_alloc(N * sizeof(int32_t));
    c->field = mem_alloc(N * sizeof(float));
    c->ftmp = mem_alloc(N * sizeof(float));
    c->acc = mem_alloc(LH * sizeof *c->acc);
    c->rs = mem_alloc(N * sizeof *c->rs);
    c->wrow = mem_alloc(T * W * sizeof(uint64_t));
    c->scratch = mem_alloc(T * disc_lb_scratch_len(c->lb) * sizeof(uint32_t));
    c->ejs = mem_alloc((T * c->ecap + 1) * sizeof(uint32_t));
    c->ess = mem_alloc((T * c->ecap + 1) * sizeof(double));
    c->blk_nnz = mem_calloc(L, sizeof(double));
    c->blk_cells = mem_calloc(L, sizeof(double));
    c->sparsity_block = mem_calloc(L, sizeof(double));
    c->nnz_block = mem_calloc(L, sizeof(uint64_t));
    c->sched.t = mem_alloc((size_t)c->K * sizeof(uint32_t));
    c->sched.alpha = mem_alloc(((size_t)c->K + 1) * sizeof(double));
    c->sched.sigma = mem_alloc(((size_t)c->K + 1) * sizeof(double));
    c->sched.lambda = mem_alloc(((size_t)c->K + 1) * sizeof(double));
    if (!hc->stripes || !hc->stripe_bm || !hc->b32 || !hc->b || !hc->m || !hc->q || !c->row_gen ||
        !c->tokmask || !c->kept || !c->field || !c->ftmp || !c->acc || !c->rs || !c->wrow ||
        !c->scratch || !c->ejs || !c->ess || !c->blk_nnz || !c->blk_cells || !c->sparsity_block ||
        !c->nnz_block || !c->sched.t || !c->sched.alpha || !c->sched.sigma || !c->sched.lambda)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    dit_schedule_fill(&c->sched, c->K); /* the capture's t_k, so steps map to timesteps */
    return 0;
}

/* params_json: every parameter, the generator's under "struct", and the head targets. */
static json_t *params_json(const struct disc_structured *c)
{
    const struct disc_struct_params *p = &c->p;
    const struct disc_struct_shape *s = &p->s;
    json_t *sj = json_pack("{s:i,s:f,s:i,s:f,s:f,s:f,s:f,s:i,s:f}", "radius", s->radius, "decay",
                           s->decay, "stripes", s->stripes, "stripe_keep", s->stripe_keep,
                           "density", s->density, "spread", s->spread, "row_sigma", s->row_sigma,
                           "cluster", s->cluster, "jaccard", s->jaccard);
    json_t *tj = json_array();
    for (size_t i = 0; i < (size_t)c->L * c->H; i++)
        json_array_append_new(tj, json_real(c->targets[i]));
    json_t *pj =
        json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:I,s:s,s:s,s:i,s:s,s:o,s:o}", "source", "structured",
                  "model", c->cfg.name, "image_size", c->cfg.image, "steps", c->K, "heads", c->H,
                  "blocks", c->L, "seed", (json_int_t)p->seed, "ctr", p->ctr_on ? "target" : "off",
                  "st", "structured", "st_refresh", p->st_refresh, "keep_masks", p->keep_masks,
                  "struct", sj, "density_targets", tj);
    if (pj && p->ctr_on)
        json_object_set_new(pj, "ctr_target", json_string(p->ctr_target));
    return pj;
}

static json_t *model_json(const struct dit_config *g)
{
    return json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s}", "name", g->name, "depth",
                     g->depth, "hidden", g->hidden, "heads", g->heads, "patch", g->patch,
                     "in_channels", g->c_in, "out_channels", g->c_out, "caption_width", g->caption,
                     "text_tokens", g->text_tokens, "image_size", g->image, "tokens", g->tokens,
                     "family", g->class_cond ? "dit" : "pixart");
}

/* The DiscHeader: the model's dimensions with depth = blocks written, no weights, text or
 * sampler (nothing runs), the capture's load-balance sets and FLOP classes. */
static void fill_disc_header(struct disc_structured *c)
{
    const struct dit_config *g = &c->cfg;
    Acceltrace__DiscHeader dh = ACCELTRACE__DISC_HEADER__INIT;
    disc_header_shape(g, &dh);
    dh.weights_source = "none";
    dh.text_source = dh.text_sha256 = dh.null_text_source = dh.null_text_sha256 = "";
    dh.seed = c->p.seed;
    dh.sampler = "none";
    dh.steps = (uint32_t)c->K;
    dh.batch = 1;
    dh.n_timesteps = (size_t)c->K;
    dh.timesteps = c->sched.t;
    dh.n_alphas = dh.n_sigmas = (size_t)c->K + 1;
    dh.alphas = c->sched.alpha;
    dh.sigmas = c->sched.sigma;
    dh.ctr_mode = c->p.ctr_on ? "target" : "off";
    dh.ctr_target = c->p.ctr_on ? c->p.ctr_target : "";
    dh.st_mode = "structured";
    dh.st_refresh = (uint32_t)c->p.st_refresh;
    dh.keep_masks = c->p.keep_masks;
    for (int i = 0; i < DISC_HASH_KINDS; i++)
        c->lb_names[i] = (char *)disc_hash_name(i);
    dh.n_lb_hashes = DISC_HASH_KINDS;
    dh.lb_hashes = c->lb_names;
    dh.lb_k_odd = DISC_HASH_K_ODD;
    for (int i = 0; i < DISC_LB_STD_UNITS; i++)
        c->lb_units[i] = 1u << (DISC_LB_STD_BMIN + i);
    dh.n_lb_units = DISC_LB_STD_UNITS;
    dh.lb_units = c->lb_units;
    dh.lb_bins = DISC_LB_BINS;
    for (int i = 0; i < DISC_F_COUNT; i++)
        c->flop_names[i] = (char *)disc_flop_name(i);
    dh.n_flop_classes = DISC_F_COUNT;
    dh.flop_classes = c->flop_names;
    c->dh = dh;
}

static int struct_header(void *inst, Acceltrace__TraceHeader *hdr, struct errmsg *e)
{
    struct disc_structured *c = inst;
    const struct disc_struct_shape *s = &c->p.s;
    json_t *pj = params_json(c), *mj = model_json(&c->cfg);
    if (pj && mj) {
        c->params_json = json_dumps(pj, JSON_COMPACT | JSON_SORT_KEYS);
        c->model_json = json_dumps(mj, JSON_COMPACT | JSON_SORT_KEYS);
    }
    json_decref(pj);
    json_decref(mj);
    if (!c->params_json || !c->model_json)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    fill_disc_header(c);
    snprintf(c->src_detail, sizeof c->src_detail,
             "structured synthetic DiSC masks, no model run (seed %llu): locality radius %d "
             "decay %g, %d stripes kept %g, head density %g +- %g/2 (uniform, stratified), row "
             "sigma %g, cluster %d, Jaccard %g, CTR %s; all parameters in params_json",
             (unsigned long long)c->p.seed, s->radius, s->decay, s->stripes, s->stripe_keep,
             s->density, s->spread, s->row_sigma, s->cluster, s->jaccard,
             c->p.ctr_on ? c->p.ctr_target : "off");
    Acceltrace__TraceHeader h = ACCELTRACE__TRACE_HEADER__INIT;
    h.params_json = c->params_json;
    h.model_json = c->model_json;
    h.seed = c->p.seed;
    h.source = "synthetic-structured";
    h.source_detail = c->src_detail;
    h.disc = &c->dh;
    c->hdr = h;
    *hdr = c->hdr; /* the common fields: capture_header_common */
    c->res.K = c->K, c->res.L = c->L, c->res.H = c->H, c->res.N = c->N;
    return 0;
}

const struct dit_config *disc_struct_config(const void *inst)
{
    return &((const struct disc_structured *)inst)->cfg;
}

const struct disc_struct_result *disc_struct_result(const void *inst)
{
    return &((const struct disc_structured *)inst)->res;
}

const struct capture_ops capture_disc_structured_ops = {
    .name = "disc",
    .summary = "structured synthetic DiSC masks (no model run)",
    .mem_hint = "use a smaller --image-size, fewer --keep-masks or raise --mem-limit",
    .open = struct_open,
    .mem_estimate = struct_estimate,
    .mem_what = struct_what,
    .prepare = struct_prepare,
    .header = struct_header,
    .run = disc_struct_run,
    .close = struct_close,
};
