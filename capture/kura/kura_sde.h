/*
 * kura_sde: the Kuramoto orientation-diffusion SDE of docs/kura.md without
 * the drift itself and without angle wrapping (kura_wrap, in formats/kura_fixed.h, below
 * capture and analysis both): the schedule presets (t100, t300, t1000) with their
 * validation, the terminal von Mises concentration, the image <-> phase mapping, the
 * order parameter, the circular reconstruction error, and the score sources that need no
 * network (oracle wrapped-Gaussian, prior, none).
 *
 * Angles are in rad; maps are row-major float64 (H rows, W columns). A struct
 * kura_schedule owns its arrays (kura_schedule_release frees them).
 */
#ifndef ACCELTRACE_KURA_SDE_H
#define ACCELTRACE_KURA_SDE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* docs/kura.md#sde-and-schedule constants [derived from the public code]. */
#define KURA_KREF_GAIN 1.5  /* K_ref,i = 1.5 c_i */
#define KURA_PSI_REF 0.0    /* reference phase (rad) */
#define KURA_R_END 0.5      /* R_end of the terminal concentration */
#define KURA_X_TO_THETA 0.9 /* theta = 0.9 pi x */

/* Schedule of docs/kura.md#sde-and-schedule; index i = 0..t-1. */
struct kura_schedule {
    int t;                  /* T (>= 3) */
    char preset[16];        /* "t100", "t300", "t1000" or "custom" */
    double c0, c_end;       /* coupling endpoints */
    double beta0, beta_end; /* noise variance endpoints (rad^2) */
    double kappa;           /* terminal von Mises concentration */
    double *c;              /* (t) c_i = K_i */
    double *beta;           /* (t) beta_i (rad^2) */
    double *sigma;          /* (t) sigma_i = sqrt(beta_i) (rad) */
};

/*
 * Preset endpoints by name ("t100", "t300", "t1000"). ERR_USAGE for an unknown name, with
 * the message in e (may be NULL).
 */
int kura_preset(const char *name, int *t, double *c0, double *c_end, double *beta0,
                double *beta_end, struct errmsg *e);

/*
 * Builds the schedule: s = i/(T-1), c_i = c0(1-s) + c_end s, beta_i likewise,
 * sigma_i = sqrt(beta_i), kappa = (R_end + 1.5) c_{T-1}/(0.5 beta_{T-1}).
 * ERR_USAGE (message in e) for T < 3, T > 1e6, beta <= 0 or not finite, or any c_i outside
 * [0, KURA_C_MAX]; ERR_NOMEM. preset is copied (NULL gives "custom").
 */
int kura_schedule_init(struct kura_schedule *s, const char *preset, int t, double c0, double c_end,
                       double beta0, double beta_end, struct errmsg *e);

/* Frees the arrays; safe on a zeroed or released schedule. */
void kura_schedule_release(struct kura_schedule *s);

/* K_ref,i = 1.5 c_i. */
double kura_kref(const struct kura_schedule *s, int i);

/* kappa_i = (R_end + 1.5) c_i/(0.5 beta_i) of the prior score (docs/kura.md#score-sources). */
double kura_prior_kappa(const struct kura_schedule *s, int i);

/* theta = 0.9 pi x and back x = clamp(theta/(0.9 pi), -1, 1) (docs/kura.md#sde-and-schedule). */
double kura_x_to_theta(double x);
double kura_theta_to_x(double theta);

/* Order parameter R = |mean exp(i theta)| over n values. */
double kura_order_r(const double *theta, size_t n);

/* Circular error |wrap(a - b)|: mean into *mae, max into *max (either may be NULL). */
void kura_circ_err(const double *a, const double *b, size_t n, double *mae, double *max);

/* Oracle score [docs/kura.md#score-sources]: 7-term wrapped-Gaussian score of theta around mu, std
 * sigma, with the min-shift of the exponents (rad^-1). */
double kura_oracle_score(double theta, double mu, double sigma);

/* threshold 1.15 sqrt(beta_1) sqrt(2/pi) (rad). */
double kura_recon_bound(const struct kura_schedule *s);

#endif
