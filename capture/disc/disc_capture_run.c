/*
 * disc_capture_run: the sampler runs of a DiSC capture (dense reference, CTR-only, main)
 * with CTR and ST executed for real, their statistics and the DiscStep, DiscMask and
 * Summary records (docs/disc.md). The run() of capture_disc_ops: see disc_capture.h.
 */
#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_capture_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "capture/capture.h"
#include "capture/disc/disc_ctr.h"
#include "capture/disc/disc_keep.h"
#include "capture/disc/disc_png.h"
#include "capture/disc/dit.h"
#include "capture/nn/nn.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/threads.h"
#include "formats/disc_hash.h"

struct run {
    struct disc_capture *c;
    struct dit_state *st;
    bool ctr, st_on, main;
    size_t n; /* latent elements */
    float *prev, *d, *dsort, *epsb;
    int32_t *kept;
    uint64_t *tokmask;
    float *theta; /* [L] */
    float *x0p;   /* the sampler's previous x0hat (dit_sample_from) */
    /* current step */
    int nk;
    float tau;
    double diff_mean, diff_rms, diff_max;
    float dp50, dp90, dp99, dmax;
    bool gen;
    const float *dense_traj;
    struct capture_sink *sink; /* records (the main run only) and progress */
    struct errmsg *e;
    struct disc_lb_acc *acc; /* [B][L][h] */
    uint64_t *nnz_block;     /* [L] */
    struct disc_sums s;      /* pooled sparsity and prune sums (main run) */
    uint64_t prog_base;      /* progress units of the runs before this one */
};

