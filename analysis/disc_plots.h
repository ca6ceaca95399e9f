/*
 * disc_plots: the DiSC figures of specs/disc.md section 9 (items 1-6 and 9-11),
 * drawn from a replay results folder of model "disc" (results.csv, ops.csv) and,
 * optionally, the disc trace it replayed:
 *   speedup        bars of DiSC_Baseline / DiSC_CTR / DiSC_All over the A100 per config,
 *                  with the paper's Fig. 18a ranges as shaded bands
 *   energy         stacked bars of DiSC energy over A100 energy by component and mode
 *                  (config 0), with the paper's Fig. 18b reductions as bands
 *   cycles_by_op   stacked exposed cycles per op class per step and mode (config 0), the
 *                  SpMM cycles hidden under the projection as their own part
 *   prune_per_step token pruning ratio per step (trace), band at 25.3-62.6%
 *   st_sparsity    pooled ST mask sparsity per step (trace), band at 56.2-66.1%
 *   st_sparsity_heatmap  mean sparsity over heads by step and block, generation steps
 *                  marked "G" (trace)
 *   latent_diff    per-token change quantiles d_p50, d_p90, d_max and tau_k per step (trace)
 *   quality_per_step  rel_err per step of the compared runs, final cosine and PSNR in the
 *                  plot and in quality.csv (trace Summary)
 *   flops_self_attention, flops_network  Fig. 17a/b stacked FLOP bars of dense, CTR and
 *                  CTR+ST in % of dense (trace Summary)
 * Each plot also gets a CSV of its numbers (NAME.csv). Nothing prints; *rendered is false
 * when gnuplot was missing.
 */
#ifndef ACCELTRACE_DISC_PLOTS_H
#define ACCELTRACE_DISC_PLOTS_H

#include <stdbool.h>

#include "common/err.h"

/*
 * Writes the plots of results_dir (and of trace_path when not NULL) into out_dir, which
 * must exist. 0 or a negative enum err with e set (ERR_DATA for a folder that is not a
 * disc replay).
 */
int disc_plots_write(const char *results_dir, const char *trace_path, const char *out_dir,
                     bool *rendered, struct errmsg *e);

#endif
