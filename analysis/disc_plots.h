/*
 * disc_plots: the DiSC figures of docs/disc.md#figures (items 1-6 and 9-11),
 * drawn from a replay results folder of model "disc" (results.csv, ops.csv) and,
 * optionally, one or more disc traces (up to DISC_PLOTS_MAX_TRACES captures compared in
 * one figure):
 *   speedup        bars of DiSC_Baseline / DiSC_CTR / DiSC_All over the A100 per config,
 *                  with the paper's Fig. 18a ranges as shaded bands
 *   energy         stacked bars of DiSC energy over A100 energy by component and mode
 *                  (config 0), with the paper's Fig. 18b reductions as bands
 *   cycles_by_op   stacked exposed cycles per op class per step and mode (config 0), the
 *                  SpMM cycles hidden under the projection as their own part
 *   prune_per_step token pruning ratio per step, one line per trace, band at 25.3-62.6%
 *   st_sparsity    pooled ST mask sparsity per step, one line per trace with masks, band
 *                  at 56.2-66.1%
 *   st_sparsity_heatmap  mean sparsity over heads by step and block, generation steps
 *                  marked "G": for the first trace with masks; each further trace with
 *                  masks gets st_sparsity_heatmap_<label>
 *   latent_diff    per-token change quantiles d_p50, d_p90, d_max and tau_k per step and trace
 *   quality_per_step  rel_err per step of the compared runs of each trace, final cosine and
 *                  PSNR in the plot and in quality.csv (trace Summary; columns trace, run,
 *                  cosine, psnr [dB], rel_err_final)
 *   flops_self_attention, flops_network  Fig. 17a/b stacked FLOP bars: per trace a group of
 *                  dense, CTR and CTR+ST, in % of that trace's own dense total
 * A trace's label is its file name without directory and ".atr" (a repeated name gets
 * "-2", "-3", ...); in a heatmap file name, characters outside [A-Za-z0-9_.-] become '_'.
 * With several traces the series are "<label>" (prune_per_step, st_sparsity) or
 * "<label> <quantity or run>" and the bar categories "<label> dense", "<label> CTR",
 * "<label> CTR+ST"; with one trace the names are those without the label ("prune ratio",
 * "sparsity", "d_p50", "CTR-only", "dense", ...). Traces may differ in steps, resolution
 * and config: x is each trace's own step index.
 * Each bar plot also gets a CSV of its numbers (NAME.csv), rows following its categories.
 * Nothing prints; *rendered is false when gnuplot was missing.
 */
#ifndef ACCELTRACE_DISC_PLOTS_H
#define ACCELTRACE_DISC_PLOTS_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/analyzer.h"
#include "common/err.h"

struct trace_reader;

/* At most this many traces in one call (decision: 16 groups of bars still read). */
#define DISC_PLOTS_MAX_TRACES 16
/* At most this many other analyzers sharing the pass over the first trace. */
#define DISC_PLOTS_MAX_EXTRA 4

/*
 * Writes the plots of results_dir and of the n_traces trace files traces[] (none when
 * n_traces is 0) into out_dir, which must exist. 0 or a negative enum err with e set:
 * ERR_DATA for a folder that is not a disc replay or a trace that is not a disc trace
 * (naming it), ERR_USAGE for more than DISC_PLOTS_MAX_TRACES traces or
 * DISC_PLOTS_MAX_EXTRA extra analyzers.
 * extra[0..n_extra) (analysis/analyzer.h) are fed from the same pass over traces[0], so
 * one read of the trace serves them too (`analyze disc --hash DIR`); their finish, and
 * their release, stay the caller's. With n_traces 0 they see nothing.
 * first, when not NULL, is a reader of traces[0] the caller opened (default reader
 * options) and that has returned no record yet, for instance to check its content hash
 * first: the pass reads it instead of opening traces[0] again. disc_plots_write takes it
 * over and frees it, on success and on failure.
 */
int disc_plots_write(const char *results_dir, const char *const *traces, size_t n_traces,
                     struct trace_reader *first, const struct analyzer *extra, size_t n_extra,
                     const char *out_dir, bool *rendered, struct errmsg *e);

#endif
