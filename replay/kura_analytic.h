/*
 * kura_analytic: the analytic timing model of the SA-Kura array (docs/kura.md section
 * 8.1, paper eq. 9) and the tiling every SA-Kura model shares (section 8).
 *
 * Tiles are N_h x N_w with origins (ty·N_h, tx·N_w) in row-major order (tx fastest);
 * partial tiles at the right and bottom edges are padded to the full shape, so every tile
 * costs C_tile = N_w + 26 cycles and one prefill per step stays exposed. All functions are
 * pure arithmetic and never fail on valid sizes (callers check 1 <= sizes).
 *
 * Below both the replay model "kura" (replay/kura_model) and the DMA/system level
 * (replay/kura_dma), which the model calls: each includes this header, neither the other's
 * (the model includes kura_dma.h, kura_dma never includes kura_model.h).
 */
#ifndef ACCELTRACE_KURA_ANALYTIC_H
#define ACCELTRACE_KURA_ANALYTIC_H

#include <stdint.h>

/* The analytic figures of one array shape on one H x W map (docs/kura.md#analytic-timing). */
struct kura_analytic {
    int n_h, n_w;         /* array shape */
    int tiles_y, tiles_x; /* ceil(H/N_h), ceil(W/N_w) */
    int64_t n_tiles;      /* tiles_y·tiles_x */
    int64_t c_tile;       /* N_w + 26 cycles (paper eq. 9) */
    int64_t cycles_step;  /* n·C_tile + N_w cycles per drift step (docs/kura.md#analytic-timing) */
    double t_px;          /* f·N_h·N_w/C_tile, pixels per second [paper] */
    double c_px;          /* 1/N_h + 26/(N_h·N_w), cycles per pixel [paper] */
    double c_px_eff;      /* cycles_step/(H·W) */
    double utilization;   /* H·W/(n·N_h·N_w) */
    double step_us;       /* cycles_step/f in µs */
};

/* Evaluates the analytic model for an N_h x N_w array on an H x W map at f_hz. */
void kura_analytic_eval(int h, int w, int n_h, int n_w, double f_hz, struct kura_analytic *out);

/* Origin (r0, c0) of tile k in the tile order above. */
void kura_tile_origin(int h, int w, int n_h, int n_w, int64_t k, int *r0, int *c0);

#endif
