/*
 * kura_plots: the SA-Kura figures of docs/kura.md#figures, written through
 * analysis/plot.h (gnuplot data + script + PNG) with a normative CSV beside each plot, and
 * phase-map PNGs through formats/kura_png.
 *
 * Design-space figures need no trace (kura_plots_design): the eq. 11 E_px heatmap with the
 * eq. 12 N_w* curve and its per-N_h lines with the paper's four points (Fig. 5b), area vs
 * E_px with budget lines, compute-only and system level (Fig. 6), cycles per step vs shape
 * (analytic lines, cycle-accurate markers) and the c_px,eff heatmap over 1..32².
 * Trace figures (kura_plots_trace) read a kura trace once: fixed-vs-float drift error per
 * step with its bound X_i, activity α per step for each shape, and the phase maps.
 *
 * Nothing prints; *rendered tells whether every PNG of gnuplot was made (false when gnuplot
 * is missing or fails; the data, scripts and CSVs are still written, and on a gnuplot
 * failure e holds its message while the call returns 0).
 */
#ifndef ACCELTRACE_KURA_PLOTS_H
#define ACCELTRACE_KURA_PLOTS_H

#include <stdbool.h>

#include "common/err.h"
#include "replay/kura_power.h"

/*
 * Writes kura_epx_heatmap, kura_epx_lines, kura_area_epx, kura_cycles_shape and
 * kura_cpx_heatmap (.csv, .dat, .gp, .png) for an h x w image into dir (created if
 * missing). 0 or a negative enum err with e set.
 */
int kura_plots_design(const char *dir, const struct kura_energy *en, int h, int w, bool *rendered,
                      struct errmsg *e);

/*
 * Reads the kura trace at path once and writes kura_drift_error, kura_activity (for the
 * n_shapes shapes (hs[i], ws[i])) and phase maps kura_phase_data.png, kura_phase_step<i>.png
 * for every every_k-th REVERSE step (every_k >= 1), kura_phase_final.png and
 * kura_phase_error.png (|wrap(theta_final - theta_0)|, black 0 .. white >= 0.2 rad).
 * 0 or a negative enum err with e set (ERR_DATA for a trace that is not kura).
 */
int kura_plots_trace(const char *dir, const char *path, const int *hs, const int *ws, int n_shapes,
                     int every_k, bool *rendered, struct errmsg *e);

/*
 * The same figures as an analyzer (analysis/analyzer.h), to share one pass over a kura
 * trace with other analyzers (export tiles' kura_pick): kura_plots_pass_new checks the
 * options as kura_plots_trace does, makes dir and sets *rendered true; in the pass, begin
 * refuses a trace that is not kura and record writes the phase maps as it goes; finish
 * writes the drift error and activity figures and clears *rendered when gnuplot made none.
 * One trace per pass state; hs, ws, dir and rendered must outlive it. Free with
 * kura_plots_pass_free (NULL is a no-op).
 */
struct kura_plots_pass;
struct analyzer;
int kura_plots_pass_new(struct kura_plots_pass **out, const char *dir, const int *hs, const int *ws,
                        int n_shapes, int every_k, bool *rendered, struct errmsg *e);
void kura_plots_pass_analyzer(struct kura_plots_pass *p, struct analyzer *out);
void kura_plots_pass_free(struct kura_plots_pass *p);

#endif