static int emit(struct run *r, const Acceltrace__Record *rec, const struct trace_key *key)
{
    return capture_emit(r->sink, rec, key, r->e);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static int eps_cb(void *vr, int k, uint32_t t, const float *x, float *eps)
{
    struct run *r = vr;
    struct disc_capture *c = r->c;
    const struct dit_config *g = &c->cfg;
    int N = g->tokens, L = g->depth;
    size_t words = ((size_t)N + 63) / 64;
    /* CTR selection (docs/disc.md#ctr-selection): step 0 keeps all; else d_i = max |x_k - x_{k-1}|
     * per token. */
    r->tau = NAN;
    r->diff_mean = r->diff_rms = r->diff_max = NAN;
    r->dp50 = r->dp90 = r->dp99 = r->dmax = NAN;
    r->nk = N;
    if (k > 0) {
        disc_ctr_token_max(x, r->prev, g->c_in, g->lat, g->patch, r->d);
        disc_ctr_diff_stats(x, r->prev, r->n, &r->diff_mean, &r->diff_rms, &r->diff_max);
        memcpy(r->dsort, r->d, (size_t)N * sizeof(float));
        qsort(r->dsort, (size_t)N, sizeof(float), cmp_float);
        r->dp50 = disc_ctr_quantile(r->dsort, (size_t)N, 50);
        r->dp90 = disc_ctr_quantile(r->dsort, (size_t)N, 90);
        r->dp99 = disc_ctr_quantile(r->dsort, (size_t)N, 99);
        r->dmax = r->dsort[N - 1];
        if (r->ctr) {
            r->tau = c->p.ctr == DISC_CTR_TAU ? c->p.ctr_tau
                                              : disc_ctr_tau_for_prune(r->d, (size_t)N, c->n_prune);
            r->nk = disc_ctr_select(r->d, (size_t)N, r->tau, r->kept, r->tokmask);
        }
    }
    if (r->nk == N) {
        for (int i = 0; i < N; i++)
            r->kept[i] = i;
        memset(r->tokmask, 0, words * sizeof(uint64_t));
        for (int i = 0; i < N; i++)
            r->tokmask[i >> 6] |= 1ull << (i & 63);
    }
    memcpy(r->prev, x, r->n * sizeof(float));
    /* ST schedule (docs/disc.md#st-masks): generate when k mod K_r = 0, else reuse. */
    r->gen = r->st_on && k % c->p.st_refresh == 0;
    struct dit_fwd f = {.t = (double)t,
                        .kept = r->kept,
                        .n_kept = r->nk,
                        .st = !r->st_on ? DIT_ST_OFF
                              : r->gen  ? DIT_ST_GENERATE
                                        : DIT_ST_REUSE,
                        .theta = r->theta,
                        .st_target = -1.0,
                        .pool = c->pool};
    if (r->st_on && c->p.st == DISC_ST_TARGET && k == 0) {
        f.st_target = c->p.st_target;
        f.alpha_out = c->res.alpha;
        f.theta_out = r->theta;
        f.short_out = c->res.st_short;
        for (int b = 0; b < L; b++)
            c->res.st_short[b] = false;
    }
    int rc = dit_forward(c->model, r->st, x, &f, r->epsb);
    if (rc)
        return errmsg_set(r->e, rc, "%s", dit_model_errmsg(c->model));
    if (c->B == 2) {
        /* CFG (docs/disc.md#sampler): eps = eps_u + w (eps_c - eps_u), batch 0 = cond, 1 = null. */
        float w = (float)c->p.cfg_scale;
        const float *ec = r->epsb, *eu = r->epsb + r->n;
        for (size_t i = 0; i < r->n; i++)
            eps[i] = eu[i] + w * (ec[i] - eu[i]);
    } else {
        memcpy(eps, r->epsb, r->n * sizeof(float));
    }
    return 0;
}

void disc_mask_set_lb(Acceltrace__DiscMask *m, const struct disc_lb_acc *a,
                      struct disc_mask_lb_buf *buf)
{
    for (int hsh = 0; hsh < DISC_HASH_KINDS; hsh++)
        for (int u = 0; u < DISC_LB_STD_UNITS; u++) {
            buf->lbmax[hsh * DISC_LB_STD_UNITS + u] = a->max_sum[hsh][u];
            buf->lbstd[hsh * DISC_LB_STD_UNITS + u] = a->std_sum[hsh][u];
        }
    for (int bin = 0; bin < DISC_LB_BINS; bin++) {
        buf->brows[bin] = a->bin_rows[bin];
        buf->bnnz[bin] = a->bin_nnz[bin];
        for (int hsh = 0; hsh < DISC_HASH_KINDS; hsh++)
            for (int u = 0; u < DISC_LB_STD_UNITS; u++) {
                size_t i = ((size_t)bin * DISC_HASH_KINDS + hsh) * DISC_LB_STD_UNITS + u;
                buf->bmax[i] = a->bin_max[bin][hsh][u];
                buf->bstd[i] = a->bin_std[bin][hsh][u];
            }
    }
    m->n_lb_max = m->n_lb_std = DISC_MASK_LB_N;
    m->lb_max = buf->lbmax;
    m->lb_std = buf->lbstd;
    m->n_bin_rows = m->n_bin_nnz = DISC_LB_BINS;
    m->bin_rows = buf->brows;
    m->bin_nnz = buf->bnnz;
    m->n_bin_max = m->n_bin_std = (size_t)DISC_LB_BINS * DISC_MASK_LB_N;
    m->bin_max = buf->bmax;
    m->bin_std = buf->bstd;
}

/* Mask statistics over the computed rows (docs/disc.md#st-masks,
 * docs/disc.md#load-balance-analyzer) and the FLOPs of step k. */
static int step_stats(struct run *r, uint64_t *fd, uint64_t *fc, uint64_t *fa)
{
    struct disc_capture *c = r->c;
    const struct dit_config *g = &c->cfg;
    int N = g->tokens, L = g->depth, H = g->heads, B = c->B;
    size_t words = ((size_t)N + 63) / 64;
    for (int b = 0; b < L; b++)
        r->nnz_block[b] = 0;
    if (r->st_on) {
        const uint64_t *filter = r->nk == N ? NULL : r->tokmask;
        for (int bb = 0; bb < B; bb++)
            for (int blk = 0; blk < L; blk++)
                for (int h = 0; h < H; h++) {
                    struct disc_lb_acc *a = &r->acc[((size_t)bb * L + blk) * H + h];
                    disc_lb_acc_init(a, c->lb);
                    if (r->nk > 0) {
                        const uint64_t *mk = dit_state_mask(r->st, bb, blk, h);
                        if (!mk)
                            return errmsg_set(r->e, ERR_IO, "%s", dit_state_errmsg(r->st));
                        int rc = disc_lb_mask(c->lb, mk, (uint32_t)N, words, filter, c->pool, a);
                        if (rc)
                            return errmsg_set(r->e, rc, "out of memory");
                    }
                    r->nnz_block[blk] += a->nnz;
                }
    }
    disc_flops_step(g, B, (uint64_t)r->nk,
                    !r->st_on ? DISC_FLOP_ST_OFF
                    : r->gen  ? DISC_FLOP_ST_GEN
                              : DISC_FLOP_ST_REUSE,
                    r->nnz_block, fd, fc, fa);
    for (int i = 0; i < DISC_F_COUNT; i++) {
        c->res.flops_dense[i] += fd[i];
        c->res.flops_ctr[i] += fc[i];
        c->res.flops_all[i] += fa[i];
    }
    return 0;
}

/* The DiscStep record of step k (docs/disc.md#trace-records) and its token-mask image. */
static int emit_step_record(struct run *r, int k, const float *xn, uint64_t *fd, uint64_t *fc,
                            uint64_t *fa)
{
    struct disc_capture *c = r->c;
    const struct dit_config *g = &c->cfg;
    int N = g->tokens;
    size_t words = ((size_t)N + 63) / 64;
    Acceltrace__DiscStep s = ACCELTRACE__DISC_STEP__INIT;
    s.k = (uint32_t)k;
    s.t = c->sched.t[k];
    s.tau = r->tau;
    s.n_kept = (uint32_t)r->nk;
    s.prune_ratio = 1.0 - (double)r->nk / N;
    uint8_t *tm = mem_alloc(words * 8);
    if (!tm)
        return errmsg_set(r->e, ERR_NOMEM, "out of memory");
    for (size_t w = 0; w < words; w++)
        for (int i = 0; i < 8; i++)
            tm[w * 8 + (size_t)i] = (uint8_t)(r->tokmask[w] >> (8 * i));
    s.token_mask.data = tm;
    s.token_mask.len = words * 8;
    s.diff_mean = r->diff_mean;
    s.diff_rms = r->diff_rms;
    s.diff_max = r->diff_max;
    s.d_p50 = r->dp50;
    s.d_p90 = r->dp90;
    s.d_p99 = r->dp99;
    s.d_max = r->dmax;
    s.n_flops_dense = s.n_flops_ctr = s.n_flops_all = DISC_F_COUNT;
    s.flops_dense = fd;
    s.flops_ctr = fc;
    s.flops_all = fa;
    s.rel_err = r->dense_traj ? disc_rel_err(xn, r->dense_traj + (size_t)k * r->n, r->n) : NAN;
    s.st_generated = r->gen;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_DISC_STEP;
    rec.disc_step = &s;
    struct trace_key key = {k, -1, -1};
    int rc = emit(r, &rec, &key);
    if (!rc && c->p.png_dir)
        rc = disc_png_token_mask(c->p.png_dir, k, r->tokmask, g->grid, r->e);
    mem_free(tm);
    return rc;
}

/* The kept bits of mask mk in m (row counts and packed rows; buffers allocated once into
 * *row_nnz and *bits), and its image. */
static int keep_mask_bits(struct run *r, int k, int bb, int blk, int h, const uint64_t *mk,
                          Acceltrace__DiscMask *m, uint32_t **row_nnz, uint8_t **bits)
{
    struct disc_capture *c = r->c;
    int N = c->cfg.tokens;
    size_t words = ((size_t)N + 63) / 64;
    if (!*row_nnz) {
        *row_nnz = mem_alloc((size_t)N * sizeof(uint32_t));
        *bits = mem_alloc((size_t)N * words * 8);
        if (!*row_nnz || !*bits)
            return errmsg_set(r->e, ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < N; i++) {
        uint32_t cnt = 0;
        for (size_t w = 0; w < words; w++) {
            uint64_t v = mk[(size_t)i * words + w];
            cnt += (uint32_t)__builtin_popcountll(v);
            for (int q = 0; q < 8; q++)
                (*bits)[((size_t)i * words + w) * 8 + (size_t)q] = (uint8_t)(v >> (8 * q));
        }
        (*row_nnz)[i] = cnt;
    }
    m->kept = true;
    m->n_row_nnz = (size_t)N;
    m->row_nnz = *row_nnz;
    m->bits.data = *bits;
    m->bits.len = (size_t)N * words * 8;
    c->res.masks_kept++;
    if (c->p.png_dir)
        return disc_png_attn_mask(c->p.png_dir, k, bb, blk, h, mk, N, r->e);
    return 0;
}

/* The DiscMask records of step k, one per (batch, block, head), and the pooled sparsity. */
static int emit_mask_records(struct run *r, int k)
{
    struct disc_capture *c = r->c;
    const struct dit_config *g = &c->cfg;
    int N = g->tokens, L = g->depth, H = g->heads, B = c->B;
    struct disc_mask_lb_buf lb;
    uint32_t *row_nnz = NULL;
    uint8_t *bits = NULL;
    int rc = 0;
    for (int bb = 0; bb < B && !rc; bb++)
        for (int blk = 0; blk < L && !rc; blk++)
            for (int h = 0; h < H && !rc; h++) {
                const struct disc_lb_acc *a = &r->acc[((size_t)bb * L + blk) * H + h];
                Acceltrace__DiscMask m = ACCELTRACE__DISC_MASK__INIT;
                m.step = (uint32_t)k;
                m.batch = (uint32_t)bb;
                m.block = (uint32_t)blk;
                m.head = (uint32_t)h;
                m.generated = r->gen;
                m.rows = (uint32_t)r->nk;
                m.nnz = a->nnz;
                m.sparsity = r->nk ? 1.0 - (double)a->nnz / ((double)r->nk * N) : NAN;
                m.theta = r->theta[blk];
                m.n_cols = (uint32_t)N;
                disc_mask_set_lb(&m, a, &lb);
                double cells = (double)r->nk * N;
                r->s.sum_nnz += (double)a->nnz;
                r->s.sum_cells += cells;
                r->s.blk_nnz[blk] += (double)a->nnz;
                r->s.blk_cells[blk] += cells;
                if (r->gen)
                    r->s.gen_nnz += (double)a->nnz, r->s.gen_cells += cells;
                else
                    r->s.reuse_nnz += (double)a->nnz, r->s.reuse_cells += cells;
                const uint64_t *mk = dit_state_mask(r->st, bb, blk, h);
                if (!mk) {
                    rc = errmsg_set(r->e, ERR_IO, "%s", dit_state_errmsg(r->st));
                    break;
                }
                if (disc_keep_has(&c->keep, k, bb, blk, h)) {
                    rc = keep_mask_bits(r, k, bb, blk, h, mk, &m, &row_nnz, &bits);
                    if (rc == ERR_NOMEM)
                        break;
                }
                Acceltrace__Record mr = ACCELTRACE__RECORD__INIT;
                mr.body_case = ACCELTRACE__RECORD__BODY_DISC_MASK;
                mr.disc_mask = &m;
                /* the keys trace_record_key derives (docs/trace-format.md): with CFG the
                 * two batch elements of a (step, block, head) share one key */
                struct trace_key mkey = {k, blk, h};
                if (!rc)
                    rc = emit(r, &mr, &mkey);
                c->res.masks_written++;
            }
    mem_free(row_nnz);
    mem_free(bits);
    return rc;
}

/* The main run's step k: its statistics and its DiscStep and DiscMask records. */
static int main_step(struct run *r, int k, const float *xn)
{
    struct disc_capture *c = r->c;
    int N = c->cfg.tokens;
    c->res.n_kept[k] = (uint32_t)r->nk;
    if (k > 0) {
        r->s.prune_sum += 1.0 - (double)r->nk / N;
        r->s.prune_cnt++;
    }
    uint64_t fd[DISC_F_COUNT] = {0}, fc[DISC_F_COUNT] = {0}, fa[DISC_F_COUNT] = {0};
    int rc = step_stats(r, fd, fc, fa);
    if (!rc)
        rc = emit_step_record(r, k, xn, fd, fc, fa);
    if (rc || !r->st_on)
        return rc;
    return emit_mask_records(r, k);
}

/* Whether a checkpoint of c fits the free space of the folder of ckpt_path (NULL: not
 * known, yes). A checkpoint that does not fit is skipped, not an error: the capture goes on
 * and its result counts the skipped ones for one warning. The old checkpoint stays until
 * the new one is renamed over it, so the whole new size must be free.
 * ACCELTRACE_CHECKPOINT_FREE_BYTES, when set, stands for the measured free space (a full
 * disk in the tests). */
static bool ckpt_fits(struct disc_capture *c, const char *ckpt_path)
{
    if (!ckpt_path)
        return true;
    char dir[4096];
    const char *slash = strrchr(ckpt_path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - ckpt_path + (slash == ckpt_path)),
                 ckpt_path);
    struct statvfs sv;
    if (statvfs(dir, &sv) != 0)
        return true; /* the write itself reports what is wrong */
    uint64_t avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    const char *fake = getenv("ACCELTRACE_CHECKPOINT_FREE_BYTES");
    if (fake && *fake)
        avail = strtoull(fake, NULL, 10);
    uint64_t need = CAPTURE_CKPT_OVERHEAD_BYTES + disc_ckpt_bytes(c);
    if (need <= avail)
        return true;
    if (!c->res.ckpt_skipped++) {
        c->res.ckpt_need_bytes = need;
        c->res.ckpt_free_bytes = avail;
    }
    return false;
}

/* After step k of a run: progress, the main run's records, then a step boundary where
 * the driver may write a checkpoint (docs/trace-format.md#checkpoints). */
static int post_cb(void *vr, int k, const float *xn)
{
    struct run *r = vr;
    struct disc_capture *c = r->c;
    capture_progress_update(r->sink, r->prog_base + (uint64_t)k + 1);
    int rc = r->main ? main_step(r, k, xn) : 0;
    if (rc || !r->sink->checkpoint || !ckpt_fits(c, r->sink->checkpoint_path))
        return rc;
    c->live.k = k + 1;
    return capture_checkpoint(r->sink, r->prog_base + (uint64_t)k + 1, r->e);
}

static void run_release(struct run *r)
{
    dit_state_free(r->st);
    mem_free(r->prev);
    mem_free(r->d);
    mem_free(r->dsort);
    mem_free(r->epsb);
    mem_free(r->kept);
    mem_free(r->tokmask);
    mem_free(r->theta);
    mem_free(r->x0p);
    mem_free(r->acc);
    mem_free(r->nnz_block);
    mem_free(r->s.blk_nnz);
    mem_free(r->s.blk_cells);
}

/* The state of the resumed run as checkpoint_load read it: latent x, sampler history, CTR's
 * previous latent, theta, the pooled sums and the CTR caches and ST masks. */
static int run_restore(struct run *r, float *x, struct errmsg *e)
{
    struct disc_capture *c = r->c;
    const struct disc_resume *rs = &c->rs;
    int L = c->cfg.depth;
    memcpy(x, rs->x, r->n * sizeof(float));
    memcpy(r->x0p, rs->x0p, r->n * sizeof(float));
    memcpy(r->prev, rs->prev, r->n * sizeof(float));
    memcpy(r->theta, rs->theta, (size_t)L * sizeof(float));
    double *bn = r->s.blk_nnz, *bc = r->s.blk_cells;
    r->s = rs->sums;
    r->s.blk_nnz = bn, r->s.blk_cells = bc;
    memcpy(bn, rs->sums.blk_nnz, (size_t)L * sizeof(double));
    memcpy(bc, rs->sums.blk_cells, (size_t)L * sizeof(double));
    (void)e; /* the CTR caches and ST masks came loaded in rs->st (one_run) */
    return 0;
}

int disc_run_state_open(struct disc_capture *c, int ri, struct dit_state **st, struct errmsg *e)
{
    bool ctr, on;
    disc_run_shape(c, c->runs[ri], &ctr, &on);
    struct dit_state_opts so = {.ctr = ctr,
                                .st = on,
                                .spill_masks = c->plan.spill_masks,
                                .spill_ctr = c->plan.spill_ctr,
                                .spill_dir = c->p.spill_dir};
    return dit_state_open(st, c->model, c->B, &so, e);
}

/* Run ri of the capture (c->runs); x receives x_K and the run's trajectory (K, n) its
 * x_{k+1}. A resumed run continues at the checkpoint's step. */
static int one_run(struct disc_capture *c, int ri, struct capture_sink *sink, float *x,
                   uint64_t prog_base, struct errmsg *e)
{
    const struct dit_config *g = &c->cfg;
    int N = g->tokens, L = g->depth, H = g->heads;
    bool ctr, st, main_run = c->runs[ri] == DISC_RUN_MAIN;
    disc_run_shape(c, c->runs[ri], &ctr, &st);
    float *traj = disc_run_traj(c, c->runs[ri]);
    struct run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.ctr = ctr;
    r.st_on = st;
    r.main = main_run;
    r.n = (size_t)g->c_in * g->lat * g->lat;
    r.dense_traj = main_run ? c->dense_traj : NULL;
    r.sink = sink;
    r.e = e;
    r.prog_base = prog_base;
    int rc = 0;
    if (c->rs.unit && ri == c->rs.run && c->rs.st) { /* loaded by checkpoint_load */
        r.st = c->rs.st;
        c->rs.st = NULL;
    } else {
        rc = disc_run_state_open(c, ri, &r.st, e);
    }
    if (rc) {
        run_release(&r);
        return rc;
    }
    size_t words = ((size_t)N + 63) / 64;
    r.prev = mem_alloc(r.n * sizeof(float));
    r.d = mem_alloc((size_t)N * sizeof(float));
    r.dsort = mem_alloc((size_t)N * sizeof(float));
    r.epsb = mem_alloc((size_t)c->B * r.n * sizeof(float));
    r.kept = mem_alloc((size_t)N * sizeof(int32_t));
    r.tokmask = mem_alloc(words * sizeof(uint64_t));
    r.theta = mem_calloc((size_t)L, sizeof(float));
    r.x0p = mem_calloc(r.n, sizeof(float));
    r.acc = main_run && st ? mem_alloc((size_t)c->B * L * H * sizeof *r.acc) : NULL;
    r.nnz_block = mem_calloc((size_t)L, sizeof(uint64_t));
    r.s.blk_nnz = mem_calloc((size_t)L, sizeof(double));
    r.s.blk_cells = mem_calloc((size_t)L, sizeof(double));
    if (rc || !r.prev || !r.d || !r.dsort || !r.epsb || !r.kept || !r.tokmask || !r.theta ||
        !r.x0p || (main_run && st && !r.acc) || !r.nnz_block || !r.s.blk_nnz || !r.s.blk_cells) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory for the sampler run");
        goto done;
    }
    /* Effective theta per block (docs/disc.md#st-masks): alpha/N in FP32, or the absolute theta. */
    for (int b = 0; b < L; b++) {
        if (c->p.st == DISC_ST_ALPHA) {
            float a = c->p.st_alpha_block ? c->p.st_alpha_block[b] : c->p.st_alpha;
            r.theta[b] = a / (float)N;
            c->res.alpha[b] = a;
        } else if (c->p.st == DISC_ST_THETA) {
            r.theta[b] = c->p.st_theta;
            c->res.alpha[b] = NAN;
        }
    }
    memcpy(x, c->x_init, r.n * sizeof(float));
    int k0 = 0;
    if (c->rs.unit && ri == c->rs.run) {
        if ((rc = run_restore(&r, x, e)) != 0)
            goto done;
        k0 = c->rs.k;
    }
    c->live = (struct disc_live){ri, k0, ctr, st, x, r.x0p, r.prev, r.theta, &r.s, r.st};
    rc = dit_sample_from(c->p.sampler, &c->sched, k0, x, r.x0p, r.n, eps_cb, post_cb, &r, traj);
    c->live.st = NULL;
    if (rc)
        goto done;
    if (main_run) {
        struct disc_result *res = &c->res;
        const struct disc_sums *s = &r.s;
        res->mean_prune_ratio = s->prune_cnt ? s->prune_sum / (double)s->prune_cnt : NAN;
        res->sparsity = s->sum_cells > 0 ? 1.0 - s->sum_nnz / s->sum_cells : NAN;
        res->sparsity_gen = s->gen_cells > 0 ? 1.0 - s->gen_nnz / s->gen_cells : NAN;
        res->sparsity_reuse = s->reuse_cells > 0 ? 1.0 - s->reuse_nnz / s->reuse_cells : NAN;
        for (int b = 0; b < L; b++) {
            res->sparsity_block[b] =
                s->blk_cells[b] > 0 ? 1.0 - s->blk_nnz[b] / s->blk_cells[b] : NAN;
            res->theta[b] = st ? r.theta[b] : NAN;
        }
    }
done:
    if (r.st && dit_state_spill_bytes(r.st) > c->res.spill_bytes)
        c->res.spill_bytes = dit_state_spill_bytes(r.st);
    run_release(&r);
    return rc;
}

