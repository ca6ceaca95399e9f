/*
 * png: PNG images written with libpng (masks, phase maps, heatmaps). libpng reports errors
 * by longjmp; that is contained inside formats/png.c and turned into enum err values with a
 * message. Pixels are 8-bit: grey (1 byte per pixel) or RGB (3 bytes per pixel), rows top
 * to bottom, `stride` bytes apart (>= width * channels).
 */
#ifndef ACCELTRACE_PNG_H
#define ACCELTRACE_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

enum png_color { PNG_GREY8 = 1, PNG_RGB8 = 3 };

/* Largest width or height accepted (libpng's limit is larger; this bounds memory). */
#define PNG_MAX_DIM 65536

/*
 * Writes a PNG file (created/truncated). 0, ERR_USAGE (zero or too large size, stride too
 * small), ERR_IO (file), ERR_EXTERNAL (libpng failure); e gets the message with the path.
 */
int png_write_file(const char *path, uint32_t width, uint32_t height, enum png_color color,
                   const uint8_t *pixels, size_t stride, struct errmsg *e);

/* Same into a memory buffer (appended to out). */
int png_write_mem(struct buf *out, uint32_t width, uint32_t height, enum png_color color,
                  const uint8_t *pixels, size_t stride, struct errmsg *e);

/*
 * Colour map for heatmaps: t in [0, 1] (clamped; NaN gives grey 128) to RGB through the
 * viridis map (piecewise-linear over 9 control points of matplotlib's viridis table).
 */
void png_viridis(double t, uint8_t rgb[3]);

#endif
