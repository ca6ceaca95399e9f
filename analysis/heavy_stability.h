/*
 * heavy_stability: the heavy-channel stability of Salca's prefill (docs/salca.md#figures
 * plot 7): per layer and prefix length m, how well the top-r channel set found on the first
 * m prefill keys (SalcaPrefill.prefix_heavy) matches the final set I_g (heavy), as the
 * Jaccard overlap and the share of the final set's channel magnitude the prefix set keeps,
 * averaged over the (trace, KV head) sets.
 *
 * An analyzer of its own (analysis/analyzer.h): heavy_stability_analyzer feeds a handle
 * from a trace pass, beside the other analyzers of Salca traces; heavy_stability_write
 * writes heavy_stability.csv and its plot. The handle owns its memory; errors go into the
 * caller's struct errmsg; nothing prints.
 */
#ifndef ACCELTRACE_HEAVY_STABILITY_H
#define ACCELTRACE_HEAVY_STABILITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"

#define HEAVY_STABILITY_MAX_PREFIX 64   /* ladder entries accepted per SalcaPrefill */
#define HEAVY_STABILITY_MAX_ROWS 65536  /* distinct (layer, prefix length) rows */
#define HEAVY_STABILITY_MAX_LAYERS 4096 /* layer index bound, as the conflict analyzer's */

struct heavy_stability;
struct analyzer;

/* A new, empty handle; free with heavy_stability_free. 0 or ERR_NOMEM with e set. */
int heavy_stability_new(struct heavy_stability **out, struct errmsg *e);
/* Releases h (NULL is a no-op). */
void heavy_stability_free(struct heavy_stability *h);

/* Jaccard overlap |A and B| / |A or B| of two sets of channel indices (duplicates count
 * once); 1 when both are empty. */
double heavy_stability_jaccard(const uint8_t *a, size_t na, const uint8_t *b, size_t nb);

/*
 * Adds a SalcaPrefill record: for each prefix length m of its ladder (prefix_len), the
 * Jaccard overlap of that prefix's top-r set with the final set `heavy` joins the mean of
 * (layer l, m). A record without the ladder (traces written before it existed) is only
 * counted. 0, or with e set ERR_DATA for inconsistent fields (layer and KV head named),
 * ERR_LIMIT, ERR_NOMEM.
 */
int heavy_stability_add(struct heavy_stability *h, const Acceltrace__SalcaPrefill *p,
                        struct errmsg *e);

/* One row: the mean over the (trace, KV head) sets of layer `layer`. */
struct heavy_stability_row {
    uint32_t layer;
    uint32_t prefix_len; /* m, prefill tokens the prefix set was found on */
    uint64_t sets;       /* (trace, KV head) sets averaged */
    double jaccard_mean, jaccard_min;
    /* mean over the sets of sum_{j in prefix set} S_j / sum_{j in I_g} S_j with the final
     * chan_sum S (how much of I_g's magnitude the prefix set keeps); -1 without chan_sum */
    double mass_kept_mean;
};

/* Rows kept so far, ordered by (layer, prefix_len); row i into *s (ERR_USAGE past the end). */
size_t heavy_stability_n_rows(const struct heavy_stability *h);
int heavy_stability_row(const struct heavy_stability *h, size_t i, struct heavy_stability_row *s);
/* SalcaPrefill records added; *without_ladder (may be NULL) gets those lacking the ladder. */
uint64_t heavy_stability_prefills(const struct heavy_stability *h, uint64_t *without_ladder);

/*
 * Writes heavy_stability.csv (layer, prefix length, sets, Jaccard mean and minimum, S mass
 * kept) and the plot heavy_stability into dir (created if missing); nothing without rows.
 * *rendered (may be NULL) becomes false when gnuplot made no image. 0 or <0 with e set.
 */
int heavy_stability_write(struct heavy_stability *h, const char *dir, bool *rendered,
                          struct errmsg *e);

/*
 * The analyzer of a trace pass over h (h not owned; no free hook): begin refuses a trace
 * of another workload (ERR_DATA), record adds its SalcaPrefill records (an error names the
 * file and record number), finish writes into dir (heavy_stability_write; nothing when dir
 * is NULL) and clears *rendered (may be NULL) when gnuplot made no image.
 */
void heavy_stability_analyzer(struct heavy_stability *h, const char *dir, bool *rendered,
                              struct analyzer *out);

#endif
