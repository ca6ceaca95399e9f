/*
 * conflicts_impl: the state shared by the two files of the conflict analyzer (analysis/
 * conflicts.h is its public contract): conflicts_pc.c (policies, jobs, the timing mode,
 * the trace pass) and conflicts_pc_out.c (the tables and plots, conflicts_write). Not for
 * use outside these files.
 */
#ifndef ACCELTRACE_CONFLICTS_IMPL_H
#define ACCELTRACE_CONFLICTS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/conflicts.h"

#define MAX_POL (1 + CONFLICTS_MAX_DEPTHS + CONFLICTS_MAX_WINDOWS)
#define MAX_P_ISS 4096

struct pol {
    struct hbm_pc_policy_cfg cfg;
    char name[32];
    uint64_t occ[CONFLICTS_OCC_BINS];
};

struct grp {
    char name[64];
    uint64_t jobs, nonempty, tokens, ideal, max_load;
    uint64_t slots[MAX_POL];
    double ajob_sum[MAX_POL], ajob_max[MAX_POL];
};

struct layer_acc {
    uint64_t jobs, ideal, max_load;
    uint64_t slots[MAX_POL];
};

/* One job of the per-job table (opts.per_job); its slots follow in job_slots. */
struct job_row {
    size_t g;  /* group index */
    int64_t t; /* decode step, -1 for a job without one */
    uint32_t l, h;
    uint64_t n, ideal, max_load;
};

/* Timing mode: per policy totals and the running time base (refresh phase). */
struct tim {
    struct hbm_timing_cfg cfg;
    struct hbm_timing_work work;
    uint32_t *seq; /* 0..cap-1: the perfectly spread job */
    uint16_t *seq_pc;
    size_t cap;
    struct conflicts_timing acc[MAX_POL];
    uint64_t t0[MAX_POL], t0_spread[MAX_POL];
};

struct conflicts {
    struct conflicts_opts o;
    size_t n_pol;
    struct pol pol[MAX_POL];
    size_t n_grp;
    struct grp grp[CONFLICTS_MAX_GROUPS];
    size_t n_layers;
    struct layer_acc *layers;
    bool map_ok[3];
    uint64_t *conf[3]; /* conflicts per batch, p_iss bins, per map */
    struct hbm_pc_work work;
    uint16_t *pc, *pc2;
    uint32_t *idx;
    size_t cap, idx_cap;
    struct job_row *jobs; /* per-job rows (opts.per_job) */
    uint64_t *job_slots;  /* (n_jobs, n_pol) slots of each policy */
    size_t n_jobs, cap_jobs;
    struct tim *tim; /* timing mode state (opts.timing), else NULL */
    struct tim *cmp; /* per preset (opts.compare_presets), n_cmp entries, else NULL */
    size_t n_cmp;
    /* the analyzer form (conflicts_analyzer) */
    const char *group_mode;
    const char *group; /* of the current trace (set by begin) */
    const char *dir;
    bool *rendered;
};

#endif
