/*
 * kura_sde: schedule, mapping and the simple score sources (docs/kura.md
 * sections 2-3).
 */
#include "capture/kura/kura_sde.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "formats/kura_fixed.h"

int kura_preset(const char *name, int *t, double *c0, double *c_end, double *beta0,
                double *beta_end, struct errmsg *e)
{
    /* docs/kura.md#sde-and-schedule table [decision; values from the public code]. */
    static const struct {
        const char *name;
        int t;
        double c0, c_end, b0, b_end;
    } tab[] = {
        {"t100", 100, 3e-5, 0.03, 1e-4, 0.1},
        {"t300", 300, 3e-5, 0.02, 1e-4, 0.07},
        {"t1000", 1000, 3e-5, 0.0045, 1e-4, 0.015},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (!strcmp(name, tab[i].name)) {
            *t = tab[i].t;
            *c0 = tab[i].c0;
            *c_end = tab[i].c_end;
            *beta0 = tab[i].b0;
            *beta_end = tab[i].b_end;
            return 0;
        }
    }
    return errmsg_set(e, ERR_USAGE, "unknown schedule preset '%s' (t100, t300, t1000)", name);
}

int kura_schedule_init(struct kura_schedule *s, const char *preset, int t, double c0, double c_end,
                       double beta0, double beta_end, struct errmsg *e)
{
    memset(s, 0, sizeof *s);
    if (t < 3 || t > 1000000)
        return errmsg_set(e, ERR_USAGE, "schedule length %d out of range (3..1000000)", t);
    if (!(beta0 > 0) || !(beta_end > 0) || !isfinite(beta0) || !isfinite(beta_end))
        return errmsg_set(e, ERR_USAGE, "beta endpoints must be positive (%g, %g)", beta0,
                          beta_end);
    if (!isfinite(c0) || !isfinite(c_end))
        return errmsg_set(e, ERR_USAGE, "coupling endpoints must be finite");
    snprintf(s->preset, sizeof s->preset, "%s", preset ? preset : "custom");
    s->t = t;
    s->c0 = c0;
    s->c_end = c_end;
    s->beta0 = beta0;
    s->beta_end = beta_end;
    s->c = mem_alloc((size_t)t * sizeof(double));
    s->beta = mem_alloc((size_t)t * sizeof(double));
    s->sigma = mem_alloc((size_t)t * sizeof(double));
    if (!s->c || !s->beta || !s->sigma) {
        kura_schedule_release(s);
        return errmsg_set(e, ERR_NOMEM, "out of memory for the schedule");
    }
    for (int i = 0; i < t; i++) {
        /* docs/kura.md#sde-and-schedule: s = i/(T-1) in double; both endpoints exact. */
        double f = (double)i / (double)(t - 1);
        s->c[i] = c0 * (1.0 - f) + c_end * f;
        s->beta[i] = beta0 * (1.0 - f) + beta_end * f;
        s->sigma[i] = sqrt(s->beta[i]);
        if (!(s->c[i] >= 0.0 && s->c[i] <= KURA_C_MAX)) {
            double ci = s->c[i];
            kura_schedule_release(s);
            return errmsg_set(e, ERR_USAGE,
                              "coupling c_%d = %.17g outside [0, %.17g] (d must fit int32)", i, ci,
                              KURA_C_MAX);
        }
    }
    /* Terminal concentration [derived, public code]. */
    s->kappa = (KURA_R_END + 1.5) * s->c[t - 1] / (0.5 * s->beta[t - 1]);
    return 0;
}

void kura_schedule_release(struct kura_schedule *s)
{
    mem_free(s->c);
    mem_free(s->beta);
    mem_free(s->sigma);
    s->c = s->beta = s->sigma = NULL;
}

double kura_kref(const struct kura_schedule *s, int i)
{
    return KURA_KREF_GAIN * s->c[i];
}

double kura_prior_kappa(const struct kura_schedule *s, int i)
{
    return (KURA_R_END + 1.5) * s->c[i] / (0.5 * s->beta[i]);
}

double kura_x_to_theta(double x)
{
    return KURA_X_TO_THETA * M_PI * x;
}

double kura_theta_to_x(double theta)
{
    double x = theta / (KURA_X_TO_THETA * M_PI);
    return x < -1.0 ? -1.0 : x > 1.0 ? 1.0 : x;
}

double kura_order_r(const double *theta, size_t n)
{
    if (n == 0)
        return 0.0;
    double sc = 0, ss = 0;
    for (size_t i = 0; i < n; i++) {
        sc += cos(theta[i]);
        ss += sin(theta[i]);
    }
    return hypot(sc, ss) / (double)n;
}

void kura_circ_err(const double *a, const double *b, size_t n, double *mae, double *max)
{
    double sum = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(kura_wrap(a[i] - b[i]));
        sum += e;
        if (e > mx)
            mx = e;
    }
    if (mae)
        *mae = n ? sum / (double)n : 0.0;
    if (max)
        *max = mx;
}

double kura_oracle_score(double theta, double mu, double sigma)
{
    /* docs/kura.md#score-sources: 7 terms k = -3..3 and the mandatory min-shift. */
    double delta = kura_wrap(theta - mu);
    double z[7], zmin2 = INFINITY;
    for (int k = -3; k <= 3; k++) {
        z[k + 3] = delta + 2.0 * M_PI * k;
        double z2 = z[k + 3] * z[k + 3];
        if (z2 < zmin2)
            zmin2 = z2;
    }
    double s2 = sigma * sigma, num = 0, den = 0;
    for (int k = 0; k < 7; k++) {
        double wk = exp(-(z[k] * z[k] - zmin2) / (2.0 * s2));
        num += z[k] * wk;
        den += wk;
    }
    return -num / (s2 * den);
}

double kura_recon_bound(const struct kura_schedule *s)
{
    return 1.15 * sqrt(s->beta[1]) * sqrt(2.0 / M_PI);
}
