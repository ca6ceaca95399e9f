/*
 * conflicts: the HBM channel-conflict analyzer of Salca traces (docs/salca.md#conflict-analyzer
 * and 12; the mechanism itself lives in replay/hbm_pc).
 *
 * Each job (one SalcaSelect: step, layer, query head, selected token indices) is mapped to
 * the h_att attention pseudo-channels and replayed under every policy of one analysis in
 * the same pass: batch, in-order for each FIFO depth, and reorder windows of each size.
 * Per policy the analyzer accumulates slots, the ideal ceil(N_sel/h_att), the bound (max
 * per-PC load), alpha = sum slots / sum ideal overall, per layer and per group (a group is
 * a series label such as the trace's task family), the per-job alpha mean and maximum, and
 * a histogram of per-PC occupancy per slot. Independently of the policies it accumulates,
 * for the mod, xor and hash maps, the histogram of conflicts per batch of p_iss requests.
 *
 * From traces it also keeps the quality of every method (section 12 plot 4), the heavy-
 * channel stability of SalcaPrefill records (plot 7) and the overshoot of Salca's sets
 * (plot 8).
 *
 * conflicts_write writes CSV tables (through formats/csv) and the section 12 plots 1-4, 7
 * and 8 into a folder. conflicts_analyzer feeds a handle from a trace pass (analysis/
 * analyzer.h). The handle owns its memory and keeps an error message; nothing prints.
 * Code: conflicts_pc.c (PC conflicts, timing mode, the feed), conflicts_pc_out.c (their
 * tables and plots, conflicts_write), conflicts_select.c (quality and overshoot),
 * conflicts_heavy.c (heavy-channel stability); shared state in conflicts_impl.h.
 */
#ifndef ACCELTRACE_CONFLICTS_H
#define ACCELTRACE_CONFLICTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"
#include "replay/hbm_pc.h"
#include "replay/hbm_timing.h"
#include "replay/salca_model.h"
#include "traces/trace_salca.h"

#define CONFLICTS_MAX_WINDOWS 16
#define CONFLICTS_MAX_DEPTHS 8
#define CONFLICTS_MAX_GROUPS 32
#define CONFLICTS_MAX_LAYERS 4096
#define CONFLICTS_OCC_BINS 65                 /* occupancy 0..63 and >= 64 */
#define CONFLICTS_MAX_CTX TRACE_SALCA_MAX_CTX /* n_ctx bound for records read from traces */

struct conflicts_opts {
    struct hbm_pc_mapping map; /* kind, h_att (--pcs), hash seed */
    uint32_t att_base;         /* first attention PC (reports only) */
    uint32_t p_iss;            /* issue width per slot; 0 = h_att */
    size_t n_windows;
    uint32_t windows[CONFLICTS_MAX_WINDOWS]; /* reorder windows; 0 = in-order (depths[0]) */
    size_t n_depths;
    uint32_t depths[CONFLICTS_MAX_DEPTHS]; /* in-order FIFO depths D_f */
    int32_t method;                        /* SalcaSelect.method to analyze; -1 = every method */
    bool per_job;                          /* also write alpha_jobs.csv (one row per job) */
    /* timing mode (NULL = off): every policy is also replayed by replay/
     * hbm_timing under this configuration (copied) and hbm_time.csv is written */
    const struct hbm_timing_cfg *timing;
    /* with timing: also replay every policy under each preset of hbm_timing_preset_names()
     * (its own timing; layout, token size, refresh and occupancy of *timing, all-bank refresh
     * for a preset without per-bank refresh): hbm_presets.csv and the plot
     * hbm_presets_vs_window */
    bool compare_presets;
    bool steps; /* only SalcaSelect records with step_lo <= t <= step_hi */
    uint32_t step_lo, step_hi;
};

/* Defaults: mod map, 16 PCs, att_base 16, p_iss = h_att, windows 0,16,32,64,128,256,512,
 * 1024, depths 1,2,4, method 0 (salca), seed 0. */
void conflicts_opts_default(struct conflicts_opts *o);

struct conflicts;

/* New analyzer; validates opts (ERR_CONFIG with e set). *out NULL on failure. */
int conflicts_new(struct conflicts **out, const struct conflicts_opts *opts, struct errmsg *e);
void conflicts_free(struct conflicts *c);

/*
 * Adds one job of group `group` (a label; NULL = "all"): layer l, query head h and the
 * ascending token indices idx[0..n). 0, ERR_NOMEM, ERR_LIMIT (too many groups or layers).
 */
int conflicts_add_job(struct conflicts *c, const char *group, uint32_t l, uint32_t h,
                      const uint32_t *idx, size_t n);

