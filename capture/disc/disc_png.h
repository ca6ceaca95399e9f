/*
 * disc_png: the --png images of the DiSC capture (docs/disc.md#trace-records): every latent channel
 * in grey and channels 0-2 as RGB (each min-max scaled), the token mask of every step (G x G, white
 * = kept) and kept attention masks (N x N, white = attended), OR-downsampled so no side exceeds
 * 2048 px. Files are written with formats/png.
 */
#ifndef ACCELTRACE_DISC_PNG_H
#define ACCELTRACE_DISC_PNG_H

#include <stdint.h>

#include "common/err.h"

/* DIR/token_mask_kKKK.png from a G*G-bit token bitset. */
int disc_png_token_mask(const char *dir, int k, const uint64_t *mask, int grid, struct errmsg *e);

/* DIR/attn_kKKK_bB_lLL_hHH.png from an N x N bitset (rows of ceil(N/64) words). */
int disc_png_attn_mask(const char *dir, int k, int batch, int block, int head, const uint64_t *bits,
                       int n, struct errmsg *e);

/* DIR/<name>_cC.png per channel and DIR/<name>_rgb.png from a (c_in, lat, lat) latent. */
int disc_png_latent(const char *dir, const char *name, const float *x, int c_in, int lat,
                    struct errmsg *e);

#endif
