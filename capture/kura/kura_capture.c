/*
 * kura_capture: Kuramoto orientation-diffusion capture (docs/kura.md).
 */
#include "capture/kura/kura_capture.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capture/kura/kura_capture_impl.h"
#include "capture/kura/kura_net.h"
#include "capture/kura/kura_sde.h"
#include "capture/kura/kura_tilestream.h"
#include "capture/nn/nn.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/rng.h"
#include "common/threads.h"
#include "formats/kura_fixed.h"
#include "formats/kura_png.h"

void kura_params_default(struct kura_params *p)
{
    memset(p, 0, sizeof *p);
    p->h = p->w = 96;
    kura_params_preset(p, "t100", NULL);
    kura_data_parse("fingerprint", NULL, &p->data, NULL);
    p->seed = 1;
    p->score = KURA_SCORE_ORACLE;
    p->drift = KURA_DRIFT_FIXED;
    p->check_drift = true;
    p->start = KURA_START_VONMISES;
    p->oracle_mem_bytes = (uint64_t)1 << 30;
    p->mem_limit_bytes = (uint64_t)8 << 30;
    p->png_every = 10;
}

int kura_params_preset(struct kura_params *p, const char *name, struct errmsg *e)
{
    int rc = kura_preset(name, &p->t, &p->c0, &p->c_end, &p->beta0, &p->beta_end, e);
    if (rc == 0)
        snprintf(p->preset, sizeof p->preset, "%s", name);
    return rc;
}

void kura_result_release(struct kura_result *r)
{
    mem_free(r->theta0);
    mem_free(r->theta_final);
    r->theta0 = r->theta_final = NULL;
}

/* a * b + c saturating at UINT64_MAX (estimates only). */
static uint64_t sat_madd(uint64_t a, uint64_t b, uint64_t c)
{
    if (a && b > UINT64_MAX / a)
        return UINT64_MAX;
    return a * b > UINT64_MAX - c ? UINT64_MAX : a * b + c;
}

uint64_t kura_capture_mem_estimate(const struct kura_params *p)
{
    uint64_t n = (uint64_t)p->h * p->w, t = p->t > 2 ? (uint64_t)p->t : 3;
    /* sampler: u, ufw, s, tmp, theta0, x0, fwd_end, theta (8 B each) and the Q1.15 record
     * map; two drift evaluators of q, u_q, d, uf (2 + 4 + 4 + 8 B); the data generator's
     * orientation, scratch and own map (3 x 8 B); one record packed and compressed in the
     * writer (2 x 2 B) */
    uint64_t per_px = 8 * 8 + 2 + 2 * 18 + 3 * 8 + 4;
    /* oracle (docs/kura.md#score-sources): the whole trajectory while T H W 8 <= --oracle-mem, else
     * ceil(sqrt T) segment maps, (T-2)/seg + 1 checkpoints and two scratch maps */
    if (p->score == KURA_SCORE_ORACLE) {
        uint64_t traj = sat_madd(t * 8, n, 0);
        if (traj <= p->oracle_mem_bytes) {
            per_px += (t - 1) * 8;
        } else {
            uint64_t seg = (uint64_t)ceil(sqrt((double)t));
            per_px += ((t - 2) / seg + 1 + seg + 2) * 8;
        }
    }
    if (p->png_dir)
        per_px += 4;                             /* one RGB(A) image at a time */
    uint64_t b = sat_madd(n, per_px, 10u << 20); /* + the program [measured: 10 MiB RSS] */
    struct stat sb; /* score net: the file read whole, then its tensors unpacked (kura_net) */
    if (p->score == KURA_SCORE_NET && p->weights_path && stat(p->weights_path, &sb) == 0 &&
        sb.st_size > 0)
        b = sat_madd(2, (uint64_t)sb.st_size, b);
    for (int k = 0; k < p->n_tile_shapes && k < KURA_MAX_TILE_SHAPES; k++) {
        /* kura_tilestream: n_cyc = n_w + tiles (n_w + 26) cycles of (n_h + 4) input and n_h
         * output words plus two control bytes, held three times (stream, byte copy,
         * packed record) */
        uint64_t nh = p->tile_nh[k] ? p->tile_nh[k] : 1, nw = p->tile_nw[k] ? p->tile_nw[k] : 1;
        uint64_t tiles = ((p->h + nh - 1) / nh) * ((p->w + nw - 1) / nw);
        uint64_t cyc = sat_madd(tiles, nw + 26, nw);
        b = sat_madd(3 * cyc, 4 * (2 * nh + 4) + 2, b);
    }
    return b;
}

