/*
 * kura_fixed: the bit-exact fixed-point Kuramoto drift of SA-Kura (docs/kura.md#fixed-point-drift)
 * and its float64 direct-sum reference. This is the ONE implementation shared by the
 * Kuramoto capture (which drives the sampler with it and records its error) and the
 * SA-Kura replay (whose cycle-accurate array must reproduce it bit for bit).
 *
 * Numbers:
 *   - phase q: int16 Q1.15, theta_q = q*pi/2^15 (LSB 9.59e-5 rad); sums wrap mod 2^16.
 *   - sin_q, cos_q: int32 in [-32767, 32767], LSB 2^-15, from a 4097-entry quarter-wave
 *     LUT (L[4096] = 32767 is the guard) with 2-bit linear interpolation.
 *   - S, C: int32 sums of sin_q, cos_q over the 24 non-centre offsets of the 5x5 window.
 *   - u_raw = cos_q(q_p)*S - sin_q(q_p)*C: int64, LSB 2^-30.
 *   - u_q = (u_raw + 2^14) >> 15: int32, LSB 2^-15 (the value the array drains).
 *   - registers G, R_s, R_c: int32 per step; d: int32 drift in units of pi*2^-31 rad.
 * ">> k" is floor division by 2^k (kura_shr_floor), portable for negative values.
 * Maps are row-major (H rows, W columns) with periodic indexing (r mod H, c mod W).
 * Nothing here allocates except kura_fixed_drift_map's scratch, nothing prints.
 */
#ifndef ACCELTRACE_KURA_FIXED_H
#define ACCELTRACE_KURA_FIXED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hot.h"

struct thread_pool;

/*
 * KURA_HOT marks the drift's hot loops (kura_fixed.c, capture/kura/kura_drift.c): the clones
 * of common/hot.h, so the default -O2 build vectorizes them too (3-4x faster). The clones
 * compute the same bits: integer code, and no FMA contraction. [decision: speed]
 */
#define KURA_HOT HOT_CLONES

#define KURA_LUT_N 4097 /* quarter wave 0..pi/2 in 4096 steps plus the guard */
#define KURA_WINDOW_M 5 /* window side; |N| = 25 including the centre */
/* largest K_i with d inside int32 (docs/kura.md#sde-and-schedule) */
#define KURA_C_MAX 1.2770806449520862

/*
 * wrap(x) of docs/kura.md#sde-and-schedule: the representative of x mod 2 pi in [-pi, pi). x
 * finite. The one angle wrap of the tree: the capture's sampler wraps with it, and phase images
 * (formats/kura_png) colour wrapped phases.
 */
double kura_wrap(double x);

/* The LUT, L[k] = min(32767, round(2^15 sin(pi k/8192))), k = 0..4096. Built once, thread-safe. */
const int16_t *kura_lut(void);

/* Floor division of x by 2^k (0 <= k < 63), also for negative x. */
static inline int64_t kura_shr_floor(int64_t x, int k)
{
    /* for x < 0: ~x = -x - 1 >= 0, and ~(~x >> k) = floor(x/2^k); compilers emit one sar */
    return x >= 0 ? x >> k : ~(~x >> k);
}

/*
 * quantize(theta) = wrap16(round((theta*32768)/pi)) with round(x) = floor(x + 0.5)
 * (docs/kura.md#fixed-point-drift). Any finite theta wraps correctly; a non-finite one gives 0.
 */
int16_t kura_quantize(double theta);

/* quantize of n values (same bits as kura_quantize, vectorizable fast path). */
void kura_quantize_map(const double *theta, size_t n, int16_t *q);

/* theta_q = q*pi/2^15 in double (exact scaling of q*pi). */
double kura_q_theta(int16_t q);

/* sin_q(q) by quarter-wave LUT with rounded 2-bit interpolation; exactly odd. */
int32_t kura_sin_q(int16_t q);

/* cos_q(q) = sin_q((q + 0x4000) mod 2^16); exactly even. */
int32_t kura_cos_q(int16_t q);

