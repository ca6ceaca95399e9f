/*
 * kura_png: phase maps and error maps as PNG images (docs/kura.md#figures), written
 * through formats/png. One pixel per phase. Phase maps are HSV with hue = (theta + pi)/(2 pi)
 * and S = V = 1 (so -pi is red, -pi/3 green and pi/3 blue); grey maps scale [lo, hi] to
 * black..white, clamped.
 *
 * Why formats/: the Kuramoto capture writes these images while it samples and the
 * analysis plots write the same images from a trace, so the rendering sits below capture
 * and analysis both, beside the PNG writer it uses (formats/png) and the phase numerics it
 * needs (kura_wrap in formats/kura_fixed). It is a file format of maps, not a trace
 * container matter, so not traces/. Nothing here reads or prints; callers own the arrays.
 */
#ifndef ACCELTRACE_KURA_PNG_H
#define ACCELTRACE_KURA_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* RGB of a phase theta (rad; any finite value, wrapped) by the hue rule above. */
void kura_png_hue(double theta, uint8_t rgb[3]);

/* Writes an h x w phase map as RGB8 PNG. 0 or a negative err with the message in e. */
int kura_png_phase(const char *path, const double *theta, size_t h, size_t w, struct errmsg *e);

/* Writes an h x w grey PNG: value v maps to round(255 (v - lo)/(hi - lo)), clamped. */
int kura_png_grey(const char *path, const double *v, size_t h, size_t w, double lo, double hi,
                  struct errmsg *e);

#endif
