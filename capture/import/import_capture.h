/*
 * import_capture: traces made from other tools' arrays (`acceltrace import`,
 * docs/interop.md#import), entering through the capture interface (capture/capture.h) so
 * they get the same writer, common header, memory refusal and provenance as a capture:
 * TraceHeader.source "imported", source_detail "imported FILE sha256 HEX".
 *
 *   capture_import_masks_ops       workload "disc": an .npz whose `masks` is a bool array
 *                                  (steps, blocks, heads, tokens, tokens) of the DiT model
 *                                  --model at --image-size (capture/disc/dit.h dimensions).
 *                                  Per step one DiscStep (every token computed, N_k = N, ST
 *                                  generation every `refresh` steps from step 0), then per
 *                                  (block, head) one kept DiscMask: the N x N bits, row_nnz,
 *                                  nnz, sparsity (no load-balance statistics: the disc model
 *                                  recounts them from the bits).
 *   capture_import_selections_ops  workload "salca": an .npz whose `selected` holds token
 *                                  indices (steps, layers, heads, k) padded with -1, or a
 *                                  flat list with `counts` (steps, layers, heads); optional
 *                                  `n_ctx` (steps,) keys per step, else context + t + 1. One
 *                                  SalcaSelect per (t, l, h) under method id `method`.
 * Shapes are checked at open (ERR_DATA naming the array's shape and the expected one); index
 * values as they stream (ERR_DATA naming the job). The arrays are streamed, never held:
 * memory is one mask row or one job's indices.
 */
#ifndef ACCELTRACE_IMPORT_CAPTURE_H
#define ACCELTRACE_IMPORT_CAPTURE_H

#include <stdint.h>

#include "capture/capture.h"

struct import_params {
    const char *path; /* the .npz (kept by the caller while the instance lives) */
    /* masks */
    const char *model; /* DiT model name (capture/disc/dit.h) */
    int image_size;    /* pixels; 0 = the model's default */
    int refresh;       /* ST generation steps: k % refresh == 0 (default 1: every step) */
    /* selections */
    int64_t context;        /* prompt tokens n0; -1 = the file's n_ctx array */
    uint32_t method;        /* SalcaSelect.method id (default 0) */
    uint32_t layers, heads; /* expected L and H; 0 = the file's */
    uint32_t kv_heads;      /* G; 0 = heads */
    uint32_t head_dim;      /* d of the header (default 128) */
};

void import_params_default(struct import_params *p);

extern const struct capture_ops capture_import_masks_ops;
extern const struct capture_ops capture_import_selections_ops;

/* What an import wrote (read on the instance after capture_run). */
struct import_result {
    uint64_t steps, jobs; /* steps; masks or selections written */
    uint64_t ones;        /* mask bits set, or indices written */
    char sha256[65];      /* of the input file */
    char shape[96];       /* of the main array, "(2, 4, 4, 64, 64)" */
};
const struct import_result *import_capture_result(const void *inst);

#endif