/* The parameter checks (ERR_USAGE), without the memory estimate. */
static int validate_params(const struct kura_params *p, struct errmsg *e)
{
    if (p->h < 5 || p->w < 5 || p->h > 16384 || p->w > 16384)
        return errmsg_set(e, ERR_USAGE, "map size %zux%zu out of range (5..16384 per side)", p->h,
                          p->w);
    if (p->png_dir && p->png_every < 1)
        return errmsg_set(e, ERR_USAGE, "png step interval must be >= 1");
    if (p->score == KURA_SCORE_NET && !p->weights_path)
        return errmsg_set(e, ERR_USAGE, "score 'net' needs weights");
    if (p->n_tile_shapes < 0 || p->n_tile_shapes > KURA_MAX_TILE_SHAPES)
        return errmsg_set(e, ERR_USAGE, "too many tile-stream shapes (at most %d)",
                          KURA_MAX_TILE_SHAPES);
    struct kura_schedule s;
    int rc = kura_schedule_init(&s, p->preset, p->t, p->c0, p->c_end, p->beta0, p->beta_end, e);
    kura_schedule_release(&s);
    return rc;
}

/* The parameter checks, then the memory estimate against p->mem_limit_bytes (ERR_LIMIT). */
static int validate(const struct kura_params *p, struct errmsg *e)
{
    int rc = validate_params(p, e);
    if (rc)
        return rc;
    uint64_t need = kura_capture_mem_estimate(p);
    if (need > p->mem_limit_bytes) {
        char what[96];
        snprintf(what, sizeof what, "capture kura of a %zux%zu map over %d steps", p->h, p->w,
                 p->t);
        return mem_budget_refuse(e, what, need, p->mem_limit_bytes,
                                 "use a smaller --size or raise --mem-limit");
    }
    return 0;
}

/* ---- the run ---- */

/* Receives each record after the header; 0 or a negative err to stop. */
typedef int (*kura_emit_fn)(void *ctx, const Acceltrace__Record *rec);

struct run {
    const struct kura_params *p;
    struct kura_schedule sch;
    struct thread_pool *pool;
    struct kura_net *net;
    size_t n;
    struct kura_drift dfw, drv; /* forward and reverse evaluators */
    double *u, *s, *tmp;
    double *ufw;           /* forward drift (kept apart from the reverse drift u) */
    double *seg_a, *seg_b; /* checkpoint recomputation states */
    double *theta0, *x0;
    /* oracle storage: all mu (memory mode) or checkpoints + one segment */
    bool ckpt;
    int seg_len;     /* K = ceil(sqrt(T)) */
    double *mu_all;  /* (T-1, n) mu_i at index i-1 */
    double *ckpts;   /* (n_ckpt, n) theta^{jK} */
    double *seg_mu;  /* (K, n) */
    int seg_cached;  /* segment index in seg_mu, -1 none */
    double *fwd_end; /* theta^{T-1} */
    uint8_t *phase_bytes;
    struct capture_sink *sink; /* capture_run's sink: its progress reporter; NULL under exec */
    struct progress pg_own;    /* the reporter under exec */
    struct progress *pg;       /* the one in use; NULL before the forward pass */
    uint64_t pg_done;
    bool resumed; /* the forward pass recomputes what the checkpoint's run did: not counted */
};

/* Forward step i [docs/kura.md#sde-and-schedule]: next = wrap(prev + u_i(prev) + sigma_i eps), and
 * mu = wrap(prev + u_i(prev)) when mu is not NULL. */
static int forward_step(struct run *r, int i, const double *prev, double *next, double *mu)
{
    const struct kura_params *p = r->p;
    double c = r->sch.c[i];
    int rc = kura_drift_eval(&r->dfw, prev, p->drift, c, KURA_KREF_GAIN * c, KURA_PSI_REF, false,
                             r->ufw, NULL, NULL);
    if (rc)
        return rc;
    struct rng g;
    rng_stream(&g, p->seed, "kura/forward", (uint64_t)i, 0);
    double sg = r->sch.sigma[i];
    for (size_t k = 0; k < r->n; k++) {
        double eps = rng_normal(&g);
        if (mu)
            mu[k] = kura_wrap(prev[k] + r->ufw[k]);
        next[k] = kura_wrap(prev[k] + r->ufw[k] + sg * eps);
    }
    return 0;
}

static void pg_tick(struct run *r)
{
    ++r->pg_done;
    if (r->pg)
        progress_update(r->pg, r->pg_done);
}

static int forward_pass(struct run *r)
{
    int T = r->sch.t;
    size_t n = r->n;
    double *cur = r->tmp, *nxt = r->fwd_end;
    memcpy(cur, r->theta0, n * sizeof(double));
    for (int i = 1; i < T; i++) {
        double *mu = NULL;
        if (r->p->score == KURA_SCORE_ORACLE) {
            if (!r->ckpt)
                mu = r->mu_all + (size_t)(i - 1) * n;
            else if ((i - 1) % r->seg_len == 0)
                memcpy(r->ckpts + (size_t)((i - 1) / r->seg_len) * n, cur, n * sizeof(double));
        }
        int rc = forward_step(r, i, cur, nxt, mu);
        if (rc)
            return rc;
        double *t = cur;
        cur = nxt;
        nxt = t;
        if (!r->resumed)
            pg_tick(r);
    }
    if (cur != r->fwd_end)
        memcpy(r->fwd_end, cur, n * sizeof(double));
    return 0;
}

