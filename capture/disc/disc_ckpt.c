/*
 * disc_ckpt: the checkpoint hooks of `capture disc` (docs/trace-format.md#checkpoints). A
 * unit is one sampler step of one of the capture's runs (dense, CTR-only, main: those on),
 * numbered across them; a checkpoint at unit u holds what the steps after it need, so a
 * resumed run gives the same records bit for bit.
 *
 * Layout (host byte order, after the driver's fixed part):
 *   u32 version 1
 *   u32 K, L, B, N, d, heads, n_latent, runs, flags (1 CTR, 2 ST, 4 compare), mask words
 *   u64 unit; u32 run, k (unit = run K + k, 1 <= k <= K: k steps of that run done)
 *   result so far: u64 flops_dense[F], flops_ctr[F], flops_all[F], masks_written,
 *       masks_kept, spill_bytes; u32 n_kept[K]; f32 alpha[L]; u8 st_short[L]
 *   trajectories: f32 (rows, n_latent) of each run in order, rows K for the runs done,
 *       k for the run in progress, 0 after it
 *   the run in progress: f32 x_k[n_latent], x0hat_{k-1}[n_latent], CTR's previous
 *       latent[n_latent], theta[L]; f64 sum_nnz, sum_cells, gen_nnz, gen_cells, reuse_nnz,
 *       reuse_cells, prune_sum; i64 prune_cnt; f64 blk_nnz[L], blk_cells[L]
 *   its CTR block outputs and ST masks (dit.h dit_state_save; the spill file's part too)
 * The driver streams the part into the file and hands load a stream of it, so neither side
 * holds it whole: the CTR caches and ST masks go from the spill file to the checkpoint a mask
 * group or block output at a time, and on load straight into the resumed run's dit_state
 * (a fresh spill file when the memory plan spills). Before each checkpoint the run checks the
 * folder's free space against disc_ckpt_bytes (disc_capture_run.c).
 */
#include <stdio.h>
#include <string.h>

#include "capture/disc/disc_capture_impl.h"
#include "capture/disc/dit.h"
#include "common/mem.h"

#define DISC_CKPT_VERSION 1u
#define DISC_CKPT_SHAPE 11 /* version + 10 shape words */

static size_t n_latent(const struct disc_capture *c)
{
    return (size_t)c->cfg.c_in * c->cfg.lat * c->cfg.lat;
}

/* The version word and the shape this capture's checkpoints have. */
static void shape_words(const struct disc_capture *c, uint32_t w[DISC_CKPT_SHAPE])
{
    const struct dit_config *g = &c->cfg;
    uint32_t flags = (c->p.ctr != DISC_CTR_OFF ? 1u : 0u) | (c->p.st != DISC_ST_OFF ? 2u : 0u) |
                     (c->p.compare_dense ? 4u : 0u);
    uint32_t v[DISC_CKPT_SHAPE] = {DISC_CKPT_VERSION,          (uint32_t)c->K,
                                   (uint32_t)g->depth,         (uint32_t)c->B,
                                   (uint32_t)g->tokens,        (uint32_t)g->hidden,
                                   (uint32_t)g->heads,         (uint32_t)n_latent(c),
                                   (uint32_t)c->n_runs,        flags,
                                   (uint32_t)dit_mask_words(g)};
    memcpy(w, v, sizeof v);
}

/* Trajectory rows of run i held at (run, k). */
static size_t traj_rows(int i, int run, int k, int K)
{
    return i < run ? (size_t)K : i == run ? (size_t)k : 0;
}

/* The dit_state part of run ri. */
static uint64_t state_bytes(const struct disc_capture *c, int ri)
{
    bool ctr, st;
    disc_run_shape(c, c->runs[ri], &ctr, &st);
    return dit_state_save_bytes(&c->cfg, c->B, ctr, st);
}

