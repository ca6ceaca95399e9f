/*
 * dit_sampler: the DDPM schedule and the DPM-Solver++ 2M / DDIM samplers of the DiSC capture
 * (docs/disc.md#sampler). The model is a callback, so the samplers are tested with stubs.
 * Latents are FP32 (C_in, H, W); coefficients are computed in double.
 */
#ifndef ACCELTRACE_DIT_SAMPLER_H
#define ACCELTRACE_DIT_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

enum dit_sampler_kind { DIT_SAMPLER_DPM2M = 0, DIT_SAMPLER_DDIM = 1 };

/* Schedule of K steps: t[k] (k < K), alpha[k], sigma[k], lambda[k] (k <= K; alpha[K] = 1,
 * sigma[K] = 0, lambda[K] = +inf). Arrays are caller-owned with the sizes given. */
struct dit_schedule {
    int K;
    uint32_t *t;    /* [K] */
    double *alpha;  /* [K + 1] */
    double *sigma;  /* [K + 1] */
    double *lambda; /* [K + 1] */
};

/* t_k = round_half_away(999 (K - k) / K) in double (docs/disc.md#sampler). */
uint32_t dit_timestep(int k, int K);

/* alpha_bar_t of the linear beta schedule 1e-4 .. 0.02 over 1000 steps, in double. */
double dit_alpha_bar(uint32_t t);

/* Fills s (arrays allocated by the caller for K). */
void dit_schedule_fill(struct dit_schedule *s, int K);

/*
 * Model callback: writes eps (n floats) for latent x at step k (timestep t). Returns 0 or a
 * negative err, which stops the sampler.
 */
typedef int (*dit_eps_fn)(void *ctx, int k, uint32_t t, const float *x, float *eps);

/* Called after step k with the new latent x_{k+1} (n floats); 0 or a negative err. */
typedef int (*dit_post_fn)(void *ctx, int k, const float *x_next);

/*
 * Runs K steps from x (n floats; overwritten with x_K). traj, when not NULL, receives
 * x_{k+1} after every step ((K, n) floats). post may be NULL. 0 or a callback's error.
 */
int dit_sample(enum dit_sampler_kind kind, const struct dit_schedule *s, float *x, size_t n,
               dit_eps_fn fn, dit_post_fn post, void *ctx, float *traj);

/*
 * dit_sample from step k0 (0..K) with the sampler's whole state in the caller's hands: x is
 * x_{k0} and x0p (n floats) the previous step's prediction x0hat_{k0-1} (DPM-Solver++ 2M's
 * history; unused at k0 = 0 and by DDIM). After every step x0p holds that step's x0hat
 * before post is called, so a checkpoint taken in post can resume bit for bit with
 * k0 = k + 1. traj rows [k0, K) are written. 0 or a callback's error.
 */
int dit_sample_from(enum dit_sampler_kind kind, const struct dit_schedule *s, int k0, float *x,
                    float *x0p, size_t n, dit_eps_fn fn, dit_post_fn post, void *ctx, float *traj);

#endif
