/*
 * kura_drift: the drift u_i(theta) the Kuramoto capture uses (docs/kura.md#sde-and-schedule,
 * docs/kura.md#fixed-point-drift), as a reusable evaluator over one map size.
 *
 *   fixed (default): q = quantize(theta), d from formats/kura_fixed (bit-exact with the
 *                    SA-Kura replay), u = d pi/2^31 rad.
 *   float:           the float64 direct sum of SA-Kura eq. 3 on the unquantized theta.
 * With check on, the evaluator also computes u^f64(theta_q) by the direct sum and the
 * per-step max and mean of |d pi/2^31 - u^f64(theta_q)| (docs/kura.md#fixed-point-drift).
 *
 * kura_float_drift_box is the separable reformulation (S, C as 5x5 box sums of sin/cos,
 * u = K/25 (cos theta_p S - sin theta_p C) + reference): the fast float path for the
 * benchmark, equal to the direct sum within 1e-12 rad (the box-sum check).
 * The evaluator borrows the thread pool (may be NULL); results do not depend on it.
 */
#ifndef ACCELTRACE_KURA_DRIFT_H
#define ACCELTRACE_KURA_DRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct thread_pool;

enum kura_drift_mode { KURA_DRIFT_FIXED = 0, KURA_DRIFT_FLOAT = 1 };

struct kura_drift {
    size_t h, w, n;
    struct thread_pool *pool; /* borrowed; may be NULL */
    int16_t *q;               /* (h, w) Q1.15 map of the last evaluation (fixed mode or check) */
    int32_t *u_q;             /* (h, w) drained u~_q of the last fixed evaluation */
    int32_t *d;               /* (h, w) fixed drift d (units pi 2^-31 rad) */
    double *uf;               /* (h, w) float reference on theta_q (check) */
    bool have_q;              /* q, u_q, d hold the last evaluation's map */
};

/* Allocates an evaluator for h x w maps (h, w >= 1). 0, ERR_USAGE or ERR_NOMEM. */
int kura_drift_init(struct kura_drift *dr, size_t h, size_t w, struct thread_pool *pool);
void kura_drift_release(struct kura_drift *dr);

/*
 * u (rad, h x w) = drift of theta for (k, kref, psi_ref) in mode. When check, *err_max and
 * *err_mean receive the fixed-vs-float error on theta_q (rad); otherwise they are untouched.
 * 0, ERR_USAGE (k outside [0, KURA_C_MAX]), ERR_NOMEM, ERR_DATA (d overflow).
 */
int kura_drift_eval(struct kura_drift *dr, const double *theta, enum kura_drift_mode mode, double k,
                    double kref, double psi_ref, bool check, double *u, double *err_max,
                    double *err_mean);

/* Quantizes theta into dr->q (sets have_q only together with a fixed evaluation). */
void kura_drift_quantize(struct kura_drift *dr, const double *theta);

/*
 * Float drift by separable 5x5 box sums of sin and cos (the reformulation of SA-Kura
 * eq. 4-7). pool may be NULL. 0 or ERR_NOMEM.
 */
int kura_float_drift_box(const double *theta, size_t h, size_t w, double k, double kref,
                         double psi_ref, double *u, struct thread_pool *pool);

#endif