uint64_t disc_ckpt_bytes(const struct disc_capture *c)
{
    uint64_t n = n_latent(c), K = (uint64_t)c->K, L = (uint64_t)c->cfg.depth, most = 0;
    for (int ri = 0; ri < c->n_runs; ri++)
        most = state_bytes(c, ri) > most ? state_bytes(c, ri) : most;
    uint64_t fixed = 4 * DISC_CKPT_SHAPE + 16 + 8 * (3 * DISC_F_COUNT + 3) + 4 * K + 5 * L;
    return fixed + 4 * n * (K * (uint64_t)c->n_runs + 3) + 4 * L + 8 * (8 + 2 * L) + most;
}

/* Writes (save) or reads n items of size bytes at p; false when f took or gave fewer. */
static bool io(FILE *f, void *p, size_t size, size_t n, bool save)
{
    return n == 0 || (save ? fwrite(p, size, n, f) : fread(p, size, n, f)) == n;
}

static bool put(FILE *f, const void *p, size_t size, size_t n)
{
    return n == 0 || fwrite(p, size, n, f) == n;
}

static bool get(FILE *f, void *p, size_t size, size_t n)
{
    return io(f, p, size, n, false);
}

/* The result so far (flops, mask counts, n_kept, alpha, st_short), written or read. */
static bool result_io(struct disc_result *r, FILE *f, bool save)
{
    uint64_t counts[3] = {r->masks_written, r->masks_kept, r->spill_bytes};
    bool ok = io(f, r->flops_dense, 8, DISC_F_COUNT, save) &&
              io(f, r->flops_ctr, 8, DISC_F_COUNT, save) &&
              io(f, r->flops_all, 8, DISC_F_COUNT, save) && io(f, counts, 8, 3, save) &&
              io(f, r->n_kept, 4, (size_t)r->K, save) && io(f, r->alpha, 4, (size_t)r->L, save);
    for (int b = 0; b < r->L && ok; b++) {
        uint8_t v = r->st_short[b];
        ok = io(f, &v, 1, 1, save);
        r->st_short[b] = v != 0;
    }
    r->masks_written = counts[0], r->masks_kept = counts[1], r->spill_bytes = counts[2];
    return ok;
}

/* The pooled sums of the run in progress, written or read (blk arrays [L] allocated). */
static bool sums_io(struct disc_sums *s, int L, FILE *f, bool save)
{
    double d[7] = {s->sum_nnz,   s->sum_cells,   s->gen_nnz,  s->gen_cells,
                   s->reuse_nnz, s->reuse_cells, s->prune_sum};
    bool ok = io(f, d, 8, 7, save) && io(f, &s->prune_cnt, 8, 1, save) &&
              io(f, s->blk_nnz, 8, (size_t)L, save) && io(f, s->blk_cells, 8, (size_t)L, save);
    s->sum_nnz = d[0], s->sum_cells = d[1], s->gen_nnz = d[2], s->gen_cells = d[3];
    s->reuse_nnz = d[4], s->reuse_cells = d[5], s->prune_sum = d[6];
    return ok;
}

int disc_ckpt_save(void *inst, uint64_t unit, FILE *f, struct errmsg *e)
{
    struct disc_capture *c = inst;
    const struct disc_live *lv = &c->live;
    size_t n = n_latent(c);
    int K = c->K, L = c->cfg.depth;
    if (!lv->st || unit != (uint64_t)lv->run * (uint64_t)K + (uint64_t)lv->k || lv->k < 1)
        return errmsg_set(e, ERR_INTERNAL, "disc checkpoint at unit %llu outside a sampler step",
                          (unsigned long long)unit);
    uint32_t w[DISC_CKPT_SHAPE], rk[2] = {(uint32_t)lv->run, (uint32_t)lv->k};
    shape_words(c, w);
    bool ok = put(f, w, 4, DISC_CKPT_SHAPE) && put(f, &unit, 8, 1) && put(f, rk, 4, 2) &&
              result_io(&c->res, f, true);
    for (int i = 0; i < c->n_runs && ok; i++)
        ok = put(f, disc_run_traj(c, c->runs[i]), 4 * n, traj_rows(i, lv->run, lv->k, K));
    struct disc_sums s = *lv->sums;
    ok = ok && put(f, lv->x, 4, n) && put(f, lv->x0p, 4, n) && put(f, lv->prev, 4, n) &&
         put(f, lv->theta, 4, (size_t)L) && sums_io(&s, L, f, true);
    if (!ok)
        return errmsg_set(e, ERR_IO, "cannot write the disc checkpoint");
    return dit_state_save(lv->st, f, e);
}