static int write_summary(struct disc_capture *c, struct capture_sink *sink, struct errmsg *e)
{
    struct disc_result *res = &c->res;
    const struct dit_config *g = &c->cfg;
    Acceltrace__DiscSummary s = ACCELTRACE__DISC_SUMMARY__INIT;
    Acceltrace__DiscQuality qm = ACCELTRACE__DISC_QUALITY__INIT,
                            qc = ACCELTRACE__DISC_QUALITY__INIT;
    Acceltrace__DiscQuality *qs[2];
    size_t nq = 0;
    if (res->q_ctr.valid) {
        qc.run = "ctr";
        qc.cosine = res->q_ctr.cosine;
        qc.psnr = res->q_ctr.psnr;
        qc.n_rel_err = (size_t)c->K;
        qc.rel_err = res->q_ctr.rel_err;
        qs[nq++] = &qc;
    }
    if (res->q_main.valid) {
        qm.run = "main";
        qm.cosine = res->q_main.cosine;
        qm.psnr = res->q_main.psnr;
        qm.n_rel_err = (size_t)c->K;
        qm.rel_err = res->q_main.rel_err;
        qs[nq++] = &qm;
    }
    s.n_quality = nq;
    s.quality = qs;
    s.mean_prune_ratio = res->mean_prune_ratio;
    s.sparsity = res->sparsity;
    s.n_sparsity_per_block = (size_t)g->depth;
    s.sparsity_per_block = res->sparsity_block;
    s.sparsity_generation = res->sparsity_gen;
    s.sparsity_reuse = res->sparsity_reuse;
    s.n_alpha_per_block = c->p.st == DISC_ST_OFF ? 0 : (size_t)g->depth;
    s.alpha_per_block = res->alpha;
    s.n_flops_dense = s.n_flops_ctr = s.n_flops_all = DISC_F_COUNT;
    s.flops_dense = res->flops_dense;
    s.flops_ctr = res->flops_ctr;
    s.flops_all = res->flops_all;
    double fd = (double)disc_flops_total(res->flops_dense);
    double fc = (double)disc_flops_total(res->flops_ctr);
    double fa = (double)disc_flops_total(res->flops_all);
    double sd = 0, sc = 0, sa = 0;
    for (int i = DISC_F_SA_QKV; i <= DISC_F_SA_PROJ; i++) {
        sd += (double)res->flops_dense[i];
        sc += (double)res->flops_ctr[i];
        sa += (double)res->flops_all[i];
    }
    /* Fig. 17 quantities (docs/disc.md#quality-and-flop-accounting). */
    s.reduction_ctr = 1.0 - fc / fd;
    s.reduction_st = (fc - fa) / fd;
    s.sa_reduction_ctr = 1.0 - sc / sd;
    s.sa_reduction_st = (sc - sa) / sd;
    s.sa_share = sd / fd;
    s.n_latent = res->n_latent;
    s.latent = res->latent;
    s.n_latent_dense = res->latent_dense ? res->n_latent : 0;
    s.latent_dense = res->latent_dense;
    s.masks_written = res->masks_written;
    s.masks_kept = res->masks_kept;
    Acceltrace__Summary sm = ACCELTRACE__SUMMARY__INIT;
    sm.workload = (char *)capture_disc_ops.name;
    /* wall_seconds stays 0: no DiSC record holds wall-clock time (docs/disc.md#trace-records). */
    sm.disc = &s;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_SUMMARY;
    rec.summary = &sm;
    struct run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.sink = sink;
    r.e = e;
    return emit(&r, &rec, NULL);
}

