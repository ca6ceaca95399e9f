/*
 * hash_lb: the DiSC hash load-balance analyzer (paper Fig. 15; docs/disc.md).
 *
 * Streams the DiscStep and DiscMask records of a trace in record order. For each mask it
 * takes the per-mask statistics (sum over computed rows of the per-row std-dev and max of
 * nonzeros per unit, overall and per row-sparsity bin) for the three hashes and the
 * requested unit counts U: from the recorded lb_* fields when every requested U and the
 * multiplicative constant are in the trace's recorded set, otherwise recounted from the
 * kept bits with formats/disc_hash (the same code capture uses). Masks with neither are
 * skipped and counted. Masks are pooled in record order into matrix-sparsity bins
 * (min(19, floor(20 (rows N - nnz) / (rows N))), integers) and row-sparsity bins:
 *   mean_std = sum sum sigma / sum rows,  imbalance = U sum sum max / sum nnz,
 * skipping masks with rows = 0. Results do not depend on the thread count.
 *
 * Outputs (hash_lb_write): hash_matrix.csv, hash_row.csv, hash_masks.csv (written while
 * streaming when an output folder is given) and the plots hash_std_vs_sparsity,
 * hash_std_vs_row_sparsity and hash_imbalance through analysis/plot.h.
 *
 * Ownership: struct hash_lb is opaque; free with hash_lb_free. Records stay the caller's.
 */
#ifndef ACCELTRACE_HASH_LB_H
#define ACCELTRACE_HASH_LB_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/analyzer.h"
#include "common/err.h"
#include "formats/disc_hash.h"
#include "formats/trace.pb-c.h"

struct hash_lb_opts {
    unsigned bits[DISC_LB_MAX_UNITS]; /* U = 2^bits[i] */
    int n_units;
    uint32_t k_odd; /* multiplicative constant (odd) */
    int threads;    /* >= 1; rows of recounted masks split over them */
};

/* U = 8, 16, 32, 64, k_odd = 0x9E3779B1, 1 thread. */
void hash_lb_opts_default(struct hash_lb_opts *o);

/*
 * Parses a unit list "8,16,32,64" (powers of two >= 2, at most DISC_LB_MAX_UNITS, no
 * duplicates, U <= 2^DISC_LB_MAX_BITS) into o. 0 or ERR_USAGE with e set.
 */
int hash_lb_parse_units(struct hash_lb_opts *o, const char *list, struct errmsg *e);

/* Pooled sums of one sparsity bin. */
struct hash_lb_pool {
    uint64_t masks; /* masks in the bin (matrix bins only) */
    uint64_t rows, nnz;
    double std_sum[DISC_HASH_KINDS][DISC_LB_MAX_UNITS];
    uint64_t max_sum[DISC_HASH_KINDS][DISC_LB_MAX_UNITS];
};

struct hash_lb;

/*
 * New analyzer for a trace with header hdr (its disc part is required: ERR_DATA otherwise).
 * out_dir, when not NULL, receives hash_masks.csv while streaming. 0 or negative with e set.
 */
int hash_lb_new(struct hash_lb **out, const struct hash_lb_opts *o,
                const Acceltrace__TraceHeader *hdr, const char *out_dir, struct errmsg *e);
void hash_lb_free(struct hash_lb *a);

/* One record in trace order (types other than DiscStep/DiscMask are ignored). 0 or <0. */
int hash_lb_record(struct hash_lb *a, const Acceltrace__Record *rec, struct errmsg *e);
/* End of the trace: resolves buffered masks and closes hash_masks.csv. 0 or <0; ERR_DATA
 * when the trace had no masks or no mask could be pooled (neither recorded statistics for
 * the requested U and k_odd nor kept bits), naming what the trace records. */
int hash_lb_finish(struct hash_lb *a, struct errmsg *e);

/* Writes hash_matrix.csv, hash_row.csv and (plots) the three PNG plots into dir.
 * *rendered (may be NULL) is false when gnuplot was missing. 0 or negative with e set. */
int hash_lb_write(const struct hash_lb *a, const char *dir, bool plots, bool *rendered,
                  struct errmsg *e);

/*
 * The analyzer form (analysis/analyzer.h) of one run, to share a pass with other analyzers:
 * fill o, dir, plots and rendered, leave a NULL. begin makes the hash_lb of the trace
 * (hash_lb_new), record and end stream it, finish writes into dir (nothing when dir is
 * NULL); messages name the trace. The caller frees a with hash_lb_free after the run. One
 * trace per pass state.
 */
struct hash_lb_pass {
    const struct hash_lb_opts *o;
    const char *dir;
    bool plots, *rendered;
    struct hash_lb *a; /* the trace's analyzer after begin; the caller's to free */
};
extern const struct analyzer_ops hash_lb_pass_ops;

/* Whole run over a trace file: open, stream, finish, write. *out (may be NULL) keeps the
 * analyzer for inspection (caller frees). 0 or negative with e set. */
int hash_lb_run_file(const char *trace_path, const struct hash_lb_opts *o, const char *dir,
                     bool plots, bool *rendered, struct hash_lb **out, struct errmsg *e);

/* Inspection (bins 0..19). */
const struct hash_lb_pool *hash_lb_matrix_bin(const struct hash_lb *a, int bin);
const struct hash_lb_pool *hash_lb_row_bin(const struct hash_lb *a, int bin);
uint64_t hash_lb_masks_seen(const struct hash_lb *a);
uint64_t hash_lb_masks_recounted(const struct hash_lb *a);
uint64_t hash_lb_masks_skipped(const struct hash_lb *a);
const struct hash_lb_opts *hash_lb_options(const struct hash_lb *a);

#endif