/*
 * Adds a SalcaSelect record (ignored when its method is not opts.method): decodes `sel`
 * (bounded by n_ctx and count) and calls conflicts_add_job. ERR_DATA for a malformed list
 * (message in the handle), else as conflicts_add_job.
 */
int conflicts_add_select(struct conflicts *c, const char *group, const Acceltrace__SalcaSelect *s);

/*
 * Starts a trace: records its target retention (SalcaHeader.rho, the x series of the
 * recall-vs-retention plot) and its method names. hdr may be NULL or lack a salca part.
 * Quality statistics (recall, cosine, |S|/n) are then kept for every method of every
 * SalcaSelect passed to conflicts_add_select, keyed by (group, method, rho).
 * 0 or ERR_NOMEM.
 */
int conflicts_begin_trace(struct conflicts *c, const Acceltrace__TraceHeader *hdr);

/*
 * The analyzer of a trace pass over c (analysis/analyzer.h), c not owned: begin refuses a
 * trace of another workload (ERR_DATA) and starts it (conflicts_begin_trace); record adds
 * its SalcaSelect (conflicts_add_select) and SalcaPrefill (conflicts_add_prefill) records,
 * an error naming the file and record number. The series label of the trace's selections
 * is chosen by group_mode: "family" (SalcaHeader.task_family), "task" (task_name), "file"
 * (the path); "all" otherwise or when the header lacks it. No finish hook: after the last
 * trace the caller checks and writes (conflicts_write). f must outlive the analyzer.
 */
struct conflicts_feed {
    struct conflicts *c;
    const char *group_mode;
    const char *group; /* of the current trace (set by begin) */
};
struct analyzer;
void conflicts_analyzer(struct conflicts_feed *f, struct analyzer *out);

/* Quality rows kept so far (group, method, rho keys). */
size_t conflicts_n_quality(const struct conflicts *c);

/* Number of policies analyzed and the name of policy i ("batch", "inorder_d2", "window_128"). */
size_t conflicts_n_policies(const struct conflicts *c);
const char *conflicts_policy_name(const struct conflicts *c, size_t i);
/* The policy's configuration. */
const struct hbm_pc_policy_cfg *conflicts_policy(const struct conflicts *c, size_t i);

/* Totals over every group (group < 0) or for group index g. */
struct conflicts_totals {
    uint64_t jobs;
    uint64_t tokens;                      /* selected indices */
    uint64_t ideal;                       /* sum of ceil(N_sel/h_att) */
    uint64_t max_load;                    /* sum of per-job max per-PC load */
    uint64_t slots;                       /* sum of slots of the policy */
    double alpha;                         /* slots/ideal (0 when ideal = 0) */
    double bound;                         /* max_load/ideal */
    double alpha_job_mean, alpha_job_max; /* over jobs with N_sel > 0 */
};
int conflicts_totals(const struct conflicts *c, int group, size_t policy,
                     struct conflicts_totals *t);

size_t conflicts_n_groups(const struct conflicts *c);
const char *conflicts_group_name(const struct conflicts *c, size_t g);

/* Occupancy histogram of policy i (CONFLICTS_OCC_BINS counts, every group). */
const uint64_t *conflicts_occupancy(const struct conflicts *c, size_t policy);
/* Conflicts-per-batch histogram (p_iss counts) of map m; NULL when m is not applicable
 * (xor with h_att not a power of two). */
const uint64_t *conflicts_per_batch(const struct conflicts *c, enum hbm_pc_map m);

/*
 * Writes into dir (created if missing): alpha.csv (group, policy, jobs, tokens, slots,
 * ideal, alpha, bound, per-job mean/max), alpha_layers.csv, alpha_vs_window.csv,
 * alpha_jobs.csv (with opts.per_job: group, step, layer, head, N_sel, ideal, max load and
 * the slots of every policy),
 * conflict_occupancy.csv, conflict_per_batch.csv, and the plots conflict_occupancy,
 * conflict_per_batch, alpha_vs_window (.dat/.gp/.png through analysis/plot); with quality
 * rows recall_vs_retention.csv and the recall/cosine plots; with stability rows
 * heavy_stability.csv and its plot; with Salca selections overshoot.csv and its plot.
 * With opts.timing also hbm_time.csv (policy, depth, window, jobs, tokens, ideal_cycles,
 * cycles, time_over_ideal, alpha, row_hits, row_misses); with opts.compare_presets also
 * hbm_presets.csv (preset, then the same columns) and the plot hbm_presets_vs_window (alpha
 * and time over ideal against the window W, a series per preset, two panels).
 * *rendered tells whether gnuplot made the PNGs. 0 or ERR_IO/ERR_NOMEM/ERR_EXTERNAL.
 */