static int score(struct disc_quality *q, const float *traj, const float *dense_traj, size_t n,
                 int K)
{
    q->rel_err = mem_alloc((size_t)K * sizeof(double));
    if (!q->rel_err)
        return ERR_NOMEM;
    for (int k = 0; k < K; k++)
        q->rel_err[k] = disc_rel_err(traj + (size_t)k * n, dense_traj + (size_t)k * n, n);
    const float *xa = traj + (size_t)(K - 1) * n, *xb = dense_traj + (size_t)(K - 1) * n;
    q->cosine = disc_cosine(xa, xb, n);
    q->psnr = disc_psnr(xa, xb, n);
    q->valid = true;
    return 0;
}

void disc_runs_plan(struct disc_capture *c)
{
    const struct disc_params *p = &c->p;
    c->n_runs = 0;
    if (p->compare_dense)
        c->runs[c->n_runs++] = DISC_RUN_DENSE;
    if (p->compare_dense && p->ctr != DISC_CTR_OFF && p->st != DISC_ST_OFF)
        c->runs[c->n_runs++] = DISC_RUN_CTR; /* scores CTR alone */
    c->runs[c->n_runs++] = DISC_RUN_MAIN;
}

void disc_run_shape(const struct disc_capture *c, enum disc_run_kind kind, bool *ctr, bool *st)
{
    *ctr = kind != DISC_RUN_DENSE && c->p.ctr != DISC_CTR_OFF;
    *st = kind == DISC_RUN_MAIN && c->p.st != DISC_ST_OFF;
}

