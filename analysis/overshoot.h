/*
 * overshoot: the overshoot of Salca's selected sets (docs/salca.md#figures plot 8): for every
 * SalcaSelect of method 0 (Salca), (|S| - K)/n, the share of the context the set holds
 * beyond its K, kept as a histogram in bins of 1/OVERSHOOT_BINS_PER_N of n (exact integer
 * arithmetic) with the count, the mean and the records above the paper's 0.19%.
 *
 * An analyzer of its own (analysis/analyzer.h): overshoot_analyzer feeds a handle from a
 * trace pass, beside the other analyzers of Salca traces; overshoot_write writes
 * overshoot.csv and the plot overshoot. The handle owns its memory; errors go into the
 * caller's struct errmsg; nothing prints.
 */
#ifndef ACCELTRACE_OVERSHOOT_H
#define ACCELTRACE_OVERSHOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"

#define OVERSHOOT_BINS_PER_N 2000 /* bin width 1/2000 of n = 0.05% [decision] */

struct overshoot;
struct analyzer;

/* A new, empty handle; free with overshoot_free. 0 or ERR_NOMEM with e set. */
int overshoot_new(struct overshoot **out, struct errmsg *e);
/* Releases o (NULL is a no-op). */
void overshoot_free(struct overshoot *o);

/*
 * Adds one SalcaSelect (records of other methods are ignored). ERR_DATA with e set when
 * |S| is outside [K, n_ctx] (step, layer and head named), ERR_NOMEM.
 */
int overshoot_add(struct overshoot *o, const Acceltrace__SalcaSelect *s, struct errmsg *e);

/*
 * The statistics so far. bins[b] counts records with floor((|S| - K)·OVERSHOOT_BINS_PER_N
 * / n) = b; n_bins is one past the last non-empty bin. bins points into the handle (NULL
 * when n_bins = 0) and stays valid until the next overshoot_add or overshoot_free.
 */
struct overshoot_stats {
    uint64_t records;
    double mean;          /* mean (|S| - K)/n, a fraction of n */
    uint64_t above_paper; /* records with (|S| - K)/n > 0.19% (the paper's set growth) */
    size_t n_bins;
    const uint64_t *bins;
};
void overshoot_stats(const struct overshoot *o, struct overshoot_stats *st);

/*
 * Writes overshoot.csv (bin edges in % of n, records, fraction) and the histogram plot
 * overshoot into dir (created if missing); nothing when no record was added. *rendered
 * (may be NULL) becomes false when gnuplot made no image. 0 or <0 with e set.
 */
int overshoot_write(struct overshoot *o, const char *dir, bool *rendered, struct errmsg *e);

/*
 * The analyzer of a trace pass over o (o not owned; no free hook): begin refuses a trace
 * of another workload (ERR_DATA), record adds its SalcaSelect records (an error names the
 * file and record number), finish writes into dir (overshoot_write; nothing when dir is
 * NULL) and clears *rendered (may be NULL) when gnuplot made no image.
 */
void overshoot_analyzer(struct overshoot *o, const char *dir, bool *rendered, struct analyzer *out);

#endif