/* mu_i of the oracle (docs/kura.md#score-sources), from memory or by recomputing its segment. */
static int oracle_mu(struct run *r, int i, const double **mu)
{
    size_t n = r->n;
    if (!r->ckpt) {
        *mu = r->mu_all + (size_t)(i - 1) * n;
        return 0;
    }
    int K = r->seg_len, b = (i - 1) / K;
    if (r->seg_cached != b) {
        /* Recompute theta^{bK}..: the per-step noise substreams make this bit-identical. */
        double *a = r->seg_a, *bb = r->seg_b;
        memcpy(a, r->ckpts + (size_t)b * n, n * sizeof(double));
        for (int j = b * K + 1; j <= b * K + K && j < r->sch.t; j++) {
            int rc = forward_step(r, j, a, bb, r->seg_mu + (size_t)(j - b * K - 1) * n);
            if (rc)
                return rc;
            double *t = a;
            a = bb;
            bb = t;
        }
        r->seg_cached = b;
    }
    *mu = r->seg_mu + (size_t)(i - 1 - b * K) * n;
    return 0;
}

static void fill_phase_bytes(struct run *r, const int16_t *q)
{
    for (size_t k = 0; k < r->n; k++) {
        uint16_t v = (uint16_t)q[k];
        r->phase_bytes[2 * k] = (uint8_t)(v & 0xFF);
        r->phase_bytes[2 * k + 1] = (uint8_t)(v >> 8);
    }
}

static int emit_step(struct run *r, kura_emit_fn emit, void *ctx, int step,
                     Acceltrace__KuraRole role, int i, const double *theta, const int16_t *q,
                     const double *err)
{
    Acceltrace__KuraStep ks = ACCELTRACE__KURA_STEP__INIT;
    Acceltrace__KuraDriftErr de = ACCELTRACE__KURA_DRIFT_ERR__INIT;
    ks.step = step;
    ks.role = role;
    ks.h = (uint32_t)r->p->h;
    ks.w = (uint32_t)r->p->w;
    if (i > 0) {
        double c = r->sch.c[i];
        struct kura_regs regs;
        int rc = kura_regs_init(&regs, c, KURA_KREF_GAIN * c, KURA_PSI_REF);
        if (rc)
            return rc;
        ks.c = c;
        ks.beta = r->sch.beta[i];
        ks.sigma = r->sch.sigma[i];
        ks.k = c;
        ks.kref = KURA_KREF_GAIN * c;
        ks.psi_ref = KURA_PSI_REF;
        ks.g = regs.g;
        ks.r_s = regs.r_s;
        ks.r_c = regs.r_c;
    }
    fill_phase_bytes(r, q);
    ks.phase_q15.data = r->phase_bytes;
    ks.phase_q15.len = 2 * r->n;
    ks.order_r = kura_order_r(theta, r->n);
    if (err) {
        de.max = err[0];
        de.mean = err[1];
        ks.drift_err = &de;
    }
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_KURA_STEP;
    rec.kura_step = &ks;
    return emit(ctx, &rec);
}

static int emit_tiles(struct run *r, kura_emit_fn emit, void *ctx, int i, uint32_t nh, uint32_t nw,
                      struct kura_result *res)
{
    struct kura_tilestream t;
    int rc = kura_tilestream_build(&t, r->drv.q, r->drv.u_q, r->p->h, r->p->w, nh, nw);
    if (rc)
        return rc;
    size_t nin = (size_t)t.n_cyc * (nh + 4), nout = (size_t)t.n_cyc * nh;
    uint8_t *bin = mem_alloc(nin * 4), *bout = mem_alloc(nout * 4);
    if (!bin || !bout) {
        rc = ERR_NOMEM;
        goto done;
    }
    for (size_t k = 0; k < nin; k++)
        for (int b = 0; b < 4; b++)
            bin[4 * k + b] = (uint8_t)(t.in_data[k] >> (8 * b));
    for (size_t k = 0; k < nout; k++)
        for (int b = 0; b < 4; b++)
            bout[4 * k + b] = (uint8_t)((uint32_t)t.out_data[k] >> (8 * b));
    Acceltrace__KuraTiles kt = ACCELTRACE__KURA_TILES__INIT;
    kt.step = i;
    kt.n_h = nh;
    kt.n_w = nw;
    kt.n_tiles = t.n_tiles;
    kt.n_cyc = t.n_cyc;
    kt.in_ctrl.data = t.in_ctrl;
    kt.in_ctrl.len = t.n_cyc;
    kt.in_data.data = bin;
    kt.in_data.len = nin * 4;
    kt.out_ctrl.data = t.out_ctrl;
    kt.out_ctrl.len = t.n_cyc;
    kt.out_data.data = bout;
    kt.out_data.len = nout * 4;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_KURA_TILES;
    rec.kura_tiles = &kt;
    rc = emit(ctx, &rec);
    if (res)
        res->tile_bytes += 2 * (uint64_t)t.n_cyc + 4 * (uint64_t)(nin + nout);
done:
    mem_free(bin);
    mem_free(bout);
    kura_tilestream_release(&t);
    return rc;
}

