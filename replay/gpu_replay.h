/*
 * gpu_replay: a GPU as a config of model "gpu" (a preset name plus optional overrides of
 * its values, replay/gpu_model.h) and the replay-engine model "gpu" that prices a disc
 * trace's dense denoising steps on it (docs/models.md#gpu-baselines).
 */
#ifndef ACCELTRACE_GPU_REPLAY_H
#define ACCELTRACE_GPU_REPLAY_H

#include <stdbool.h>

#include "common/err.h"
#include "replay/gpu_model.h"
#include "replay/hw_config.h"

/* The schema of model "gpu" configs. */
const struct hw_schema *gpu_hw_schema(void);

/* *hw from a validated "gpu" config (preset, then every override that is not -1); *eager
 * (may be NULL) from its "eager" key. 0, or ERR_CONFIG for an unknown preset. */
int gpu_hw_from_config(const struct hw_config *cfg, struct gpu_hw *hw, bool *eager);

/*
 * *hw from spec: a preset name, or the path of a "gpu" config file. 0, or ERR_USAGE
 * (unknown name) / a config error (ERR_CONFIG, ERR_IO) with e set naming the file.
 */
int gpu_hw_resolve(const char *spec, struct gpu_hw *hw, bool *eager, struct errmsg *e);

#endif
