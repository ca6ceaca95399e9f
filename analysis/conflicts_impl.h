/*
 * conflicts_impl: the state shared by the files of the conflicts analyzer (analysis/
 * conflicts.h is its public contract): conflicts_pc.c (PC conflicts: policies, jobs, the
 * timing mode, the trace feed), conflicts_pc_out.c (their tables and plots, and
 * conflicts_write), conflicts_select.c (selection quality and overshoot) and
 * conflicts_heavy.c (heavy-channel stability). Not for use outside these files.
 */
#ifndef ACCELTRACE_CONFLICTS_IMPL_H
#define ACCELTRACE_CONFLICTS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/conflicts.h"
#include "analysis/plot.h"
#include "formats/csv.h"

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

/* Quality of one (group, method, rho): values kept for the 5th percentiles. */
struct qual {
    char group[64], method[32], rho[24];
    size_t n, cap;
    double *recall, *cosine;
    double ret_sum;
};

/* Heavy-channel stability of one (layer, prefix length m). */
struct stab {
    uint32_t l, m;
    uint64_t n, n_mass;
    double jsum, jmin;
    double msum; /* share of the final set's S mass the prefix set holds (n_mass sets) */
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
    struct errmsg err;
    struct qual *qual;
    size_t n_qual, cap_qual;
    struct job_row *jobs; /* per-job rows (opts.per_job) */
    uint64_t *job_slots;  /* (n_jobs, n_pol) slots of each policy */
    size_t n_jobs, cap_jobs;
    char rho[24];
    char method_names[64][32]; /* by method id < 64, from the trace header */
    struct stab *stab;         /* sorted by (l, m) */
    size_t n_stab, cap_stab;
    uint64_t prefills, prefills_bare; /* SalcaPrefill records; those without the ladder */
    uint64_t *over;                   /* (CONFLICTS_OVER_BINS_PER_N + 1) Salca overshoot bins */
    size_t over_bins;                 /* one past the last non-empty bin */
    uint64_t over_n, over_above;
    double over_sum;
    struct tim *tim; /* timing mode state (opts.timing), else NULL */
    struct tim *cmp; /* per preset (opts.compare_presets), n_cmp entries, else NULL */
    size_t n_cmp;
    struct selstruct *ss; /* selection structure per head class (conflicts_select.c) */
};

/* ---- shared by the files (conflicts_pc_out.c) ---- */

/* Opens DIR/NAME for a CSV table; 0 or ERR_IO/ERR_NOMEM with c->err set. */
int conflicts_csv_open(struct conflicts *c, const char *dir, const char *name,
                       struct csv_writer **w);
/* Closes a table of conflicts_csv_open: 0, or ERR_IO with c->err set when any write
 * failed. */
int conflicts_csv_close(struct conflicts *c, struct csv_writer *w, const char *dir,
                        const char *name);
/* Writes and frees plot p; *rendered false when gnuplot made no PNG. 0 or <0 (c->err). */
int conflicts_plot_done(struct conflicts *c, struct plot *p, const char *dir, bool *rendered);

/* ---- selection quality and overshoot (conflicts_select.c) ---- */

/* Quality and overshoot of one SalcaSelect (every method; overshoot of Salca's). */
int conflicts_select_add(struct conflicts *c, const char *group, const Acceltrace__SalcaSelect *s);
/* recall_vs_retention.csv and cosine_vs_retention.csv (with quality rows). */
int conflicts_write_quality(struct conflicts *c, const char *dir);
/* Their two plots. */
int conflicts_write_quality_plots(struct conflicts *c, const char *dir, bool *rendered);
/* Frees the selection-structure state (conflicts_free). */
void conflicts_select_release(struct conflicts *c);
/* overshoot.csv and its plot (with Salca selections). */
int conflicts_write_overshoot(struct conflicts *c, const char *dir, bool *rendered);

/* ---- heavy-channel stability (conflicts_heavy.c) ---- */

/* heavy_stability.csv and its plot (with stability rows). */
int conflicts_write_stability(struct conflicts *c, const char *dir, bool *rendered);

#endif