static int png_path(char *buf, size_t n, const char *dir, const char *name)
{
    int k = snprintf(buf, n, "%s/%s", dir, name);
    return k < 0 || (size_t)k >= n ? ERR_USAGE : 0;
}

static int png_phase_named(struct run *r, const char *name, const double *theta, struct errmsg *e)
{
    char path[4096];
    if (png_path(path, sizeof path, r->p->png_dir, name))
        return errmsg_set(e, ERR_USAGE, "png directory name too long");
    return kura_png_phase(path, theta, r->p->h, r->p->w, e);
}

static int png_grey_named(struct run *r, const char *name, const double *v, double lo, double hi,
                          struct errmsg *e)
{
    char path[4096];
    if (png_path(path, sizeof path, r->p->png_dir, name))
        return errmsg_set(e, ERR_USAGE, "png directory name too long");
    return kura_png_grey(path, v, r->p->h, r->p->w, lo, hi, e);
}

static void run_release(struct run *r)
{
    kura_schedule_release(&r->sch);
    kura_drift_release(&r->dfw);
    kura_drift_release(&r->drv);
    kura_net_free(r->net);
    if (r->pool)
        pool_free(r->pool);
    mem_free(r->u);
    mem_free(r->ufw);
    mem_free(r->seg_a);
    mem_free(r->seg_b);
    mem_free(r->s);
    mem_free(r->tmp);
    mem_free(r->theta0);
    mem_free(r->x0);
    mem_free(r->mu_all);
    mem_free(r->ckpts);
    mem_free(r->seg_mu);
    mem_free(r->fwd_end);
    mem_free(r->phase_bytes);
}

/* ---- progress: the driver's reporter under capture_run, an own one under exec ---- */

static void pg_begin(struct run *r, uint64_t total)
{
    if (r->sink) {
        capture_progress_begin(r->sink, total);
        r->pg = &r->sink->progress;
    } else {
        progress_init(&r->pg_own, "kura capture", total, r->p->quiet);
        r->pg = &r->pg_own;
    }
}

static void pg_end(struct run *r)
{
    if (r->sink)
        capture_progress_end(r->sink);
    else if (r->pg)
        progress_finish(r->pg);
    r->pg = NULL;
}

/* A record could not be emitted: the emit callback's message, else a generic one. */
static int emit_failed(struct errmsg *e, int rc)
{
    if (e && e->code == 0)
        errmsg_set(e, rc, "writing a record failed: %s", err_str(rc));
    return rc;
}

/* Phase 1, setup: schedule, pool, score net, drift evaluators, the map-sized buffers and
 * the oracle storage (trajectory or checkpoints), then the data map theta^0. */
static int run_setup(struct run *r, double **theta, struct errmsg *e)
{
    const struct kura_params *p = r->p;
    int rc =
        kura_schedule_init(&r->sch, p->preset, p->t, p->c0, p->c_end, p->beta0, p->beta_end, e);
    if (rc)
        return rc;
    int T = r->sch.t;
    size_t n = p->h * p->w;
    r->n = n;
    int nthreads = p->threads > 0 ? p->threads : threads_default();
    if (nthreads > 1 && n >= 64 * 64) /* tiny maps: threads cost more than they save */
        r->pool = pool_new(nthreads);
    if (p->score == KURA_SCORE_NET) {
        rc = kura_net_load(&r->net, p->weights_path, T, e);
        if (rc)
            return rc;
        /* one BLAS thread: the same bits on every machine (nn.h determinism note) */
        nn_set_threads(1);
    }
    rc = kura_drift_init(&r->dfw, p->h, p->w, r->pool);
    if (rc == 0)
        rc = kura_drift_init(&r->drv, p->h, p->w, r->pool);
    if (rc)
        return errmsg_set(e, rc, "out of memory for %zux%zu drift maps", p->h, p->w);
    r->u = mem_alloc(n * sizeof(double));
    r->ufw = mem_alloc(n * sizeof(double));
    r->s = mem_alloc(n * sizeof(double));
    r->tmp = mem_alloc(n * sizeof(double));
    r->theta0 = mem_alloc(n * sizeof(double));
    r->x0 = mem_alloc(n * sizeof(double));
    r->fwd_end = mem_alloc(n * sizeof(double));
    r->phase_bytes = mem_alloc(2 * n);
    *theta = mem_alloc(n * sizeof(double));
    if (!r->u || !r->ufw || !r->s || !r->tmp || !r->theta0 || !r->x0 || !r->fwd_end ||
        !r->phase_bytes || !*theta)
        goto nomem;
    if (p->score == KURA_SCORE_ORACLE) {
        /* docs/kura.md#score-sources: keep the trajectory while T H W 8 bytes <= --oracle-mem. */
        uint64_t need = (uint64_t)T * n * 8;
        r->ckpt = need > p->oracle_mem_bytes;
        r->seg_len = (int)ceil(sqrt((double)T));
        if (!r->ckpt) {
            r->mu_all = mem_alloc((size_t)(T - 1) * n * sizeof(double));
            if (!r->mu_all)
                goto nomem;
        } else {
            size_t nck = (size_t)((T - 2) / r->seg_len + 1);
            r->ckpts = mem_alloc(nck * n * sizeof(double));
            r->seg_mu = mem_alloc((size_t)r->seg_len * n * sizeof(double));
            r->seg_a = mem_alloc(n * sizeof(double));
            r->seg_b = mem_alloc(n * sizeof(double));
            if (!r->ckpts || !r->seg_mu || !r->seg_a || !r->seg_b)
                goto nomem;
        }
    }
    return kura_data_generate(&p->data, p->h, p->w, p->seed, r->theta0, r->x0, r->pool, e);
nomem:
    return errmsg_set(e, ERR_NOMEM, "out of memory for a %zux%zu capture", p->h, p->w);
}