/* Per-step registers of the post-array datapath (docs/kura.md#fixed-point-drift, paper eq. 7-8). */
struct kura_regs {
    int32_t g;   /* round(K_i/(25 pi) 2^31) */
    int32_t r_s; /* round(K_ref,i sin(psi_ref)/pi 2^31) */
    int32_t r_c; /* round(K_ref,i cos(psi_ref)/pi 2^31) */
};

/*
 * Fills regs from K_i, K_ref,i and psi_ref. ERR_USAGE when a value is not finite, K_i < 0
 * or K_i > KURA_C_MAX, or a register does not fit int32; 0 otherwise.
 */
int kura_regs_init(struct kura_regs *regs, double k, double kref, double psi_ref);

/* The PE sums S, C of pixel (r, c) over the 24 non-centre offsets, summed directly. */
void kura_sc_pixel(const int16_t *q, size_t h, size_t w, size_t r, size_t c, int32_t *s,
                   int32_t *cs);

/* u_raw = cos_q(q_p)*S - sin_q(q_p)*C in int64 (LSB 2^-30). */
static inline int64_t kura_u_raw(int32_t s, int32_t c, int16_t q_p)
{
    return (int64_t)kura_cos_q(q_p) * s - (int64_t)kura_sin_q(q_p) * c;
}

/* u_q = (u_raw + 2^14) >> 15 (LSB 2^-15); always fits int32 (|u_raw| < 2^36). */
static inline int32_t kura_u_q(int64_t u_raw)
{
    return (int32_t)kura_shr_floor(u_raw + (1 << 14), 15);
}

/*
 * d = ((G u_q + 2^14) >> 15) + ((R_s cos_q(q_p) - R_c sin_q(q_p) + 2^14) >> 15) in int64,
 * units pi*2^-31 rad. Fits int32 whenever regs came from K_i <= KURA_C_MAX.
 */
int64_t kura_d(const struct kura_regs *regs, int32_t u_q, int16_t q_p);

/* d of pixel (r, c) by the direct definitions above (reference for tests and replay). */
int64_t kura_d_pixel(const int16_t *q, size_t h, size_t w, size_t r, size_t c,
                     const struct kura_regs *regs, int32_t *u_q_out);

/*
 * Whole-map fixed drift by separable 5x5 box sums of sin_q/cos_q (exact integer sums, so
 * bit-identical to kura_d_pixel). u_q and/or d may be NULL. pool may be NULL (one thread).
 * ERR_USAGE when h or w is 0; ERR_NOMEM; ERR_DATA when some d leaves int32 (only possible
 * with registers not made by kura_regs_init). 0 otherwise.
 */
int kura_fixed_drift_map(const int16_t *q, size_t h, size_t w, const struct kura_regs *regs,
                         int32_t *u_q, int32_t *d, struct thread_pool *pool);

/*
 * Float64 reference drift (docs/kura.md#sde-and-schedule, paper eq. 3) by the direct sum: the 25
 * terms sin(theta_{p+o} - theta_p) added in row-major offset order (dy outer, both from -2), times
 * k/25, plus kref*sin(psi_ref - theta_p). pool may be NULL.
 */
void kura_float_drift_direct(const double *theta, size_t h, size_t w, double k, double kref,
                             double psi_ref, double *u, struct thread_pool *pool);

/* The same direct sum on theta_q of a Q1.15 map (u^f64(theta_q) of docs/kura.md#fixed-point-drift).
 */
int kura_float_drift_direct_q(const int16_t *q, size_t h, size_t w, double k, double kref,
                              double psi_ref, double *u, struct thread_pool *pool);

/* Per-sample LUT error bound eps = 1.5*2^-15 + (pi/8192)^2/8 (docs/kura.md#fixed-point-drift). */
double kura_eps_sample(void);

/* Bound on |u_q 2^-15 - u| of the 24-term neighbour sum: 24(2 sqrt2 eps + 2 eps^2) + 2^-16. */
double kura_delta_u(void);

/* Drift error bound X_i = (K_i/25) dU + K_ref,i eps (|sin psi| + |cos psi|) + 2.1e-8 rad. */
double kura_drift_bound(double k, double kref, double psi_ref);

#endif
