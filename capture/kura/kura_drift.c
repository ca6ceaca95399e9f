/*
 * kura_drift: fixed and float drift evaluation for the Kuramoto capture (specs/kura.md
 * sections 2 and 5).
 */
#include "capture/kura/kura_drift.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/threads.h"
#include "formats/kura_fixed.h"

int kura_drift_init(struct kura_drift *dr, size_t h, size_t w, struct thread_pool *pool)
{
    memset(dr, 0, sizeof *dr);
    size_t n;
    if (h < 1 || w < 1 || !mem_mul(h, w, &n) || n > SIZE_MAX / 16)
        return ERR_USAGE;
    dr->h = h;
    dr->w = w;
    dr->n = n;
    dr->pool = pool;
    dr->q = mem_alloc(n * sizeof *dr->q);
    dr->u_q = mem_alloc(n * sizeof *dr->u_q);
    dr->d = mem_alloc(n * sizeof *dr->d);
    dr->uf = mem_alloc(n * sizeof *dr->uf);
    if (!dr->q || !dr->u_q || !dr->d || !dr->uf) {
        kura_drift_release(dr);
        return ERR_NOMEM;
    }
    return 0;
}

void kura_drift_release(struct kura_drift *dr)
{
    mem_free(dr->q);
    mem_free(dr->u_q);
    mem_free(dr->d);
    mem_free(dr->uf);
    memset(dr, 0, sizeof *dr);
}

void kura_drift_quantize(struct kura_drift *dr, const double *theta)
{
    for (size_t i = 0; i < dr->n; i++)
        dr->q[i] = kura_quantize(theta[i]);
}

/* Fixed drift on dr->q; fills u_q and d. */
static int fixed_eval(struct kura_drift *dr, double k, double kref, double psi)
{
    struct kura_regs regs;
    int rc = kura_regs_init(&regs, k, kref, psi);
    if (rc)
        return rc;
    rc = kura_fixed_drift_map(dr->q, dr->h, dr->w, &regs, dr->u_q, dr->d, dr->pool);
    dr->have_q = rc == 0;
    return rc;
}

int kura_drift_eval(struct kura_drift *dr, const double *theta, enum kura_drift_mode mode,
                    double k, double kref, double psi_ref, bool check, double *u,
                    double *err_max, double *err_mean)
{
    const double scale = M_PI / 2147483648.0; /* d in units of pi 2^-31 rad */
    int rc = 0;
    dr->have_q = false;
    if (mode == KURA_DRIFT_FIXED || check) {
        kura_drift_quantize(dr, theta);
        rc = fixed_eval(dr, k, kref, psi_ref);
        if (rc)
            return rc;
    }
    if (mode == KURA_DRIFT_FIXED) {
        for (size_t i = 0; i < dr->n; i++)
            u[i] = dr->d[i] * scale;
    } else {
        kura_float_drift_direct(theta, dr->h, dr->w, k, kref, psi_ref, u, dr->pool);
    }
    if (check) {
        rc = kura_float_drift_direct_q(dr->q, dr->h, dr->w, k, kref, psi_ref, dr->uf, dr->pool);
        if (rc)
            return rc;
        double mx = 0, sum = 0;
        for (size_t i = 0; i < dr->n; i++) {
            double e = fabs(dr->d[i] * scale - dr->uf[i]);
            sum += e;
            if (e > mx)
                mx = e;
        }
        *err_max = mx;
        *err_mean = sum / (double)dr->n;
    }
    return 0;
}

/* ---- separable float path ---- */

struct box_ctx {
    const double *theta;
    size_t h, w;
    double k25, kref, psi;
    double *sn, *cs; /* (h, w) sin, cos of theta */
    double *hs, *hc; /* (h, w) horizontal 5-sums */
    double *u;
};

static void box_phase1(void *vctx, size_t r0, size_t r1, int worker)
{
    (void)worker;
    struct box_ctx *x = vctx;
    size_t w = x->w;
    for (size_t r = r0; r < r1; r++) {
        const double *t = x->theta + r * w;
        double *sn = x->sn + r * w, *cs = x->cs + r * w;
        for (size_t c = 0; c < w; c++) {
            sn[c] = sin(t[c]);
            cs[c] = cos(t[c]);
        }
        double *hs = x->hs + r * w, *hc = x->hc + r * w;
        size_t lo = w >= 5 ? 2 : w, hi = w >= 5 ? w - 2 : w;
        for (size_t c = lo; c < hi; c++) { /* interior: no wrap, vectorizable */
            hs[c] = sn[c - 2] + sn[c - 1] + sn[c] + sn[c + 1] + sn[c + 2];
            hc[c] = cs[c - 2] + cs[c - 1] + cs[c] + cs[c + 1] + cs[c + 2];
        }
        for (size_t c = 0; c < w; c++) {
            if (c >= lo && c < hi)
                c = hi; /* skip to the right edge */
            if (c >= w)
                break;
            double a = 0, b = 0;
            for (int dx = -2; dx <= 2; dx++) {
                size_t cc = (c + 3 * w + (size_t)dx) % w;
                a += sn[cc];
                b += cs[cc];
            }
            hs[c] = a;
            hc[c] = b;
        }
    }
}

static void box_phase2(void *vctx, size_t r0, size_t r1, int worker)
{
    (void)worker;
    struct box_ctx *x = vctx;
    size_t h = x->h, w = x->w;
    for (size_t r = r0; r < r1; r++) {
        const double *a[5], *b[5];
        for (int k = 0; k < 5; k++) {
            size_t rr = (r + 3 * h + (size_t)k - 2) % h;
            a[k] = x->hs + rr * w;
            b[k] = x->hc + rr * w;
        }
        const double *sn = x->sn + r * w, *cs = x->cs + r * w;
        double *u = x->u + r * w;
        double rs = x->kref * sin(x->psi), rcos = x->kref * cos(x->psi);
        for (size_t c = 0; c < w; c++) {
            /* SA-Kura eq. 4-7: sum_j sin(t_j - t_p) = cos t_p S - sin t_p C, centre excluded */
            double s = (a[0][c] + a[1][c]) + a[2][c] + (a[3][c] + a[4][c]) - sn[c];
            double cc = (b[0][c] + b[1][c]) + b[2][c] + (b[3][c] + b[4][c]) - cs[c];
            /* K_ref sin(psi - t_p) = K_ref (sin psi cos t_p - cos psi sin t_p) */
            u[c] = x->k25 * (cs[c] * s - sn[c] * cc) + (rs * cs[c] - rcos * sn[c]);
        }
    }
}

int kura_float_drift_box(const double *theta, size_t h, size_t w, double k, double kref,
                         double psi_ref, double *u, struct thread_pool *pool)
{
    size_t n;
    if (h < 1 || w < 1 || !mem_mul(h, w, &n) || n > SIZE_MAX / 64)
        return ERR_USAGE;
    double *buf = mem_alloc(4 * n * sizeof(double));
    if (!buf)
        return ERR_NOMEM;
    struct box_ctx x = {theta, h, w, k / 25.0, kref, psi_ref, buf, buf + n, buf + 2 * n,
                        buf + 3 * n, u};
    if (pool) {
        pool_for(pool, h, box_phase1, &x);
        pool_for(pool, h, box_phase2, &x);
    } else {
        box_phase1(&x, 0, h, 0);
        box_phase2(&x, 0, h, 0);
    }
    mem_free(buf);
    return 0;
}
