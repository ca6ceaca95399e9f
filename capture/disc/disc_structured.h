/*
 * disc_structured: a structured synthetic source of DiSC attention masks (docs/models.md,
 * "Structured synthetic masks"). It runs no DiT: it writes the DiscStep, DiscMask and
 * Summary records a real `capture disc` writes (docs/disc.md#trace-records), from a generator whose
 * structure is set by parameters, so replay, `analyze hash` and `analyze disc` run on it
 * unchanged at any N up to 2k (N = 16384) for sensitivity studies. Its traces are labelled
 * source = "synthetic-structured"; the parameters are in params_json and source_detail.
 *
 * The model of one mask (block b, head h; rows = query tokens, columns = key tokens on the
 * G x G token grid): row i keeps
 *   - its own column (the diagonal; a row is never empty, as ST's argmax rule ensures);
 *   - structural entries: every column j in the (2R+1)^2 window around token i with
 *     probability exp(-dist(i, j) / decay) (2-D spatial locality), and the head's `stripes`
 *     global key columns with probability stripe_keep (key-column stripes), scaled down
 *     together only when the head's density is below what they alone would give;
 *   - background entries: every other column with probability min(1, c m_i), m_i a
 *     log-normal row factor (sigma row_sigma) from a smooth field on the token grid (rows
 *     differ, neighbouring rows alike), c set so the expected density is the head's target.
 * Head targets: the L x H (block, head) pairs take densities D + W ((t + 0.5)/n - 0.5) for
 * a seeded permutation t of 0..n-1 (stratified draws of a uniform of centre D = density and
 * width W = spread), clipped to [1/N, 1].
 * Reuse: ST's cadence as in the capture (generate when k mod K_r = 0, else reuse). At each
 * generation every entry is re-drawn with probability q (else keeps its state), q solved per
 * head so the expected Jaccard between a row's consecutive generations is `jaccard`; where
 * even independent re-draws (q = 1) stay above it (dense heads) q = 1 and the result counts
 * the head as short. A row keeps the generation of the last generation step that computed
 * it, as stored ST rows do.
 * CTR: step 0 keeps every token; step k >= 1 prunes ceil(R N) tokens, those of lowest value
 * of a smooth random field on the token grid (seeded per step), so kept tokens cluster.
 *
 * Every draw comes from counter-based streams keyed by (seed, block, head, row, generation,
 * word or column), so a row is recomputed at any step without storing masks, and the bytes
 * are the same for any thread count. Masks are generated row by row straight into the
 * bit-packed row format (formats/bitset.h) and counted by formats/disc_hash as the capture
 * counts them; only kept masks (--keep-masks) are held whole, one at a time.
 *
 * Use through capture_disc_structured_ops (capture/capture.h): open takes a
 * const struct disc_struct_params * (copied); disc_struct_result reads the instance after
 * capture_run. The module never prints.
 */
#ifndef ACCELTRACE_DISC_STRUCTURED_H
#define ACCELTRACE_DISC_STRUCTURED_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/capture.h"
#include "capture/disc/dit.h"

/* The generator's parameters (docs/models.md "Structured synthetic masks" gives each
 * default and why). */
struct disc_struct_shape {
    int radius;         /* R, window half-width in tokens (default 4) */
    double decay;       /* tokens; locality probability exp(-dist / decay) (default 2) */
    int stripes;        /* global key columns per head (default 8) */
    double stripe_keep; /* probability a row keeps a stripe column (default 0.9) */
    double density;     /* centre D of the per-head density distribution (default 0.5) */
    double spread;      /* width W of that uniform distribution (default 1: 0..100%) */
    double row_sigma;   /* log-normal sigma of the per-row density factor (default 0.5) */
    int cluster;        /* box radius in tokens of the smooth fields (default 4) */
    double jaccard;     /* expected Jaccard of consecutive generations (default 0.8) */
};

struct disc_struct_params {
    char model[32];       /* a dit_config name (default tiny, as capture disc) */
    int image_size;       /* pixels; 0 = the config's default */
    int steps;            /* K; 0 = the config's default */
    int heads;            /* h; 0 = the config's (must divide the hidden width) */
    int blocks;           /* L blocks written; 0 = the config's depth */
    uint64_t seed;        /* every draw (default 0) */
    bool ctr_on;          /* CTR token pruning (default on) */
    char ctr_target[16];  /* R as given (default "0.40") */
    int st_refresh;       /* K_r (default 2) */
    char keep_masks[256]; /* --keep-masks selection (default "none") */
    int threads;          /* 0 = threads_default() */
    struct disc_struct_shape s;
};

/* The defaults above. */
void disc_struct_params_default(struct disc_struct_params *p);

/* What a run measured and predicted, for the CLI summary. */
struct disc_struct_result {
    int K, L, H, N;
    double mean_prune_ratio;       /* over k >= 1 */
    double sparsity;               /* pooled 1 - sum nnz / sum (rows N), as the capture's */
    double density_lo, density_hi; /* head targets (input) */
    double jaccard_mean;           /* predicted expected Jaccard, mean over heads */
    int jaccard_short;             /* heads whose set Jaccard is out of reach (q = 1) */
    uint64_t masks_written, masks_kept;
    double wall_s;
};

/* The ops of `capture disc --source structured`: workload "disc", not in the registry
 * (capture disc is the registry's disc). */
extern const struct capture_ops capture_disc_structured_ops;

/* The model shape of an open instance (depth = blocks, heads as set). */
const struct dit_config *disc_struct_config(const void *inst);

/* The result (after capture_run); owned by inst. */
const struct disc_struct_result *disc_struct_result(const void *inst);

#endif
