/*
 * disc_ctr: CTR token selection (docs/disc.md#ctr-selection): per-token latent change, the
 * threshold tau for a pruning target, the kept set, and the DiscStep difference statistics. Latents
 * are FP32 (C_in, H, W); token i = gy*G + gx covers a p x p patch of every channel.
 */
#ifndef ACCELTRACE_DISC_CTR_H
#define ACCELTRACE_DISC_CTR_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/*
 * Parses a pruning target R: one digit, optionally a point and 1 to 9 digits, 0 <= R <= 1
 * (docs/disc.md#ctr-selection). R = *num / 10^*frac_digits exactly. ERR_USAGE (message in e)
 * otherwise.
 */
int disc_ctr_parse_target(const char *s, uint64_t *num, int *frac_digits, struct errmsg *e);

/* n_prune = ceil(num * N / 10^frac_digits) in 64-bit integers. */
uint64_t disc_ctr_n_prune(uint64_t num, int frac_digits, uint64_t n_tokens);

/*
 * Per-token maxima d_i of |x_k - x_prev| (FP32) over each token's p*p*C_in elements,
 * for a (c_in, lat, lat) latent; d has (lat/p)^2 entries.
 */
void disc_ctr_token_max(const float *xk, const float *xprev, int c_in, int lat, int p, float *d);

/*
 * The smallest FP32 tau >= 0 with #{i : d_i < tau} >= n_prune, by bisection on the float
 * bit pattern over [0, nextafterf(max d_i, +inf)] (32 steps, exact). n_prune = 0 gives 0.
 * d_i must be >= 0 and finite.
 */
float disc_ctr_tau_for_prune(const float *d, size_t n, uint64_t n_prune);

/*
 * keep_i = (d_i >= tau). Writes ascending kept indices to kept (n entries room) and the
 * token bitset (ceil(n/64) words, LSB-first) to mask when not NULL. Returns N_k.
 */
int disc_ctr_select(const float *d, size_t n, float tau, int32_t *kept, uint64_t *mask);

/* DiscStep difference statistics: mean, rms and max of |x_k - x_prev| over n elements,
 * summed in element order in double. */
void disc_ctr_diff_stats(const float *xk, const float *xprev, size_t n, double *mean, double *rms,
                         double *max);

/* The ceil(q*N/100)-th smallest of d (1-based; q in 1..100), integer arithmetic.
 * sorted must hold d sorted ascending. */
float disc_ctr_quantile(const float *sorted, size_t n, unsigned q);

#endif
