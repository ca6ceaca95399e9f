/*
 * kura_analytic: analytic SA-Kura timing (docs/kura.md#analytic-timing, paper eq. 9). See
 * kura_analytic.h.
 */
#include "replay/kura_analytic.h"

#include "replay/kura_power.h"

void kura_analytic_eval(int h, int w, int n_h, int n_w, double f_hz, struct kura_analytic *out)
{
    out->n_h = n_h;
    out->n_w = n_w;
    out->tiles_y = (h + n_h - 1) / n_h;
    out->tiles_x = (w + n_w - 1) / n_w;
    out->n_tiles = (int64_t)out->tiles_y * out->tiles_x;
    out->c_tile = kura_c_tile(n_w); /* paper eq. 9 */
    /* docs/kura.md#analytic-timing [decision]: drains hide under the next prefill, the first
     * prefill does not */
    out->cycles_step = out->n_tiles * out->c_tile + n_w;
    out->t_px = f_hz * n_h * n_w / (double)out->c_tile;                      /* paper 3.3 */
    out->c_px = 1.0 / n_h + (double)KURA_SWEEP_CYCLES / ((double)n_h * n_w); /* paper 3.3 */
    out->c_px_eff = (double)out->cycles_step / ((double)h * w);
    out->utilization = (double)h * w / ((double)out->n_tiles * n_h * n_w);
    out->step_us = 1e6 * (double)out->cycles_step / f_hz;
}

void kura_tile_origin(int h, int w, int n_h, int n_w, int64_t k, int *r0, int *c0)
{
    (void)h;
    int tiles_x = (w + n_w - 1) / n_w;
    *r0 = (int)(k / tiles_x) * n_h;
    *c0 = (int)(k % tiles_x) * n_w;
}
