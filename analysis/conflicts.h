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
 * conflicts_write writes CSV tables (through formats/csv) and the plots 1-3 of
 * docs/salca.md#figures into a folder. conflicts_analyzer feeds a handle from a trace pass
 * (analysis/analyzer.h); the other analyses of the same traces are analyzers of their own
 * that share the pass: select_quality.h (recall and cosine of every method, selection
 * structure), heavy_stability.h (heavy-channel stability of the prefill) and overshoot.h
 * (Salca's set overshoot). The handle owns its memory; errors go into the caller's struct
 * errmsg; nothing prints. Code: conflicts_pc.c (policies, jobs, timing mode, the
 * analyzer), conflicts_pc_out.c (tables and plots, conflicts_write); shared state in
 * conflicts_impl.h.
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
 * ascending token indices idx[0..n). 0, or with e set ERR_NOMEM, ERR_LIMIT (too many
 * groups or layers).
 */
int conflicts_add_job(struct conflicts *c, const char *group, uint32_t l, uint32_t h,
                      const uint32_t *idx, size_t n, struct errmsg *e);

/*
 * Adds a SalcaSelect record (ignored when its method is not opts.method or its step is
 * outside opts.steps): decodes it (bounded by n_ctx and count) and calls conflicts_add_job.
 * ERR_DATA/ERR_LIMIT with e set for a malformed list, else as conflicts_add_job.
 */
int conflicts_add_select(struct conflicts *c, const char *group, const Acceltrace__SalcaSelect *s,
                         struct errmsg *e);

/*
 * The analyzer of a trace pass over c (analysis/analyzer.h; c not owned, no free hook):
 * begin refuses a trace of another workload (ERR_DATA); record adds its SalcaSelect records
 * (conflicts_add_select) under the group trace_salca_group(header, group_mode, path), an
 * error naming the file and record number; finish writes into dir (conflicts_write;
 * nothing when dir is NULL) and clears *rendered (may be NULL) when gnuplot made no image.
 * The caller checks the totals between the last trace and analyzer_finish (an empty
 * analysis is its error to report). group_mode must outlive the analyzer.
 */
struct analyzer;
void conflicts_analyzer(struct conflicts *c, const char *group_mode, const char *dir,
                        bool *rendered, struct analyzer *out);

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
 * conflict_per_batch, alpha_vs_window (.dat/.gp/.png through analysis/plot).
 * With opts.timing also hbm_time.csv (policy, depth, window, jobs, tokens, ideal_cycles,
 * cycles, time_over_ideal, alpha, row_hits, row_misses); with opts.compare_presets also
 * hbm_presets.csv (preset, then the same columns) and the plot hbm_presets_vs_window (alpha
 * and time over ideal against the window W, a series per preset, two panels).
 * *rendered (may be NULL) tells whether gnuplot made the PNGs. 0 or ERR_IO/ERR_NOMEM/
 * ERR_EXTERNAL with e set.
 */
int conflicts_write(struct conflicts *c, const char *dir, bool *rendered, struct errmsg *e);

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

/* Synthetic selections (`analyze conflicts --synthetic`, tests, benchmarks) come from
 * the generator of replay/salca_model.h (salca_synth_selection, enum salca_synth_kind),
 * fed to conflicts_add_job. */

#endif
