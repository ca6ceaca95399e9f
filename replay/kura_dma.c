/*
 * kura_dma: SA-Kura DMA/system-level model (docs/kura.md#dma-and-system-level). See kura_dma.h.
 */
#include "replay/kura_dma.h"

#include "replay/kura_analytic.h"

/* Cycles of one transaction of `words` bank words (docs/kura.md#dma-and-system-level). */
static int64_t txn_cycles(const struct kura_energy *e, int64_t words)
{
    int64_t bits = words * e->word_bits;
    int64_t beats = (bits + e->bus_bits - 1) / e->bus_bits;
    return (int64_t)e->t_txn + beats;
}

void kura_dma_tile_split(const struct kura_energy *e, int n_h, int n_w, int64_t *in_cycles,
                         int64_t *out_cycles)
{
    /* docs/kura.md#dma-and-system-level: N_w + 4 halo columns in, N_w result columns out */
    *in_cycles = (int64_t)(n_w + 4) * txn_cycles(e, n_h + 4);
    *out_cycles = (int64_t)n_w * txn_cycles(e, n_h);
}

void kura_sys_eval(const struct kura_energy *e, int h, int w, int n_h, int n_w,
                   struct kura_sys *out)
{
    struct kura_analytic an;
    kura_analytic_eval(h, w, n_h, n_w, e->f_hz, &an);
    out->n_h = n_h;
    out->n_w = n_w;
    out->cycles_step = an.cycles_step;
    /* docs/kura.md#dma-and-system-level: serialized with compute */
    int64_t in, o;
    kura_dma_tile_split(e, n_h, n_w, &in, &o);
    out->dma_tile = in + o;
    out->dma_step = an.n_tiles * out->dma_tile;
    out->marsh_cycles = e->t_marsh * (double)h * w;
    out->cycles_sys =
        (double)an.cycles_step + (double)out->dma_step + out->marsh_cycles + e->t_step;
    out->t_us = 1e6 * out->cycles_sys / e->f_hz;
    out->p_mw = kura_bilinear(&e->power_table1, n_h, n_w); /* eq. 10, table1 */
    /* E_px,sys = P·cycles_sys/(f·H·W): mW·s = 1e6 nJ */
    out->e_px_nj = 1e6 * out->p_mw * out->cycles_sys / (e->f_hz * (double)h * w);
    out->area_um2 = kura_bilinear(&e->area_table1, n_h, n_w);
}

int kura_dma_calibrate(struct kura_energy *e, struct errmsg *em)
{
    struct kura_energy t = *e;
    t.t_marsh = 0;
    struct kura_sys s;
    kura_sys_eval(&t, 96, 96, 20, 5, &s);
    double m = ((double)KURA_DMA_CAL_CYCLES - s.cycles_sys) / (96.0 * 96.0);
    if (m < 0)
        return errmsg_set(em, ERR_CONFIG,
                          "t_txn = %g leaves no room for marshalling (t_marsh = %g < 0)", e->t_txn,
                          m);
    e->t_marsh = m;
    return 0;
}
