/*
 * kura_dma: the DMA and system-level model of the SA-Kura SoC (docs/kura.md#dma-and-system-level).
 *
 * Per tile, serialized with compute: N_w + 4 input transactions of one halo-extended
 * column (N_h + 4 words) and N_w output transactions of one column (N_h words). A
 * transaction costs t_txn + ceil(words·word_bits/bus_bits) cycles on the 128-bit
 * interconnect. Per step: cycles_sys = cycles_step + Σ_tiles DMA + t_marsh·H·W + t_step,
 * and the whole SoC draws the table1 power throughout. Pure arithmetic; no I/O.
 */
#ifndef ACCELTRACE_KURA_DMA_H
#define ACCELTRACE_KURA_DMA_H

#include <stdint.h>

#include "common/err.h"
#include "replay/kura_power.h"

struct kura_sys {
    int n_h, n_w;
    int64_t cycles_step; /* compute cycles (docs/kura.md#analytic-timing) */
    int64_t dma_tile;    /* DMA cycles per tile */
    int64_t dma_step;    /* DMA cycles per step (n tiles) */
    double marsh_cycles; /* t_marsh·H·W */
    double cycles_sys;   /* total cycles per step */
    double t_us;         /* cycles_sys/f in µs */
    double p_mw;         /* table1 power (eq. 10) */
    double e_px_nj;      /* P·cycles_sys/(f·H·W) in nJ/px */
    double area_um2;     /* table1 area (eq. 13) */
};

/* DMA cycles of one tile split into its N_w + 4 input and N_w output transactions
 * (their sum is kura_sys.dma_tile). */
void kura_dma_tile_split(const struct kura_energy *e, int n_h, int n_w, int64_t *in_cycles,
                         int64_t *out_cycles);

/* Evaluates the system model for one shape on an H x W map with the table e. */
void kura_sys_eval(const struct kura_energy *e, int h, int w, int n_h, int n_w,
                   struct kura_sys *out);

/*
 * Re-solves e->t_marsh for the current t_txn so that H20W5 at 96x96 takes 64,130 cycles
 * (641.3 µs at 100 MHz, paper section 4.3). A negative result is ERR_CONFIG. 0 or negative.
 */
int kura_dma_calibrate(struct kura_energy *e, struct errmsg *em);

/* Paper target of the calibration: 64,130 cycles per 96x96 step at H20W5. */
#define KURA_DMA_CAL_CYCLES 64130

#endif
