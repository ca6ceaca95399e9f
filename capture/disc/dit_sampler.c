/* dit_sampler: docs/disc.md#sampler (DPM-Solver++ 2M, Lu et al. 2022, Alg. 2; DDIM eta = 0). */
#include "capture/disc/dit_sampler.h"

#include <math.h>

#include "common/err.h"
#include "common/mem.h"

uint32_t dit_timestep(int k, int K)
{
    double v = (double)(999 * (int64_t)(K - k)) / (double)K;
    return (uint32_t)floor(v + 0.5); /* v >= 0: half away from zero */
}

double dit_alpha_bar(uint32_t t)
{
    double ab = 1.0;
    for (uint32_t i = 0; i <= t && i < 1000; i++)
        ab *= 1.0 - (1e-4 + (0.02 - 1e-4) * (double)i / 999.0);
    return ab;
}

void dit_schedule_fill(struct dit_schedule *s, int K)
{
    s->K = K;
    for (int k = 0; k < K; k++) {
        s->t[k] = dit_timestep(k, K);
        double ab = dit_alpha_bar(s->t[k]);
        s->alpha[k] = sqrt(ab);
        s->sigma[k] = sqrt(1.0 - ab);
        s->lambda[k] = log(s->alpha[k] / s->sigma[k]);
    }
    s->alpha[K] = 1.0;
    s->sigma[K] = 0.0;
    s->lambda[K] = INFINITY;
}

int dit_sample(enum dit_sampler_kind kind, const struct dit_schedule *s, float *x, size_t n,
               dit_eps_fn fn, dit_post_fn post, void *ctx, float *traj)
{
    float *x0p = mem_alloc(n * sizeof(float));
    if (!x0p)
        return ERR_NOMEM;
    int rc = dit_sample_from(kind, s, 0, x, x0p, n, fn, post, ctx, traj);
    mem_free(x0p);
    return rc;
}

int dit_sample_from(enum dit_sampler_kind kind, const struct dit_schedule *s, int k0, float *x,
                    float *x0p, size_t n, dit_eps_fn fn, dit_post_fn post, void *ctx, float *traj)
{
    int rc = 0, K = s->K;
    float *eps = mem_alloc(n * sizeof(float));
    float *x0 = mem_alloc(n * sizeof(float));
    if (!eps || !x0) {
        rc = ERR_NOMEM;
        goto done;
    }
    for (int k = k0 < 0 ? 0 : k0; k < K; k++) {
        rc = fn(ctx, k, s->t[k], x, eps);
        if (rc)
            goto done;
        double a = s->alpha[k], sg = s->sigma[k], a1 = s->alpha[k + 1], s1 = s->sigma[k + 1];
        for (size_t i = 0; i < n; i++)
            x0[i] = (float)(((double)x[i] - sg * eps[i]) / a);
        if (kind == DIT_SAMPLER_DDIM) {
            for (size_t i = 0; i < n; i++)
                x[i] = (float)(a1 * x0[i] + s1 * eps[i]);
        } else if (k == K - 1) {
            for (size_t i = 0; i < n; i++)
                x[i] = x0[i]; /* sigma_K = 0, h = +inf: x_K = D = x0hat_{K-1} */
        } else {
            double h = s->lambda[k + 1] - s->lambda[k];
            double c1 = s1 / sg, c2 = -a1 * expm1(-h);
            if (k == 0) {
                for (size_t i = 0; i < n; i++)
                    x[i] = (float)(c1 * x[i] + c2 * x0[i]);
            } else {
                double r = (s->lambda[k] - s->lambda[k - 1]) / h;
                double w0 = 1.0 + 1.0 / (2.0 * r), w1 = 1.0 / (2.0 * r);
                for (size_t i = 0; i < n; i++) {
                    double D = w0 * x0[i] - w1 * x0p[i];
                    x[i] = (float)(c1 * x[i] + c2 * D);
                }
            }
        }
        for (size_t i = 0; i < n; i++)
            x0p[i] = x0[i];
        if (traj)
            for (size_t i = 0; i < n; i++)
                traj[(size_t)k * n + i] = x[i];
        if (post && (rc = post(ctx, k, x)) != 0)
            goto done;
    }
done:
    mem_free(eps);
    mem_free(x0);
    return rc;
}
