/* export_scalesim: a DiT sampler step as a SCALE-Sim v2 GEMM topology and run config. */
#include "analysis/export_scalesim.h"

#include <stdio.h>
#include <string.h>

#include "common/buf.h"

struct topo {
    struct buf b;
    struct export_scalesim_stats *st;
};

/* One "name,M,N,K," row: (M x K) times (K x N), SCALE-Sim's GEMM mode. */
static void gemm(struct topo *t, const char *name, uint64_t m, uint64_t n, uint64_t k)
{
    if (!m || !n || !k) {
        t->st->skipped++;
        return;
    }
    buf_printf(&t->b, "%s,%llu,%llu,%llu,\n", name, (unsigned long long)m, (unsigned long long)n,
               (unsigned long long)k);
    t->st->layers++;
    t->st->macs += m * n * k;
}

/* The QK^T and PV products of one attention per (batch element, head): nq queries over nk
 * keys of head width dh (docs/interop.md#scale-sim). */
static void attention(struct topo *t, const struct disc_dims *dm, const char *pre, uint32_t blk,
                      uint64_t nq, uint64_t nk)
{
    char name[96];
    for (uint32_t x = 0; x < dm->batch; x++) {
        for (uint32_t h = 0; h < dm->h; h++) {
            snprintf(name, sizeof name, "b%u.%s_qk.x%u.h%u", blk, pre, x, h);
            gemm(t, name, nq, nk, dm->dh);
            snprintf(name, sizeof name, "b%u.%s_pv.x%u.h%u", blk, pre, x, h);
            gemm(t, name, nq, dm->dh, nk);
        }
    }
}

/* "b3.sa_q": the row name of a block's product (static buffer of the caller). */
static const char *blk_name(char *name, size_t n, uint32_t blk, const char *op)
{
    snprintf(name, n, "b%u.%s", blk, op);
    return name;
}

/* The products of one step, in the order of disc_step_ops (replay/disc_model.c). */
static void step_gemms(struct topo *t, const struct disc_dims *dm, uint64_t nk)
{
    const uint64_t d = dm->d, n = dm->n, bb = dm->batch, tt = dm->text;
    const uint64_t p2 = (uint64_t)dm->patch * dm->patch;
    char name[96];
    gemm(t, "t_embed1", 1, d, 256);
    gemm(t, "t_embed2", 1, d, d);
    if (!dm->class_cond) {
        gemm(t, "t_embed3", 1, 6 * d, d);
        gemm(t, "caption1", bb * tt, d, dm->dc);
        gemm(t, "caption2", bb * tt, d, d);
    }
    gemm(t, "patch", bb * n, d, (uint64_t)dm->cin * p2);
    for (uint32_t blk = 0; blk < dm->depth; blk++) {
        if (dm->class_cond)
            gemm(t, blk_name(name, sizeof name, blk, "ada"), bb, 6 * d, d);
        gemm(t, blk_name(name, sizeof name, blk, "sa_q"), bb * nk, d, d);
        gemm(t, blk_name(name, sizeof name, blk, "sa_kv"), bb * n, 2 * d, d);
        attention(t, dm, "sa", blk, nk, n);
        gemm(t, blk_name(name, sizeof name, blk, "sa_o"), bb * nk, d, d);
        if (!dm->class_cond) {
            gemm(t, blk_name(name, sizeof name, blk, "ca_q"), bb * nk, d, d);
            gemm(t, blk_name(name, sizeof name, blk, "ca_kv"), bb * tt, 2 * d, d);
            attention(t, dm, "ca", blk, nk, tt);
            gemm(t, blk_name(name, sizeof name, blk, "ca_o"), bb * nk, d, d);
        }
        gemm(t, blk_name(name, sizeof name, blk, "ff_up"), bb * nk, 4 * d, d);
        gemm(t, blk_name(name, sizeof name, blk, "ff_down"), bb * nk, d, 4 * d);
    }
    if (dm->class_cond)
        gemm(t, "final_ada", bb, 2 * d, d);
    gemm(t, "final_out", bb * n, p2 * dm->cout, d);
}

int export_scalesim_write(const struct peer_dit *d, const struct export_scalesim_opts *o,
                          struct export_scalesim_stats *st, struct errmsg *e)
{
    memset(st, 0, sizeof *st);
    if (o->step >= (int64_t)d->steps)
        return errmsg_set(e, ERR_USAGE, "step %lld is beyond the trace's %u steps",
                          (long long)o->step, d->steps);
    if (o->step >= 0 && !d->step_seen[o->step])
        return errmsg_set(e, ERR_USAGE, "the trace has no record of step %lld", (long long)o->step);
    st->tokens = o->step >= 0 ? d->n_kept[o->step] : d->dm.n;
    struct topo t = {.st = st};
    struct buf cfg;
    buf_init(&t.b);
    buf_init(&cfg);
    buf_printf(&t.b, "Layer,M,N,K,\n");
    step_gemms(&t, &d->dm, st->tokens);
    /* SCALE-Sim's configparser layout (configs/scale.cfg of its repository); the operand
     * offsets only have to keep the three address ranges apart. */
    buf_printf(&cfg,
               "# acceltrace export scalesim: model %s, %s, M of token-wise layers = B x %llu\n"
               "# array, dataflow and SRAM sizes are inputs of the export (not the DiSC array)\n"
               "[general]\nrun_name = %s\n\n[architecture_presets]\n"
               "ArrayHeight:    %u\nArrayWidth:     %u\n"
               "IfmapSramSzkB:   %u\nFilterSramSzkB:  %u\nOfmapSramSzkB:   %u\n"
               "IfmapOffset:    0\nFilterOffset:   100000000\nOfmapOffset:    200000000\n"
               "Bandwidth : 10\nDataflow : %s\nMemoryBanks:   1\n\n"
               "[run_presets]\nInterfaceBandwidth: CALC\n",
               d->model, o->step >= 0 ? "kept tokens of one step (CTR)" : "dense network",
               (unsigned long long)st->tokens, o->run_name, o->rows, o->cols, o->sram_kb,
               o->sram_kb, o->sram_kb, o->dataflow);
    int rc = peer_write_file(o->csv_path, &t.b, e);
    if (!rc)
        rc = peer_write_file(o->cfg_path, &cfg, e);
    buf_release(&t.b);
    buf_release(&cfg);
    return rc;
}
