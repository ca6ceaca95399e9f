/*
 * conflicts: the HBM channel-conflict analyzer of Salca traces (specs/salca.md sections 11
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
 * conflicts_write writes CSV tables and the section 12 plots 1-3 into a folder.
 * The handle owns its memory and keeps an error message; nothing prints.
 */
#ifndef ACCELTRACE_CONFLICTS_H
#define ACCELTRACE_CONFLICTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"
#include "replay/hbm_pc.h"

#define CONFLICTS_MAX_WINDOWS 16
#define CONFLICTS_MAX_DEPTHS 8
#define CONFLICTS_MAX_GROUPS 32
#define CONFLICTS_MAX_LAYERS 4096
#define CONFLICTS_OCC_BINS 65       /* occupancy 0..63 and >= 64 */
#define CONFLICTS_MAX_CTX (1u << 26) /* n_ctx bound for records read from traces */

struct conflicts_opts {
    struct hbm_pc_mapping map;   /* kind, h_att (--pcs), hash seed */
    uint32_t att_base;           /* first attention PC (reports only) */
    uint32_t p_iss;              /* issue width per slot; 0 = h_att */
    size_t n_windows;
    uint32_t windows[CONFLICTS_MAX_WINDOWS]; /* reorder windows; 0 = in-order (depths[0]) */
    size_t n_depths;
    uint32_t depths[CONFLICTS_MAX_DEPTHS];   /* in-order FIFO depths D_f */
    int32_t method;              /* SalcaSelect.method to analyze; -1 = every method */
    bool per_job;                /* also write alpha_jobs.csv (one row per job) */
};

/* Defaults: mod map, 16 PCs, att_base 16, p_iss = h_att, windows 0,16,32,64,128,256,
 * depths 1,2,4, method 0 (salca), seed 0. */
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
    uint64_t tokens;    /* selected indices */
    uint64_t ideal;     /* sum of ceil(N_sel/h_att) */
    uint64_t max_load;  /* sum of per-job max per-PC load */
    uint64_t slots;     /* sum of slots of the policy */
    double alpha;       /* slots/ideal (0 when ideal = 0) */
    double bound;       /* max_load/ideal */
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
 * *rendered tells whether gnuplot made the PNGs. 0 or ERR_IO/ERR_NOMEM/ERR_EXTERNAL.
 */
int conflicts_write(struct conflicts *c, const char *dir, bool *rendered);

const char *conflicts_errmsg(const struct conflicts *c);

/* ---- synthetic selections (tests, benchmarks, `analyze conflicts --synthetic`) ---- */

enum conflicts_synth_kind {
    CONFLICTS_SYNTH_UNIFORM = 0,   /* K distinct indices uniformly at random */
    CONFLICTS_SYNTH_CLUSTERED = 1, /* runs of pooled width around random peaks */
    CONFLICTS_SYNTH_NEEDLE = 2,    /* sinks + recent window + a few long spans + scatter */
};

/* "uniform" | "clustered" | "needle"; 0 or ERR_USAGE. */
int conflicts_synth_parse(const char *s, enum conflicts_synth_kind *out);

/*
 * Writes a sorted selection of about k = ceil(retention·n) indices out of [0, n) into idx
 * (capacity n) and returns its size in *count. Deterministic in (seed, a, b). Clustered:
 * peaks drawn uniformly, each selecting [peak - 2, peak + 2] (the +-floor(5/2) reach of
 * the default max-pool width, spec 5.6), until k indices are covered; plus the 4 sink
 * tokens and the last 16 tokens. Needle: 4 sinks, the last 64 tokens, two spans of 64 and
 * clustered peaks for the rest. 0 or ERR_USAGE (n = 0 or retention outside (0, 1]).
 */
int conflicts_synth(enum conflicts_synth_kind kind, uint32_t n, double retention, uint64_t seed,
                    uint64_t a, uint64_t b, uint32_t *idx, size_t *count);

#endif
