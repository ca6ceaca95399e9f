/*
 * kura_model: the replay model "kura" of the SA-Kura array (docs/kura.md#replay).
 *
 * The analytic timing model and the tiling it shares with the other SA-Kura parts live
 * below it in replay/kura_analytic.h, which this header includes for the callers of
 * kura_analytic_eval and kura_tile_origin; kura_dma includes kura_analytic.h and never
 * this header, so the model may call the DMA/system level without an include cycle.
 */
#ifndef ACCELTRACE_KURA_MODEL_H
#define ACCELTRACE_KURA_MODEL_H

#include "replay/kura_analytic.h"

/*
 * The replay model "kura" (replay/model.h), registered in replay/model_registry.c. One
 * instance per array shape: the analytic model per REVERSE step, optionally the checked
 * cycle-accurate simulation and its activity (8.2, 8.5), power/area/energy (8.3) and the
 * DMA/system level (8.4). prepare() decodes each step's map, its front-end words and the
 * reference u_q once for all instances, and checks stored KuraTiles against the derived
 * streams (ERR_DATA on a difference). Rows: one per config in results; with activity, one
 * per step and config in the table "kura_steps".
 */
struct model_ops;
extern const struct model_ops model_kura_ops;

#endif