/* Phase 2, forward pass and reverse start [docs/kura.md#sde-and-schedule]; the data images; the
 * DATA record (theta^0 at step -1). */
static int run_forward(struct run *r, double *theta, double *fwd_r, kura_emit_fn emit, void *ctx,
                       struct errmsg *e)
{
    const struct kura_params *p = r->p;
    size_t n = r->n;
    pg_begin(r, 2 * (uint64_t)(r->sch.t - 1));
    int rc = forward_pass(r);
    if (rc)
        return errmsg_set(e, rc, "forward pass failed: %s", err_str(rc));
    *fwd_r = kura_order_r(r->fwd_end, n);
    if (p->start == KURA_START_FORWARD) {
        memcpy(theta, r->fwd_end, n * sizeof(double));
    } else {
        struct rng g;
        rng_stream(&g, p->seed, "kura/terminal", 0, 0);
        for (size_t k = 0; k < n; k++)
            theta[k] = kura_wrap(rng_von_mises(&g, 0.0, r->sch.kappa));
    }
    if (p->png_dir) {
        if ((rc = io_mkdir_p(p->png_dir, 0755, e)))
            return rc;
        for (size_t k = 0; k < n; k++)
            r->tmp[k] = kura_theta_to_x(r->theta0[k]);
        if ((rc = png_phase_named(r, "data.png", r->theta0, e)) ||
            (rc = png_grey_named(r, "data_x.png", r->tmp, -1.0, 1.0, e)))
            return rc;
    }
    if (r->resumed) /* its DATA record is in the trace already */
        return 0;
    kura_drift_quantize(&r->drv, r->theta0);
    rc = emit_step(r, emit, ctx, -1, ACCELTRACE__KURA_ROLE__KURA_ROLE_DATA, 0, r->theta0, r->drv.q,
                   NULL);
    return rc ? emit_failed(e, rc) : 0;
}

/* Score s_i(theta) into r->s [docs/kura.md#score-sources]. */
static int run_score(struct run *r, int i, const double *theta, struct errmsg *e)
{
    const struct kura_params *p = r->p;
    size_t n = r->n;
    double sg = r->sch.sigma[i];
    int rc = 0;
    switch (p->score) {
    case KURA_SCORE_ORACLE: {
        const double *mu;
        rc = oracle_mu(r, i, &mu);
        if (rc)
            return errmsg_set(e, rc, "oracle recomputation failed: %s", err_str(rc));
        for (size_t k = 0; k < n; k++)
            r->s[k] = kura_oracle_score(theta[k], mu[k], sg);
        break;
    }
    case KURA_SCORE_PRIOR: {
        double kap = kura_prior_kappa(&r->sch, i);
        for (size_t k = 0; k < n; k++)
            r->s[k] = -kap * sin(theta[k] - KURA_PSI_REF);
        break;
    }
    case KURA_SCORE_NET:
        rc = kura_net_score(r->net, theta, p->h, p->w, i, r->s);
        if (rc)
            return errmsg_set(e, rc, "score network failed at step %d", i);
        break;
    case KURA_SCORE_NONE:
        memset(r->s, 0, n * sizeof(double));
        break;
    }
    return 0;
}

/* Drift error and bound over the reverse steps. */
struct drift_acc {
    double err_sum, err_max, bound_max;
};

/* Phase 3, one reverse step i: drift, REVERSE record and its tile frames, image, score and
 * the update theta <- wrap(theta - u + beta s + sigma eps) [docs/kura.md#sde-and-schedule]. */
