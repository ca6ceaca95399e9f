/*
 * disc_hash: the DiSC key-index hashes and the one-pass load-balance statistics of an ST
 * attention mask (docs/disc.md#load-balance-analyzer; paper Fig. 15).
 *
 * Hashes of a key column j in [0, n_cols) onto U = 2^b units (DPUs or SIMDs), b >= 1:
 *   mod   = j & (U - 1)
 *   mul   = ((uint32)(j * k_odd)) >> (32 - b)        k_odd = 0x9E3779B1 by default
 *   range = floor(j * U / n_cols)                     (64-bit arithmetic)
 * One pass per row: every set bit (found with count-trailing-zeros) increments one counter
 * of each hash at the largest requested U; the counts of U/2 fold from those of U (mul and
 * range: bucket v -> v >> 1; mod: v -> v & (U/2 - 1)), so every requested U is served by
 * the same pass. Per row and (hash, U): mu = nnz/U, sigma = sqrt(sum_v (c_v - mu)^2 / U)
 * (population std-dev, double, v ascending) and max = max_v c_v. Per mask the statistics
 * are summed over rows in ascending row order (so results never depend on thread count),
 * overall and per row-sparsity bin min(19, floor(20 (n_cols - nnz_r) / n_cols)) computed in
 * integers.
 *
 * This module sits in formats/ because capture fills the DiscMask lb_* fields with it and
 * replay/analysis recompute them from kept masks: both must agree bit for bit.
 *
 * Rows are raw arrays of 64-bit words, LSB-first (formats/bitset.h layout); padding bits
 * beyond n_cols must be zero. struct disc_lb is immutable after disc_lb_new and may be
 * shared by threads; each thread needs its own scratch (disc_lb_scratch_len words).
 */
#ifndef ACCELTRACE_DISC_HASH_H
#define ACCELTRACE_DISC_HASH_H

#include <stddef.h>
#include <stdint.h>

struct thread_pool;

/* Knuth's multiplicative constant, docs/disc.md#load-balance-analyzer */
#define DISC_HASH_K_ODD 0x9E3779B1u

enum disc_hash_kind {
    DISC_HASH_MOD = 0,
    DISC_HASH_MUL = 1,
    DISC_HASH_RANGE = 2,
};
#define DISC_HASH_KINDS 3

#define DISC_LB_BINS 20      /* row / matrix sparsity bins of width 5% */
#define DISC_LB_MAX_UNITS 16 /* longest unit list */
#define DISC_LB_MAX_BITS 16  /* U <= 65536 */
#define DISC_LB_MAX_COLS (1u << 24)
#define DISC_LB_STD_UNITS 5 /* the trace's unit set: U = 8, 16, 32, 64, 128 (b = 3..7) */
#define DISC_LB_STD_BMIN 3

/* Bucket of column j under each hash for U = 2^b (b in 1..32; n_cols > 0 for range). */
uint32_t disc_hash_mod(uint64_t j, unsigned b);
uint32_t disc_hash_mul(uint64_t j, unsigned b, uint32_t k_odd);
uint32_t disc_hash_range(uint64_t j, unsigned b, uint64_t n_cols);
/* Dispatch on kind (enum disc_hash_kind). */
uint32_t disc_hash_apply(int kind, uint64_t j, unsigned b, uint64_t n_cols, uint32_t k_odd);

/* "mod", "mul", "range"; "?" for anything else. */
const char *disc_hash_name(int kind);
/* Kind from its name; -1 when unknown. */
int disc_hash_from_name(const char *name);

/*
 * Sparsity bin of `zeros` empty entries out of `total` (total > 0):
 * min(19, floor(20 zeros / total)) in integers. A row's bin is disc_lb_bin(n_cols - nnz,
 * n_cols); a mask's is disc_lb_bin(rows n_cols - nnz, rows n_cols). -1 when total is 0.
 */
int disc_lb_bin(uint64_t zeros, uint64_t total);

/* The counting context: column count, k_odd and the list of unit exponents b. */
struct disc_lb;

/*
 * New context for rows of n_cols columns (1 <= n_cols <= DISC_LB_MAX_COLS), multiplicative
 * constant k_odd (odd) and the unit list U = 2^bits[i], i < n_units (1 <= n_units <=
 * DISC_LB_MAX_UNITS, each b in 1..DISC_LB_MAX_BITS, no duplicates). Statistics are indexed
 * by hash and position in that list. 0, ERR_USAGE (bad list/constant), ERR_LIMIT, ERR_NOMEM.
 * Caller frees with disc_lb_free.
 */
