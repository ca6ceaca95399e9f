/*
 * npz: reading numpy arrays from .npz files (np.savez / np.savez_compressed) as a stream,
 * for `acceltrace import` (docs/interop.md#import).
 *
 * An .npz is a zip archive with one NAME.npy entry per array, stored or deflated (the only
 * two zip methods numpy writes); entries may carry zip64 size fields (numpy forces them).
 * A .npy entry is the magic "\x93NUMPY", version 1.0, 2.0 or 3.0, a header length (u16 for
 * 1.0, u32 after), then a Python dict literal {'descr': '<i8', 'fortran_order': False,
 * 'shape': (2, 3), } and the C-order data. Supported dtypes: bool ('|b1'), int8..int64 and
 * uint8..uint64 in either byte order; fortran_order must be False.
 *
 * struct npz_array reads one entry's data in order without holding it: npz_array_open parses
 * the zip directory and the .npy header (shape, dtype), npz_array_read hands out the next
 * elements converted to int64. Memory: a 64 KiB window plus zlib's state. Errors name the
 * file and the entry: "bad .npy header in 'masks' of 'm.npz'"; nothing prints.
 */
#ifndef ACCELTRACE_NPZ_H
#define ACCELTRACE_NPZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define NPZ_MAX_DIMS 8

struct npz_array;

/*
 * Opens entry `name` (without ".npy") of the .npz at path. 0 with *out set; ERR_NOINPUT
 * (the file cannot be opened), ERR_NOTFOUND (no such entry), ERR_DATA (not a zip, bad
 * .npy header), ERR_FORMAT (another compression, dtype or Fortran order), ERR_NOMEM; e
 * names the file and entry.
 */
int npz_array_open(struct npz_array **out, const char *path, const char *name, struct errmsg *e);

/* Shape (ndim entries, C order), element count and dtype string ("<i8", "|b1") of a. */
int npz_array_ndim(const struct npz_array *a);
const uint64_t *npz_array_shape(const struct npz_array *a);
uint64_t npz_array_count(const struct npz_array *a);
const char *npz_array_dtype(const struct npz_array *a);
/* True for the bool dtype. */
bool npz_array_is_bool(const struct npz_array *a);

/*
 * The next n elements (n <= what is left) as int64 into v (uint64 above INT64_MAX is
 * ERR_DATA). 0, ERR_DATA (entry truncated or corrupt, CRC mismatch at its end) or ERR_IO.
 */
int npz_array_read(struct npz_array *a, int64_t *v, size_t n, struct errmsg *e);

/* Frees a (NULL is a no-op). */
void npz_array_close(struct npz_array *a);

/* "(2, 3, 4)" of a shape, into buf (n bytes). */
void npz_shape_text(const uint64_t *shape, int ndim, char *buf, size_t n);

#endif