static int run_reverse_step(struct run *r, int i, double *theta, kura_emit_fn emit, void *ctx,
                            struct drift_acc *a, struct kura_result *res, struct errmsg *e)
{
    const struct kura_params *p = r->p;
    double c = r->sch.c[i], kref = KURA_KREF_GAIN * c;
    double err[2] = {0, 0};
    int rc = kura_drift_eval(&r->drv, theta, p->drift, c, kref, KURA_PSI_REF, p->check_drift, r->u,
                             &err[0], &err[1]);
    if (rc)
        return errmsg_set(e, rc, "drift of reverse step %d failed: %s", i, err_str(rc));
    if (!r->drv.have_q) { /* float drift without check: quantize for the record */
        kura_drift_quantize(&r->drv, theta);
        if (p->n_tile_shapes > 0) {
            struct kura_regs regs;
            rc = kura_regs_init(&regs, c, kref, KURA_PSI_REF);
            if (rc == 0)
                rc = kura_fixed_drift_map(r->drv.q, p->h, p->w, &regs, r->drv.u_q, r->drv.d,
                                          r->pool);
            if (rc)
                return emit_failed(e, rc);
        }
    }
    if (p->check_drift) {
        a->err_sum += err[1];
        if (err[0] > a->err_max)
            a->err_max = err[0];
    }
    double xb = kura_drift_bound(c, kref, KURA_PSI_REF);
    if (xb > a->bound_max)
        a->bound_max = xb;
    rc = emit_step(r, emit, ctx, i, ACCELTRACE__KURA_ROLE__KURA_ROLE_REVERSE, i, theta, r->drv.q,
                   p->check_drift ? err : NULL);
    for (int k = 0; rc == 0 && k < p->n_tile_shapes; k++)
        rc = emit_tiles(r, emit, ctx, i, p->tile_nh[k], p->tile_nw[k], res);
    if (rc)
        return emit_failed(e, rc);
    if (p->png_dir && (r->sch.t - 1 - i) % p->png_every == 0) {
        char name[64];
        snprintf(name, sizeof name, "step_%04d.png", i);
        if ((rc = png_phase_named(r, name, theta, e)))
            return rc;
    }
    if ((rc = run_score(r, i, theta, e)))
        return rc;
    double beta = r->sch.beta[i], sg = r->sch.sigma[i];
    struct rng g;
    rng_stream(&g, p->seed, "kura/reverse", (uint64_t)i, 0);
    for (size_t k = 0; k < r->n; k++) {
        double eps = rng_normal(&g);
        theta[k] = kura_wrap(theta[k] - r->u[k] + beta * r->s[k] + sg * eps);
    }
    pg_tick(r);
    return 0;
}

/* The final images: the sample, its x map and the error against theta^0. */
static int final_pngs(struct run *r, const double *theta, struct errmsg *e)
{
    size_t n = r->n;
    int rc;
    for (size_t k = 0; k < n; k++)
        r->tmp[k] = kura_theta_to_x(theta[k]);
    if ((rc = png_phase_named(r, "final.png", theta, e)) ||
        (rc = png_grey_named(r, "final_x.png", r->tmp, -1.0, 1.0, e)))
        return rc;
    for (size_t k = 0; k < n; k++)
        r->tmp[k] = fabs(kura_wrap(theta[k] - r->theta0[k]));
    return png_grey_named(r, "error.png", r->tmp, 0.0, 0.2, e);
}

/* Phase 4, the end: FINAL record (the sample after step 1, at step 0), images, Summary and
 * the result. On success res owns theta and theta0 (NULL in *theta and r). */
static int run_finish(struct run *r, double **theta, double fwd_r, const struct drift_acc *a,
                      double t_start, kura_emit_fn emit, void *ctx, struct kura_result *res,
                      struct errmsg *e)
{
    const struct kura_params *p = r->p;
    int T = r->sch.t;
    kura_drift_quantize(&r->drv, *theta);
    int rc = emit_step(r, emit, ctx, 0, ACCELTRACE__KURA_ROLE__KURA_ROLE_FINAL, 0, *theta, r->drv.q,
                       NULL);
    if (rc)
        return emit_failed(e, rc);
    double mae, mx;
    kura_circ_err(*theta, r->theta0, r->n, &mae, &mx);
    double wall = progress_now_s() - t_start;
    if (p->png_dir && (rc = final_pngs(r, *theta, e)))
        return rc;

    Acceltrace__KuraSummary ksum = ACCELTRACE__KURA_SUMMARY__INIT;
    Acceltrace__KuraDriftErr de = ACCELTRACE__KURA_DRIFT_ERR__INIT;
    ksum.recon_mae = mae;
    ksum.recon_max = mx;
    ksum.forward_end_r = fwd_r;
    ksum.reverse_steps = (uint32_t)(T - 1);
    ksum.recon_bound = kura_recon_bound(&r->sch);
    if (p->check_drift) {
        de.max = a->err_max;
        de.mean = a->err_sum / (T - 1);
        ksum.drift_err = &de;
    }
    Acceltrace__Summary sum = ACCELTRACE__SUMMARY__INIT;
    sum.workload = (char *)capture_kura_ops.name;
    sum.wall_seconds = p->reproducible ? 0.0 : wall;
    sum.kura = &ksum;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_SUMMARY;
    rec.summary = &sum;
    if ((rc = emit(ctx, &rec)))
        return emit_failed(e, rc);
    if (res) {
        res->recon_mae = mae;
        res->recon_max = mx;
        res->recon_bound = ksum.recon_bound;
        res->forward_end_r = fwd_r;
        res->drift_checked = p->check_drift;
        res->drift_err_max = a->err_max;
        res->drift_err_mean = p->check_drift ? a->err_sum / (T - 1) : 0.0;
        res->drift_bound_max = a->bound_max;
        res->wall_s = wall;
        res->reverse_steps = T - 1;
        res->checkpointed = r->ckpt;
        res->h = p->h;
        res->w = p->w;
        res->theta_final = *theta;
        res->theta0 = r->theta0;
        *theta = NULL;
        r->theta0 = NULL;
    }
    return 0;
}