int conflicts_write(struct conflicts *c, const char *dir, bool *rendered);

const char *conflicts_errmsg(const struct conflicts *c);

/* ---- timing mode (opts.timing; replay/hbm_timing, docs/models.md#hbm-timing-mode) ---- */

/* Totals of policy i in the timing mode: cycles of the jobs, run back to back (each from
 * closed banks; the refresh phase continues), the ideal ceil(N_sel/h_att)·t_tok, and the
 * cycles of a perfectly spread job of the same size (tokens 0..N_sel-1 on the mod map,
 * same policy and timing) for alpha = cycles/spread_cycles. ERR_USAGE without the timing
 * mode or past the last policy. */
struct conflicts_timing {
    uint64_t jobs, tokens;
    uint64_t ideal_cycles, cycles, spread_cycles;
    uint64_t row_hits, row_misses;
    double time_over_ideal; /* cycles/ideal_cycles */
    double alpha;           /* cycles/spread_cycles */
};
int conflicts_timing_totals(const struct conflicts *c, size_t policy, struct conflicts_timing *t);
/* The same for preset k of hbm_timing_preset_names() under opts.compare_presets; ERR_USAGE
 * without it or past the last preset or policy. */
int conflicts_preset_totals(const struct conflicts *c, size_t k, size_t policy,
                            struct conflicts_timing *t);

/* ---- heavy-channel stability and Salca overshoot (docs/salca.md#figures plots 7 and 8) ---- */

#define CONFLICTS_OVER_BINS_PER_N 2000 /* overshoot bin width 1/2000 of n = 0.05% [decision] */
#define CONFLICTS_MAX_PREFIX 64        /* ladder entries accepted per SalcaPrefill */
#define CONFLICTS_MAX_STABILITY 65536  /* distinct (layer, prefix length) rows */

/* Jaccard overlap |A and B| / |A or B| of two sets of channel indices (duplicates count
 * once); 1 when both are empty. */
double conflicts_jaccard(const uint8_t *a, size_t na, const uint8_t *b, size_t nb);

/*
 * Adds a SalcaPrefill record: for each prefix length m of its ladder (prefix_len), the
 * Jaccard overlap of that prefix's top-r set with the final set `heavy` joins the mean of
 * (layer l, m). A record without the ladder (traces written before it existed) is only
 * counted. 0, ERR_DATA for inconsistent fields (message in the handle), ERR_LIMIT, ERR_NOMEM.
 */
int conflicts_add_prefill(struct conflicts *c, const Acceltrace__SalcaPrefill *p);

/* One heavy-stability row: the mean over the (trace, KV head) sets of layer `layer`. */
struct conflicts_stability {
    uint32_t layer;
    uint32_t prefix_len; /* m, prefill tokens the prefix set was found on */
    uint64_t sets;       /* (trace, KV head) sets averaged */
    double jaccard_mean, jaccard_min;
    /* mean over the sets of sum_{j in prefix set} S_j / sum_{j in I_g} S_j with the final
     * chan_sum S (how much of I_g's magnitude the prefix set keeps); -1 without chan_sum */
    double mass_kept_mean;
};

/* Rows kept so far, ordered by (layer, prefix_len); row i into *s (ERR_USAGE past the end). */
size_t conflicts_n_stability(const struct conflicts *c);
int conflicts_stability(const struct conflicts *c, size_t i, struct conflicts_stability *s);
/* SalcaPrefill records added; *without_ladder (may be NULL) gets those lacking the ladder. */
uint64_t conflicts_prefill_records(const struct conflicts *c, uint64_t *without_ladder);

/*
 * Overshoot (|S| - K)/n of every SalcaSelect of method 0 (Salca) passed to
 * conflicts_add_select, whatever opts.method is. bins[b] counts records with
 * floor((|S| - K)·CONFLICTS_OVER_BINS_PER_N / n) = b (exact integer arithmetic); n_bins is
 * one past the last non-empty bin. bins points into the handle (NULL when n_bins = 0).
 */
struct conflicts_overshoot {
    uint64_t records;
    double mean;          /* mean (|S| - K)/n, a fraction of n */
    uint64_t above_paper; /* records with (|S| - K)/n > 0.19% (the paper's set growth) */
    size_t n_bins;
    const uint64_t *bins;
};
void conflicts_overshoot(const struct conflicts *c, struct conflicts_overshoot *o);

/* Synthetic selections (`analyze conflicts --synthetic`, tests, benchmarks) come from
 * the generator of replay/salca_model.h (salca_synth_selection, enum salca_synth_kind),
 * fed to conflicts_add_job. */

#endif