float *disc_run_traj(struct disc_capture *c, enum disc_run_kind kind)
{
    return kind == DISC_RUN_DENSE ? c->dense_traj
           : kind == DISC_RUN_CTR ? c->ctr_traj
                                  : c->res.traj;
}

int disc_run_alloc(struct disc_capture *c, struct errmsg *e)
{
    struct disc_result *res = &c->res;
    int K = c->K, L = c->cfg.depth;
    size_t n = (size_t)c->cfg.c_in * c->cfg.lat * c->cfg.lat;
    disc_result_release(res);
    memset(res, 0, sizeof *res);
    mem_free(c->dense_traj);
    mem_free(c->ctr_traj);
    c->dense_traj = c->ctr_traj = NULL;
    disc_runs_plan(c);
    res->K = K, res->L = L, res->B = c->B, res->n_latent = n;
    res->latent = mem_alloc(n * sizeof(float));
    res->traj = mem_alloc((size_t)K * n * sizeof(float));
    res->sparsity_block = mem_alloc((size_t)L * sizeof(double));
    res->alpha = mem_calloc((size_t)L, sizeof(float));
    res->theta = mem_calloc((size_t)L, sizeof(float));
    res->st_short = mem_calloc((size_t)L, sizeof(bool));
    res->n_kept = mem_calloc((size_t)K, sizeof(uint32_t));
    bool ok = res->latent && res->traj && res->sparsity_block && res->alpha && res->theta &&
              res->st_short && res->n_kept;
    for (int ri = 0; ri < c->n_runs && ok; ri++) {
        if (c->runs[ri] == DISC_RUN_DENSE) {
            c->dense_traj = mem_alloc((size_t)K * n * sizeof(float));
            res->latent_dense = mem_alloc(n * sizeof(float));
            ok = c->dense_traj && res->latent_dense;
        } else if (c->runs[ri] == DISC_RUN_CTR) {
            ok = (c->ctr_traj = mem_alloc((size_t)K * n * sizeof(float))) != NULL;
        }
    }
    return ok ? 0 : errmsg_set(e, ERR_NOMEM, "out of memory");
}