struct kura_capture;
static int resume_state(struct kura_capture *c, struct run *r, double *theta, struct drift_acc *acc,
                        struct kura_result *res);
static int reverse_done(struct kura_capture *c, struct run *r, double *theta, struct drift_acc *acc,
                        struct errmsg *e);

/* The four phases; sink (may be NULL) lends its progress reporter; c (may be NULL) is the
 * capture instance whose checkpoints the reverse steps write and whose loaded state a
 * resumed run (sink->resume_unit > 0) starts from. */
static int exec_phases(const struct kura_params *p, kura_emit_fn emit, void *ctx,
                       struct capture_sink *sink, struct kura_capture *c, struct kura_result *res,
                       struct errmsg *e)
{
    double t_start = progress_now_s();
    struct run r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.sink = sink;
    r.seg_cached = -1;
    double *theta = NULL, fwd_r = 0;
    struct drift_acc acc = {0, 0, 0};
    if (res)
        memset(res, 0, sizeof *res);
    if (e) {
        e->code = 0;
        e->text[0] = '\0';
    }
    int rc = validate(p, e);
    if (!rc)
        rc = run_setup(&r, &theta, e);
    r.resumed = sink && sink->resume_unit > 0;
    if (!rc)
        rc = run_forward(&r, theta, &fwd_r, emit, ctx, e);
    int i0 = r.resumed && !rc ? resume_state(c, &r, theta, &acc, res) : r.sch.t - 1;
    for (int i = i0; !rc && i >= 1; i--) {
        rc = run_reverse_step(&r, i, theta, emit, ctx, &acc, res, e);
        if (!rc && c)
            rc = reverse_done(c, &r, theta, &acc, e);
    }
    pg_end(&r);
    if (!rc)
        rc = run_finish(&r, &theta, fwd_r, &acc, t_start, emit, ctx, res, e);
    mem_free(theta);
    run_release(&r);
    return rc;
}

/* ---- the capture interface ---- */

struct kura_capture {
    struct kura_params p;
    Acceltrace__KuraHeader kh;
    struct kura_header_store st;
    struct kura_result res;
    struct capture_sink *sink; /* of the running capture (its checkpoints) */
    /* the running reverse pass, for checkpoint_save */
    const double *live_theta;
    const struct drift_acc *live_acc;
    size_t n;
    /* what checkpoint_load read: the map after the reverse steps before the unit */
    double *rs_theta; /* (h w) */
    struct drift_acc rs_acc;
    uint64_t rs_tile_bytes, rs_unit;
};

/* A resumed run after its forward pass: the state of the checkpoint; returns the first
 * reverse step to run. Units: T - 1 forward steps, then one per reverse step. */
static int resume_state(struct kura_capture *c, struct run *r, double *theta, struct drift_acc *acc,
                        struct kura_result *res)
{
    memcpy(theta, c->rs_theta, r->n * sizeof(double));
    *acc = c->rs_acc;
    if (res)
        res->tile_bytes = c->rs_tile_bytes;
    r->pg_done = c->rs_unit;
    if (r->pg)
        progress_update(r->pg, r->pg_done);
    return (int)(2 * (uint64_t)(r->sch.t - 1) - c->rs_unit);
}

/* After a reverse step: the map, the drift statistics and the tile bytes so far are the
 * whole state of the units done (the forward pass is recomputed on resume). */
static int reverse_done(struct kura_capture *c, struct run *r, double *theta, struct drift_acc *acc,
                        struct errmsg *e)
{
    c->live_theta = theta;
    c->live_acc = acc;
    c->n = r->n;
    return capture_checkpoint(c->sink, r->pg_done, e);
}

/* Checkpoint layout (little-endian host words): u32 version 1, u32 T, u64 h w, u64 unit,
 * f64 drift err_sum, err_max, bound_max, u64 tile bytes, f64 theta[h w]. */
static int kura_ckpt_save(void *inst, uint64_t unit, FILE *f, struct errmsg *e)
{
    const struct kura_capture *c = inst;
    uint32_t head[2] = {1, (uint32_t)c->p.t};
    uint64_t n = c->n, tb = c->res.tile_bytes;
    if (fwrite(head, 4, 2, f) != 2 || fwrite(&n, 8, 1, f) != 1 || fwrite(&unit, 8, 1, f) != 1 ||
        fwrite(c->live_acc, sizeof *c->live_acc, 1, f) != 1 || fwrite(&tb, 8, 1, f) != 1 ||
        fwrite(c->live_theta, sizeof(double), n, f) != n)
        return errmsg_set(e, ERR_NOMEM, "out of memory for a checkpoint");
    return 0;
}

