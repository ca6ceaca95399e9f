/*
 * gpu_calibrate: the calibration set of the GPU model and the fit of its calibrated
 * parameters (docs/models.md#gpu-baselines).
 *
 * configs/gpu/calibration.csv holds published per-operator measurements (columns id, gpu,
 * op, condition, measured, unit, source, quote; condition "k=v;k=v"). The fit sets, per
 * chip family (Ampere: the A100 boards; Hopper: the H100 boards and the H200, same SM):
 *   gemm_k_fill               from op=gemm rows (not the best-of-shape-search rows, which
 *                             give gemm_eff_max),
 *   attn_eff_max, attn_k_fill from op=attention_fwd rows of FlashAttention-2 (impl=fa2,
 *                             forward only; a family without them uses its forward +
 *                             backward rows, pass=fwd+bwd, as the forward's rate),
 *   decode_eff, decode_fill_us jointly from op=decode_attention rows,
 * each by a grid search minimizing the sum of squared log ratios model/measured, the
 * model evaluated on the row's own GPU preset with the other values as they are. End-to-end
 * times never enter (they are the validation set, gpu_validate.h).
 */
#ifndef ACCELTRACE_GPU_CALIBRATE_H
#define ACCELTRACE_GPU_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "replay/gpu_model.h"

/* One fitted parameter. */
struct gpu_fit_param {
    const char *key; /* "gemm_k_fill", ... */
    double value;    /* NAN when the family has no usable rows */
    double rms_log;  /* root mean square of log(model / measured) at value */
    size_t rows;     /* rows used */
};

#define GPU_FIT_PARAMS 5

struct gpu_fit {
    const char *family; /* "ampere" or "hopper" */
    /* gemm_k_fill, attn_eff_max, attn_k_fill, decode_eff, decode_fill_us */
    struct gpu_fit_param p[GPU_FIT_PARAMS];
    bool attn_fwd_bwd; /* the attention fit used forward + backward rows (no forward rows) */
};

/* "ampere" or "hopper" for a preset name; NULL when unknown. */
const char *gpu_preset_family(const char *preset);

/*
 * Fits the calibrated parameters of preset's family from the CSV at path. 0, or ERR_IO /
 * ERR_DATA (a bad row: file and line named) / ERR_USAGE (unknown preset) with e set.
 */
int gpu_calibrate(const char *path, const char *preset, struct gpu_fit *out, struct errmsg *e);

/* Value of key in a "k=v;k=v" condition into buf (n bytes); false when absent. */
bool gpu_cond_get(const char *cond, const char *key, char *buf, size_t n);

#endif