int disc_lb_new(struct disc_lb **out, uint64_t n_cols, uint32_t k_odd, const unsigned *bits,
                int n_units);
/* The standard set of the trace (U = 8..128), as DiscHeader lists it. */
int disc_lb_new_std(struct disc_lb **out, uint64_t n_cols, uint32_t k_odd);
void disc_lb_free(struct disc_lb *lb);

uint64_t disc_lb_n_cols(const struct disc_lb *lb);
int disc_lb_n_units(const struct disc_lb *lb);
unsigned disc_lb_unit_bits(const struct disc_lb *lb, int i);
/* Largest b of the list: counters have 2^b_max buckets per hash. */
unsigned disc_lb_bmax(const struct disc_lb *lb);
/* uint32 words of scratch one row needs: 3 * 2^b_max. */
size_t disc_lb_scratch_len(const struct disc_lb *lb);

/*
 * Counts the set bits of one row (words_per_row = ceil(n_cols/64) words) at U = 2^b_max:
 * counts[h * 2^b_max + v] for hash h and bucket v. counts must have disc_lb_scratch_len
 * words; it is overwritten. Returns the row's nnz.
 */
uint64_t disc_lb_count_row(const struct disc_lb *lb, const uint64_t *row, uint32_t *counts);

/* Statistics of one row for every hash and listed U. */
struct disc_lb_rowstat {
    uint64_t nnz;
    int bin;                                          /* row-sparsity bin */
    double sigma[DISC_HASH_KINDS][DISC_LB_MAX_UNITS]; /* population std-dev, units */
    uint32_t max[DISC_HASH_KINDS][DISC_LB_MAX_UNITS]; /* most loaded unit's count */
};

/* Counts one row and fills *out; scratch as for disc_lb_count_row. */
void disc_lb_row(const struct disc_lb *lb, const uint64_t *row, uint32_t *scratch,
                 struct disc_lb_rowstat *out);

/* Per-mask sums (DiscMask lb_* and bin_* fields), for n_units units. */
struct disc_lb_acc {
    int n_units;
    uint64_t rows; /* computed rows summed */
    uint64_t nnz;
    double std_sum[DISC_HASH_KINDS][DISC_LB_MAX_UNITS]; /* sum of per-row sigma */
    uint64_t max_sum[DISC_HASH_KINDS][DISC_LB_MAX_UNITS];
    uint32_t bin_rows[DISC_LB_BINS];
    uint64_t bin_nnz[DISC_LB_BINS];
    double bin_std[DISC_LB_BINS][DISC_HASH_KINDS][DISC_LB_MAX_UNITS];
    uint64_t bin_max[DISC_LB_BINS][DISC_HASH_KINDS][DISC_LB_MAX_UNITS];
};

/* Zeroes acc for lb's unit list. */
void disc_lb_acc_init(struct disc_lb_acc *acc, const struct disc_lb *lb);
/* Adds one row (call in ascending row order for reproducible sums). */
void disc_lb_acc_add(struct disc_lb_acc *acc, const struct disc_lb_rowstat *r);

/*
 * Accumulates a whole mask into acc (not reset here): rows 0..n_rows-1 of `bits`
 * (words_per_row words each, at least ceil(n_cols/64)) whose bit is set in row_filter
 * (a bitset of n_rows bits; NULL = every row). Rows are counted in parallel on pool (NULL
 * or 1 thread = the caller) and summed in ascending row order, so the result is identical
 * for any thread count. 0 or ERR_NOMEM.
 */
int disc_lb_mask(const struct disc_lb *lb, const uint64_t *bits, uint32_t n_rows,
                 size_t words_per_row, const uint64_t *row_filter, struct thread_pool *pool,
                 struct disc_lb_acc *acc);

/* Mean std = std_sum / rows (NaN when rows = 0) and imbalance = U max_sum / nnz (NaN when
 * nnz = 0) of hash h and unit index i. */
double disc_lb_acc_mean_std(const struct disc_lb_acc *acc, int h, int i);
double disc_lb_acc_imbalance(const struct disc_lb_acc *acc, const struct disc_lb *lb, int h, int i);

#endif