/* ERR_DATA naming the checkpoint and the offset of what did not fit. */
static int bad(struct errmsg *e, const char *path, long off, const char *what)
{
    return errmsg_set(e, ERR_DATA, "checkpoint '%s': %s at offset %ld", path, what, off);
}

int disc_ckpt_load(void *inst, uint64_t unit, FILE *f, const char *path, struct errmsg *e)
{
    struct disc_capture *c = inst;
    struct disc_resume *rs = &c->rs;
    int rc = disc_run_alloc(c, e), K = c->K, L = c->cfg.depth;
    if (rc)
        return rc;
    disc_resume_release(rs);
    size_t n = n_latent(c);
    uint32_t w[DISC_CKPT_SHAPE], want[DISC_CKPT_SHAPE], rk[2];
    uint64_t u = 0;
    shape_words(c, want);
    long off = ftell(f);
    if (!get(f, w, 4, DISC_CKPT_SHAPE) || memcmp(w, want, sizeof w) != 0)
        return bad(e, path, off, "the disc state is of another version, shape or run set");
    off = ftell(f);
    if (!get(f, &u, 8, 1) || !get(f, rk, 4, 2) || u != unit || rk[0] >= (uint32_t)c->n_runs ||
        rk[1] < 1 || rk[1] > (uint32_t)K || u != (uint64_t)rk[0] * (uint64_t)K + rk[1])
        return bad(e, path, off, "the unit, run or step does not fit this run");
    rs->run = (int)rk[0], rs->k = (int)rk[1];
    rs->x = mem_alloc(n * sizeof(float));
    rs->x0p = mem_alloc(n * sizeof(float));
    rs->prev = mem_alloc(n * sizeof(float));
    rs->theta = mem_alloc((size_t)L * sizeof(float));
    rs->sums.blk_nnz = mem_alloc((size_t)L * sizeof(double));
    rs->sums.blk_cells = mem_alloc((size_t)L * sizeof(double));
    if (!rs->x || !rs->x0p || !rs->prev || !rs->theta || !rs->sums.blk_nnz || !rs->sums.blk_cells) {
        disc_resume_release(rs);
        return errmsg_set(e, ERR_NOMEM, "out of memory reading '%s'", path);
    }
    bool ok = result_io(&c->res, f, false);
    for (int i = 0; i < c->n_runs && ok; i++)
        ok = get(f, disc_run_traj(c, c->runs[i]), 4 * n, traj_rows(i, rs->run, rs->k, K));
    ok = ok && get(f, rs->x, 4, n) && get(f, rs->x0p, 4, n) && get(f, rs->prev, 4, n) &&
         get(f, rs->theta, 4, (size_t)L) && sums_io(&rs->sums, L, f, false);
    /* the CTR caches and ST masks stream into the run's own state (spill file included) */
    if (ok && (rc = disc_run_state_open(c, rs->run, &rs->st, e)) != 0) {
        disc_resume_release(rs);
        return rc;
    }
    if (ok && (rc = dit_state_load(rs->st, f, e)) != 0 && rc != ERR_DATA) {
        disc_resume_release(rs);
        return rc;
    }
    ok = ok && !rc;
    off = ftell(f);
    if (!ok || fgetc(f) != EOF) {
        disc_resume_release(rs);
        return bad(e, path, off, "the disc state is truncated or too long");
    }
    rs->unit = unit;
    return 0;
}

void disc_resume_release(struct disc_resume *rs)
{
    mem_free(rs->x);
    mem_free(rs->x0p);
    mem_free(rs->prev);
    mem_free(rs->theta);
    mem_free(rs->sums.blk_nnz);
    mem_free(rs->sums.blk_cells);
    dit_state_free(rs->st);
    memset(rs, 0, sizeof *rs);
}