int disc_capture_run(struct disc_capture *c, struct capture_sink *sink, struct errmsg *e)
{
    const struct disc_params *p = &c->p;
    const struct dit_config *g = &c->cfg;
    struct disc_result *res = &c->res;
    int rc = 0, K = c->K, L = g->depth;
    size_t n = (size_t)g->c_in * g->lat * g->lat;
    float *x = NULL;
    if (!c->loaded || !sink)
        return errmsg_set(e, ERR_USAGE, "capture not loaded");
    double t0 = progress_now_s();
    /* a resumed run's result and trajectories so far came with the checkpoint */
    if (!c->rs.unit && (rc = disc_run_alloc(c, e)) != 0)
        goto done;
    if (!(x = mem_alloc(n * sizeof(float)))) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    if (!sink->progress.label)
        sink->progress.label = "disc capture";
    capture_progress_begin(sink, (uint64_t)c->n_runs * K);
    for (int ri = 0; ri < c->n_runs && !rc; ri++) {
        enum disc_run_kind kind = c->runs[ri];
        float *xr = kind == DISC_RUN_DENSE  ? res->latent_dense
                    : kind == DISC_RUN_MAIN ? res->latent
                                            : x;
        if (c->rs.unit && ri < c->rs.run) /* done before the checkpoint: x_K is its last row */
            memcpy(xr, disc_run_traj(c, kind) + (size_t)(K - 1) * n, n * sizeof(float));
        else
            rc = one_run(c, ri, sink, xr, (uint64_t)ri * (uint64_t)K, e);
        if (!rc && kind == DISC_RUN_CTR && score(&res->q_ctr, c->ctr_traj, c->dense_traj, n, K))
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    if (rc)
        goto done;
    capture_progress_end(sink);
    if (p->compare_dense && score(&res->q_main, res->traj, c->dense_traj, n, K)) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int b = 0; b < L; b++)
        res->n_st_short += res->st_short[b];
    if (p->png_dir) {
        rc = disc_png_latent(p->png_dir, "latent", res->latent, g->c_in, g->lat, e);
        if (!rc && res->latent_dense)
            rc = disc_png_latent(p->png_dir, "latent_dense", res->latent_dense, g->c_in, g->lat, e);
        if (rc)
            goto done;
    }
    res->wall_s = progress_now_s() - t0;
    rc = write_summary(c, sink, e);
done:
    mem_free(x);
    mem_free(c->dense_traj);
    mem_free(c->ctr_traj);
    c->dense_traj = c->ctr_traj = NULL;
    disc_resume_release(&c->rs);
    return rc;
}
