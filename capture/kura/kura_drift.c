/*
 * kura_drift: fixed and float drift evaluation for the Kuramoto capture (docs/kura.md
 * sections 2 and 5).
 */
#include "capture/kura/kura_drift.h"

#include <math.h>
#include <stdbool.h>
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

/* Element-wise passes split over the pool (they are a third of a fixed evaluation). */
struct ew_ctx {
    const double *theta;
    int16_t *q;
    const int32_t *d;
    double *u;
};

static void ew_quantize(void *vctx, size_t b, size_t e, int worker)
{
    (void)worker;
    struct ew_ctx *x = vctx;
    kura_quantize_map(x->theta + b, e - b, x->q + b);
}

KURA_HOT static void ew_scale(void *vctx, size_t b, size_t e, int worker)
{
    (void)worker;
    struct ew_ctx *x = vctx;
    const double scale = M_PI / 2147483648.0; /* d in units of pi 2^-31 rad */
    for (size_t i = b; i < e; i++)
        x->u[i] = x->d[i] * scale;
}

void kura_drift_quantize(struct kura_drift *dr, const double *theta)
{
    struct ew_ctx x = {theta, dr->q, NULL, NULL};
    if (dr->pool)
        pool_for(dr->pool, dr->n, ew_quantize, &x);
    else
        ew_quantize(&x, 0, dr->n, 0);
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

int kura_drift_eval(struct kura_drift *dr, const double *theta, enum kura_drift_mode mode, double k,
                    double kref, double psi_ref, bool check, double *u, double *err_max,
                    double *err_mean)
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
        struct ew_ctx x = {NULL, NULL, dr->d, u};
        if (dr->pool)
            pool_for(dr->pool, dr->n, ew_scale, &x);
        else
            ew_scale(&x, 0, dr->n, 0);
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

/*
 * sin and cos of n values with |x| < 2^19 pi/2, branch-free so the loop vectorizes:
 * Cody-Waite reduction by pi/2 (three-part constant; k*pio2_1 exact for |k| < 2^20) and
 * the fdlibm kernel polynomials on [-pi/4, pi/4] (each within about 1 ulp). Rounding to
 * the nearest integer uses the 1.5*2^52 shifter (exact in round-to-nearest). Values out of
 * range get garbage here and the count of them is returned; the caller redoes those with
 * libm.
 * [decision: speed; the box-sum check bounds the effect at 1e-12 rad]
 */
KURA_HOT static size_t fast_sincos_n(size_t n, const double *restrict x, double *restrict sn,
                                     double *restrict cs)
{
    const double inv_pio2 = 6.36619772367581382433e-01, shifter = 6755399441055744.0;
    const double pio2_1 = 1.57079632673412561417e+00, pio2_2 = 6.07710050630396597660e-11,
                 pio2_3 = 2.02226624871116645580e-21;
    int64_t bad = 0; /* an integer sum vectorizes; a double one would not */
    for (size_t i = 0; i < n; i++) {
        /* out of range (or NaN): computed anyway (pure double arithmetic, no UB), counted,
         * and overwritten by the caller */
        double xr = x[i];
        bad += !(fabs(xr) < 823549.6);
        double kf = (xr * inv_pio2 + shifter) - shifter;
        double r = ((xr - kf * pio2_1) - kf * pio2_2) - kf * pio2_3;
        double z = r * r;
        double sp = r + r * z *
                            (-1.66666666666666324348e-01 +
                             z * (8.33333333332248946124e-03 +
                                  z * (-1.98412698298579493134e-04 +
                                       z * (2.75573137070700676789e-06 +
                                            z * (-2.50507602534068634195e-08 +
                                                 z * 1.58969099521155010221e-10)))));
        double cp = 1.0 - 0.5 * z +
                    z * z *
                        (4.16666666666666019037e-02 +
                         z * (-1.38888888888741095749e-03 +
                              z * (2.48015872894767294178e-05 +
                                   z * (-2.75573143513906633035e-07 +
                                        z * (2.08757232129817482790e-09 +
                                             z * -1.13596475577881948265e-11)))));
        /* quadrant m = k - 4 round(k/4) in {-2..2}: q = m mod 4 */
        double m = kf - 4.0 * ((kf * 0.25 + shifter) - shifter);
        bool odd = m == 1.0 || m == -1.0;
        bool neg_s = m == 2.0 || m == -2.0 || m == -1.0; /* q = 2, 3 */
        bool neg_c = m == 1.0 || m == 2.0 || m == -2.0;  /* q = 1, 2 */
        double s_sel = odd ? cp : sp, c_sel = odd ? sp : cp;
        sn[i] = neg_s ? -s_sel : s_sel;
        cs[i] = neg_c ? -c_sel : c_sel;
    }
    return (size_t)bad;
}

/* One output row of the separable drift (restrict: vectorizable). */
KURA_HOT static void box_pixels(size_t w, const double *restrict a0, const double *restrict a1,
                                const double *restrict a2, const double *restrict a3,
                                const double *restrict a4, const double *restrict b0,
                                const double *restrict b1, const double *restrict b2,
                                const double *restrict b3, const double *restrict b4,
                                const double *restrict sn, const double *restrict cs, double k25,
                                double rs, double rcos, double *restrict u)
{
    for (size_t c = 0; c < w; c++) {
        /* SA-Kura eq. 4-7: sum_j sin(t_j - t_p) = cos t_p S - sin t_p C, centre excluded */
        double sv = (a0[c] + a1[c]) + a2[c] + (a3[c] + a4[c]) - sn[c];
        double cv = (b0[c] + b1[c]) + b2[c] + (b3[c] + b4[c]) - cs[c];
        /* K_ref sin(psi - t_p) = K_ref (sin psi cos t_p - cos psi sin t_p) */
        u[c] = k25 * (cs[c] * sv - sn[c] * cv) + (rs * cs[c] - rcos * sn[c]);
    }
}

/*
 * Rows stream through a per-worker ring of 5 rows (sin, cos and their periodic horizontal
 * 5-sums): cache-resident, nothing map-sized allocated. A worker handling rows [r0, r1)
 * also computes the 4 halo rows around its chunk, so results do not depend on threads.
 */
struct box_ctx {
    const double *theta;
    size_t h, w;
    double k25, kref, psi;
    double *scratch;   /* per worker: 4 rings of 5 rows + padded row pair */
    size_t per_worker; /* doubles per worker */
    double *u;
};

/* Periodic horizontal 5-sums of one row: plain interior (vectorizable), wrapped edges;
 * every entry adds its five terms left to right. */
static inline void hsum_row(size_t w, const double *restrict v, double *restrict out)
{
    size_t lo = w >= 5 ? 2 : w, hi = w >= 5 ? w - 2 : w;
    for (size_t c = lo; c < hi; c++)
        out[c] = v[c - 2] + v[c - 1] + v[c] + v[c + 1] + v[c + 2];
    for (size_t c = 0; c < w; c++) {
        if (c == lo && lo < hi)
            c = hi; /* skip the interior */
        if (c >= w)
            break;
        double acc = v[(c + 3 * w - 2) % w];
        for (size_t k = 1; k < 5; k++)
            acc += v[(c + 3 * w + k - 2) % w];
        out[c] = acc;
    }
}

KURA_HOT static void box_row(const struct box_ctx *x, double *base, long long j, size_t slot)
{
    size_t h = x->h, w = x->w;
    size_t r = (size_t)(((j % (long long)h) + (long long)h) % (long long)h);
    const double *t = x->theta + r * w;
    double *sn = base + slot * w, *cs = base + (5 + slot) * w;
    double *hs = base + (10 + slot) * w, *hc = base + (15 + slot) * w;
    if (fast_sincos_n(w, t, sn, cs) > 0)
        for (size_t c = 0; c < w; c++)
            if (!(fabs(t[c]) < 823549.6)) {
                sn[c] = sin(t[c]);
                cs[c] = cos(t[c]);
            }
    hsum_row(w, sn, hs);
    hsum_row(w, cs, hc);
}

static void box_rows(void *vctx, size_t r0, size_t r1, int worker)
{
    struct box_ctx *x = vctx;
    if (r0 >= r1)
        return;
    size_t w = x->w;
    double *base = x->scratch + (size_t)worker * x->per_worker;
    long long first = (long long)r0 - 2;
    for (long long j = first; j < (long long)r0 + 2; j++)
        box_row(x, base, j, (size_t)(j - first) % 5);
    double rs = x->kref * sin(x->psi), rcos = x->kref * cos(x->psi), k25 = x->k25;
    for (size_t r = r0; r < r1; r++) {
        long long jn = (long long)r + 2;
        box_row(x, base, jn, (size_t)(jn - first) % 5);
        size_t sl[5];
        for (int k = 0; k < 5; k++)
            sl[k] = (size_t)((long long)r - 2 + k - first) % 5;
        const double *a0 = base + (10 + sl[0]) * w, *a1 = base + (10 + sl[1]) * w,
                     *a2 = base + (10 + sl[2]) * w, *a3 = base + (10 + sl[3]) * w,
                     *a4 = base + (10 + sl[4]) * w;
        const double *b0 = base + (15 + sl[0]) * w, *b1 = base + (15 + sl[1]) * w,
                     *b2 = base + (15 + sl[2]) * w, *b3 = base + (15 + sl[3]) * w,
                     *b4 = base + (15 + sl[4]) * w;
        const double *sn = base + sl[2] * w, *cs = base + (5 + sl[2]) * w;
        box_pixels(w, a0, a1, a2, a3, a4, b0, b1, b2, b3, b4, sn, cs, k25, rs, rcos, x->u + r * w);
    }
}

int kura_float_drift_box(const double *theta, size_t h, size_t w, double k, double kref,
                         double psi_ref, double *u, struct thread_pool *pool)
{
    size_t n;
    if (h < 1 || w < 1 || !mem_mul(h, w, &n) || w > SIZE_MAX / 256)
        return ERR_USAGE;
    int nworkers = pool ? pool_size(pool) : 1;
    struct box_ctx x = {theta, h, w, k / 25.0, kref, psi_ref, NULL, 20 * w + 2 * (w + 4), u};
    x.scratch = mem_alloc((size_t)nworkers * x.per_worker * sizeof(double));
    if (!x.scratch)
        return ERR_NOMEM;
    if (pool)
        pool_for(pool, h, box_rows, &x);
    else
        box_rows(&x, 0, h, 0);
    mem_free(x.scratch);
    return 0;
}