static int kura_ckpt_load(void *inst, uint64_t unit, FILE *f, const char *path, struct errmsg *e)
{
    struct kura_capture *c = inst;
    uint32_t head[2] = {0, 0};
    uint64_t n = 0, u = 0, want = (uint64_t)c->p.h * c->p.w, t1 = (uint64_t)c->p.t - 1;
    long off = ftell(f);
    if (fread(head, 4, 2, f) != 2 || head[0] != 1)
        return errmsg_set(e, ERR_DATA, "checkpoint '%s': bad kura state version at offset %ld",
                          path, off);
    if (head[1] != (uint32_t)c->p.t || fread(&n, 8, 1, f) != 1 || n != want)
        return errmsg_set(e, ERR_DATA,
                          "checkpoint '%s': steps or map size at offset %ld are not this run's",
                          path, off + 4);
    off = ftell(f);
    if (fread(&u, 8, 1, f) != 1 || u != unit || u < t1 || u > 2 * t1)
        return errmsg_set(e, ERR_DATA, "checkpoint '%s': unit at offset %ld is not a reverse step",
                          path, off);
    mem_free(c->rs_theta);
    c->rs_theta = mem_alloc(n * sizeof(double));
    if (!c->rs_theta)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    off = ftell(f);
    if (fread(&c->rs_acc, sizeof c->rs_acc, 1, f) != 1 || fread(&c->rs_tile_bytes, 8, 1, f) != 1 ||
        fread(c->rs_theta, sizeof(double), n, f) != n || fgetc(f) != EOF)
        return errmsg_set(e, ERR_DATA,
                          "checkpoint '%s': kura state at offset %ld is truncated "
                          "or too long",
                          path, off);
    c->rs_unit = u;
    return 0;
}

const struct kura_result *kura_capture_result(const void *inst)
{
    return &((const struct kura_capture *)inst)->res;
}

void kura_capture_take_result(void *inst, struct kura_result *out)
{
    struct kura_capture *c = inst;
    *out = c->res;
    memset(&c->res, 0, sizeof c->res);
}

static int kura_open(void **inst, const void *params, struct errmsg *e)
{
    struct kura_capture *c = mem_calloc(1, sizeof *c);
    *inst = c;
    if (!c)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    c->p = *(const struct kura_params *)params;
    return validate_params(&c->p, e);
}

static uint64_t kura_estimate(const void *inst)
{
    return kura_capture_mem_estimate(&((const struct kura_capture *)inst)->p);
}

static void kura_what(const void *inst, char *what, size_t n)
{
    const struct kura_params *p = &((const struct kura_capture *)inst)->p;
    snprintf(what, n, "capture kura of a %zux%zu map over %d steps", p->h, p->w, p->t);
}

/* Fails before the trace is created when images cannot be written. */
static int kura_prepare(void *inst, struct errmsg *e)
{
    const struct kura_params *p = &((struct kura_capture *)inst)->p;
    return p->png_dir ? io_mkdir_p(p->png_dir, 0755, e) : 0;
}

static int kura_header(void *inst, Acceltrace__TraceHeader *hdr, struct errmsg *e)
{
    struct kura_capture *c = inst;
    acceltrace__kura_header__init(&c->kh);
    kura_header_store_release(&c->st);
    int rc = validate(&c->p, e);
    return rc ? rc : kura_header_build(&c->p, hdr, &c->kh, &c->st, e);
}

/* The kura emit callback onto a capture sink. */
struct sink_ctx {
    struct capture_sink *sink;
    struct errmsg *e;
};

static int sink_emit(void *vctx, const Acceltrace__Record *rec)
{
    struct sink_ctx *x = vctx;
    return capture_emit(x->sink, rec, NULL, x->e);
}

static int kura_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    struct kura_capture *c = inst;
    struct sink_ctx x = {sink, e};
    kura_result_release(&c->res);
    c->sink = sink;
    return exec_phases(&c->p, sink_emit, &x, sink, c, &c->res, e);
}

static void kura_close(void *inst)
{
    struct kura_capture *c = inst;
    if (!c)
        return;
    kura_header_store_release(&c->st);
    kura_result_release(&c->res);
    mem_free(c->rs_theta);
    mem_free(c);
}

const struct capture_ops capture_kura_ops = {
    .name = "kura",
    .summary = "Kuramoto orientation diffusion with the SA-Kura drift",
    .mem_hint = "use a smaller --size or raise --mem-limit",
    .open = kura_open,
    .mem_estimate = kura_estimate,
    .mem_what = kura_what,
    .prepare = kura_prepare,
    .header = kura_header,
    .run = kura_run,
    .close = kura_close,
    .checkpoint_save = kura_ckpt_save,
    .checkpoint_load = kura_ckpt_load,
};
