/*
 * kura_tiles: per-step inputs of the SA-Kura replay decoded from a KuraStep record, the
 * derived tile streams of an array shape (docs/kura.md#tile-stream-export,
 * docs/kura.md#cycle-accurate-array), their check against stored KuraTiles records, and the RTL
 * stimulus export ($readmemh files).
 *
 * The tile streams are derived by the cycle-accurate simulation (replay/kura_sim) with all
 * of its checks on, so an export is only written when the array reproduces the shared
 * fixed-point drift bit for bit. Export layout (section 7): in.hex, out.hex, lut.hex,
 * phase.hex, drift.hex, meta.json and README.txt in one folder; README.txt is generated
 * from the same layout table that meta.json lists.
 *
 * Ownership: kura_step_decode allocates the phase map (free with mem_free); streams are
 * released with kura_streams_release. Nothing prints.
 */
#ifndef ACCELTRACE_REPLAY_KURA_TILES_H
#define ACCELTRACE_REPLAY_KURA_TILES_H

#include <stdint.h>

#include "common/err.h"
#include "formats/kura_fixed.h"
#include "formats/trace.pb-c.h"
#include "replay/kura_sim.h"

/* Largest map side accepted from a trace (bounds allocations before use). */
#define KURA_MAX_SIDE 16384

/* What one KuraStep record gives the replay. */
struct kura_step_info {
    int h, w;                                /* map size */
    int step;                                /* i for REVERSE */
    int role;                                /* ACCELTRACE__KURA_ROLE__... */
    double c, beta, sigma, k, kref, psi_ref; /* schedule values (docs/kura.md#sde-and-schedule) */
    struct kura_regs regs;                   /* G, R_s, R_c (docs/kura.md#fixed-point-drift) */
};

/*
 * Decodes a KuraStep: sizes from the record (or hdr_h/hdr_w when the record has none),
 * bounded by KURA_MAX_SIDE; phase_q15 must hold exactly h·w int16 LE. For REVERSE steps
 * the registers come from kura_regs_init(K, K_ref, psi_ref) and must equal the record's
 * g/r_s/r_c when it stores them. *q receives the map (caller frees with mem_free).
 * 0 or ERR_DATA/ERR_LIMIT/ERR_NOMEM with the message in e.
 */
int kura_step_decode(const Acceltrace__KuraStep *ks, int hdr_h, int hdr_w,
                     struct kura_step_info *info, int16_t **q, struct errmsg *e);

/*
 * Derives the streams of an N_h x N_w array for map q (h x w) by the checked cycle-accurate
 * simulation. st is allocated here (release with kura_streams_release); uq and d (h·w each,
 * may be NULL) receive the fixed-point u_q and d of the step. 0 or a negative enum err.
 */
int kura_tiles_derive(const int16_t *q, int h, int w, const struct kura_regs *regs, int n_h,
                      int n_w, struct kura_streams *st, int32_t *uq, int32_t *d, struct errmsg *e);

/*
 * Compares a stored KuraTiles record with derived streams of the same shape: any
 * difference in sizes, control bits or data is ERR_DATA naming the first differing cycle.
 */
int kura_tiles_compare(const struct kura_streams *st, const Acceltrace__KuraTiles *kt,
                       struct errmsg *e);

/*
 * Activity calibration (docs/kura.md#switching-activity): runs the N_h x N_w array with toggle
 * counting over every REVERSE step of the kura trace at path and sets *alpha = Σ toggles / Σ bits
 * written and *steps to the number of steps. 0, or ERR_DATA (not a kura trace, no REVERSE step, bad
 * record), ERR_IO, ERR_NOMEM with e set.
 */
int kura_activity_calibrate(const char *path, int n_h, int n_w, double *alpha, uint64_t *steps,
                            struct errmsg *e);

/* Writes the section 7 export of the derived streams into dir (created if missing). */
int kura_tiles_export(const char *dir, const struct kura_step_info *info, const int16_t *q,
                      const int32_t *d, const struct kura_streams *st, const char *trace_hash,
                      struct errmsg *e);

#endif
