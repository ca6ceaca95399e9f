/*
 * disc_inputs: text-embedding files for the DiSC capture (docs/disc.md#inputs): raw
 * little-endian float32 (T x D_c, row-major) or .npy format 1.0/2.0 with descr '<f4' or
 * '<f2', C order, shape (T, D_c) or (1, T, D_c). Any mismatch is ERR_DATA naming the file.
 */
#ifndef ACCELTRACE_DISC_INPUTS_H
#define ACCELTRACE_DISC_INPUTS_H

#include <stddef.h>

#include "common/err.h"

/* Loads path into out (T * D_c floats). 0, ERR_IO, ERR_DATA or ERR_NOMEM. */
int disc_text_load(const char *path, int T, int Dc, float *out, struct errmsg *e);

#endif
