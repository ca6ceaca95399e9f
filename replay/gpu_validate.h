/*
 * gpu_validate: the validation set of the GPU model (docs/models.md#gpu-baselines).
 *
 * configs/gpu/validation.csv holds published, measured end-to-end GPU times (columns id,
 * workload, gpu, condition, measured, unit, source, quote). They check the model and never
 * set a parameter (the calibration set is gpu_calibrate.h; the two share no source).
 * Condition keys ("k=v;k=v"): image_size, steps, batch, cfg (1: the batch doubles),
 * text_tokens, context, part (attention|layer|model), heads, kv_heads, head_dim,
 * runtime (eager: the host's dispatch per op counts; graph or absent: kernel time),
 * per (run: the whole S steps, the default for diffusion; step; token, the default for
 * decode). Other keys (dtype, attn_impl, board, ...) are documentation. Units: s, ms, us,
 * or a rate it/s (steps) or tok/s (tokens), whose error is taken on the time per step or
 * token.
 */
#ifndef ACCELTRACE_GPU_VALIDATE_H
#define ACCELTRACE_GPU_VALIDATE_H

#include <stddef.h>

#include "common/err.h"

struct gpu_vpoint {
    char *id, *workload, *gpu, *condition, *unit, *source; /* owned by the set */
    double measured;                                       /* in unit */
    double predicted;                                      /* in unit */
    double error;                                          /* predicted time / measured time - 1 */
    int diffusion; /* 1: a diffusion transformer, 0: decode */
};

struct gpu_validation {
    struct gpu_vpoint *p;
    size_t n;
    double median_abs, max_abs; /* of |error| */
};

/*
 * Loads the set at path and predicts every point with the preset its gpu column names.
 * 0, or ERR_IO / ERR_DATA (file and line named: unknown workload or GPU, bad number, bad
 * condition) with e set. Release with gpu_validation_release.
 */
int gpu_validation_run(const char *path, struct gpu_validation *v, struct errmsg *e);
void gpu_validation_release(struct gpu_validation *v);

#endif
