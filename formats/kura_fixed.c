/*
 * kura_fixed: bit-exact fixed-point Kuramoto drift (specs/kura.md section 5).
 * See kura_fixed.h for the number formats.
 */
#include "formats/kura_fixed.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/threads.h"

static int16_t lut[KURA_LUT_N];
/* sin_q of every 16-bit code, derived from the LUT by the interpolation rule (same bits). */
static int16_t sinq_all[65536];
static pthread_once_t lut_once = PTHREAD_ONCE_INIT;

/* Spec section 5: round(x) = floor(x + 0.5) in double. */
static double round_half_up(double x)
{
    return floor(x + 0.5);
}

/* The interpolation of spec section 5 on the raw LUT (used once to fill sinq_all). */
static int16_t sin_q_from_lut(uint16_t u)
{
    unsigned quad = u >> 14;
    unsigned p = u & 0x3FFFu;
    if (quad & 1u)
        p = 16384u - p; /* mirror in quadrants 1 and 3 */
    unsigned a = p >> 2, f = p & 3u;
    int32_t v = lut[a];
    if (f != 0)
        v += (int32_t)kura_shr_floor((int64_t)f * (lut[a + 1] - lut[a]) + 2, 2);
    return (int16_t)(quad >= 2 ? -v : v);
}

static void lut_build(void)
{
    /* LUT [paper: quarter wave, 4096 samples; spec section 5: guard and clamp] */
    for (int k = 0; k < KURA_LUT_N; k++) {
        double v = round_half_up(32768.0 * sin(M_PI * k / 8192.0));
        lut[k] = (int16_t)(v > 32767.0 ? 32767.0 : v);
    }
    for (uint32_t u = 0; u < 65536u; u++)
        sinq_all[u] = sin_q_from_lut((uint16_t)u);
}

const int16_t *kura_lut(void)
{
    pthread_once(&lut_once, lut_build);
    return lut;
}

static const int16_t *sinq_table(void)
{
    pthread_once(&lut_once, lut_build);
    return sinq_all;
}

int16_t kura_quantize(double theta)
{
    /* Spec section 5: product first, then one division; wrap16 of the rounded value. */
    double v = round_half_up((theta * 32768.0) / M_PI);
    v = fmod(v, 65536.0); /* exact on integers; keeps the conversion in range */
    int64_t i = (int64_t)v;
    return (int16_t)(uint16_t)((uint64_t)i & 0xFFFFu);
}

double kura_q_theta(int16_t q)
{
    return (double)q * M_PI / 32768.0;
}

int32_t kura_sin_q(int16_t q)
{
    return sinq_table()[(uint16_t)q];
}

int32_t kura_cos_q(int16_t q)
{
    return sinq_table()[(uint16_t)((uint16_t)q + 0x4000u)];
}

/* Rounds x to int32 or fails (spec section 5 registers). */
static int reg_round(double x, int32_t *out)
{
    double v = round_half_up(x);
    if (!(v >= -2147483648.0 && v <= 2147483647.0))
        return ERR_USAGE;
    *out = (int32_t)v;
    return 0;
}

int kura_regs_init(struct kura_regs *regs, double k, double kref, double psi_ref)
{
    if (!isfinite(k) || !isfinite(kref) || !isfinite(psi_ref) || k < 0 || k > KURA_C_MAX)
        return ERR_USAGE;
    /* Spec section 5 (paper eq. 7, 8): G = round(K/(25 pi) 2^31), R = round(K_ref trig/pi 2^31). */
    int rc = reg_round(k / (25.0 * M_PI) * 2147483648.0, &regs->g);
    if (rc == 0)
        rc = reg_round(kref * sin(psi_ref) / M_PI * 2147483648.0, &regs->r_s);
    if (rc == 0)
        rc = reg_round(kref * cos(psi_ref) / M_PI * 2147483648.0, &regs->r_c);
    return rc;
}

void kura_sc_pixel(const int16_t *q, size_t h, size_t w, size_t r, size_t c, int32_t *s,
                   int32_t *cs)
{
    const int16_t *tab = sinq_table();
    int32_t ss = 0, cc = 0;
    for (int dy = -2; dy <= 2; dy++) {
        size_t rr = (r + h * 3 + (size_t)(dy + 0)) % h; /* periodic; h*3 keeps it positive */
        for (int dx = -2; dx <= 2; dx++) {
            if (dy == 0 && dx == 0)
                continue; /* the centre is captured, not accumulated [paper eq. 6] */
            size_t cc_ = (c + w * 3 + (size_t)(dx + 0)) % w;
            uint16_t u = (uint16_t)q[rr * w + cc_];
            ss += tab[u];
            cc += tab[(uint16_t)(u + 0x4000u)];
        }
    }
    *s = ss;
    *cs = cc;
}

int64_t kura_d(const struct kura_regs *regs, int32_t u_q, int16_t q_p)
{
    int64_t nb = kura_shr_floor((int64_t)regs->g * u_q + (1 << 14), 15);
    int64_t ref = kura_shr_floor((int64_t)regs->r_s * kura_cos_q(q_p) -
                                     (int64_t)regs->r_c * kura_sin_q(q_p) + (1 << 14),
                                 15);
    return nb + ref;
}

int64_t kura_d_pixel(const int16_t *q, size_t h, size_t w, size_t r, size_t c,
                     const struct kura_regs *regs, int32_t *u_q_out)
{
    int32_t s, cs;
    kura_sc_pixel(q, h, w, r, c, &s, &cs);
    int16_t qp = q[r * w + c];
    int32_t uq = kura_u_q(kura_u_raw(s, cs, qp));
    if (u_q_out)
        *u_q_out = uq;
    return kura_d(regs, uq, qp);
}

/* ---- whole-map fixed drift by separable box sums ---- */

struct fixed_ctx {
    const int16_t *q;
    size_t h, w;
    const struct kura_regs *regs;
    int32_t *sq, *cq; /* (h, w) sin_q, cos_q */
    int32_t *hs, *hc; /* (h, w) horizontal 5-sums */
    int32_t *row;     /* per worker: 2*(w + 4) padded row scratch */
    int nworkers;
    int32_t *u_q, *d;
    bool *overflow; /* per worker */
};

/* Phase 1: sin/cos maps and periodic horizontal 5-sums, row by row. */
static void fixed_phase1(void *vctx, size_t r0, size_t r1, int worker)
{
    struct fixed_ctx *x = vctx;
    const int16_t *tab = sinq_table();
    size_t w = x->w;
    int32_t *ps = x->row + (size_t)worker * 2 * (w + 4);
    int32_t *pc = ps + w + 4;
    for (size_t r = r0; r < r1; r++) {
        const int16_t *qr = x->q + r * w;
        int32_t *sq = x->sq + r * w, *cq = x->cq + r * w;
        for (size_t c = 0; c < w; c++) {
            uint16_t u = (uint16_t)qr[c];
            sq[c] = tab[u];
            cq[c] = tab[(uint16_t)(u + 0x4000u)];
        }
        /* padded row: ps[j] = sq[(j - 2) mod w] */
        for (size_t j = 0; j < w + 4; j++) {
            size_t c = (j + 3 * w - 2) % w;
            ps[j] = sq[c];
            pc[j] = cq[c];
        }
        int32_t *hs = x->hs + r * w, *hc = x->hc + r * w;
        for (size_t c = 0; c < w; c++) {
            hs[c] = ps[c] + ps[c + 1] + ps[c + 2] + ps[c + 3] + ps[c + 4];
            hc[c] = pc[c] + pc[c + 1] + pc[c + 2] + pc[c + 3] + pc[c + 4];
        }
    }
}

/* Phase 2: vertical 5-sums minus the centre give S, C; then u_q and d per pixel. */
static void fixed_phase2(void *vctx, size_t r0, size_t r1, int worker)
{
    struct fixed_ctx *x = vctx;
    size_t h = x->h, w = x->w;
    const struct kura_regs *regs = x->regs;
    bool ovf = false;
    for (size_t r = r0; r < r1; r++) {
        const int32_t *a[5], *b[5];
        for (int k = 0; k < 5; k++) {
            size_t rr = (r + 3 * h + (size_t)k - 2) % h;
            a[k] = x->hs + rr * w;
            b[k] = x->hc + rr * w;
        }
        const int32_t *sq = x->sq + r * w, *cq = x->cq + r * w;
        int32_t *uo = x->u_q ? x->u_q + r * w : NULL;
        int32_t *dout = x->d ? x->d + r * w : NULL;
        for (size_t c = 0; c < w; c++) {
            int32_t s = a[0][c] + a[1][c] + a[2][c] + a[3][c] + a[4][c] - sq[c];
            int32_t cs = b[0][c] + b[1][c] + b[2][c] + b[3][c] + b[4][c] - cq[c];
            int64_t raw = (int64_t)cq[c] * s - (int64_t)sq[c] * cs;
            int32_t uq = kura_u_q(raw);
            if (uo)
                uo[c] = uq;
            if (dout) {
                int64_t nb = kura_shr_floor((int64_t)regs->g * uq + (1 << 14), 15);
                int64_t ref = kura_shr_floor((int64_t)regs->r_s * cq[c] -
                                                 (int64_t)regs->r_c * sq[c] + (1 << 14),
                                             15);
                int64_t dv = nb + ref;
                ovf |= dv < INT32_MIN || dv > INT32_MAX;
                dout[c] = (int32_t)dv;
            }
        }
    }
    if (ovf)
        x->overflow[worker] = true;
}

int kura_fixed_drift_map(const int16_t *q, size_t h, size_t w, const struct kura_regs *regs,
                         int32_t *u_q, int32_t *d, struct thread_pool *pool)
{
    if (h == 0 || w == 0)
        return ERR_USAGE;
    size_t n;
    if (!mem_mul(h, w, &n) || n > SIZE_MAX / 16)
        return ERR_NOMEM;
    struct fixed_ctx x = {.q = q, .h = h, .w = w, .regs = regs, .u_q = u_q, .d = d};
    x.nworkers = pool ? pool_size(pool) : 1;
    int rc = ERR_NOMEM;
    x.sq = mem_alloc(n * 4 * sizeof(int32_t));
    x.row = mem_calloc((size_t)x.nworkers * 2 * (w + 4), sizeof(int32_t));
    x.overflow = mem_calloc((size_t)x.nworkers, sizeof(bool));
    if (!x.sq || !x.row || !x.overflow)
        goto fail;
    x.cq = x.sq + n;
    x.hs = x.cq + n;
    x.hc = x.hs + n;
    sinq_table();
    if (pool) {
        pool_for(pool, h, fixed_phase1, &x);
        pool_for(pool, h, fixed_phase2, &x);
    } else {
        fixed_phase1(&x, 0, h, 0);
        fixed_phase2(&x, 0, h, 0);
    }
    rc = 0;
    for (int k = 0; k < x.nworkers; k++)
        if (x.overflow[k])
            rc = ERR_DATA;
fail:
    mem_free(x.sq);
    mem_free(x.row);
    mem_free(x.overflow);
    return rc;
}

/* ---- float64 direct sum ---- */

struct float_ctx {
    const double *theta;
    size_t h, w;
    double k, kref, psi;
    double *u;
};

static void float_rows(void *vctx, size_t r0, size_t r1, int worker)
{
    (void)worker;
    struct float_ctx *x = vctx;
    size_t h = x->h, w = x->w;
    for (size_t r = r0; r < r1; r++) {
        for (size_t c = 0; c < w; c++) {
            double tp = x->theta[r * w + c];
            double sum = 0.0;
            /* Spec section 5: the 25 terms in row-major offset order, dy outer. */
            for (int dy = -2; dy <= 2; dy++) {
                const double *row = x->theta + ((r + 3 * h + (size_t)dy) % h) * w;
                for (int dx = -2; dx <= 2; dx++)
                    sum += sin(row[(c + 3 * w + (size_t)dx) % w] - tp);
            }
            /* SA-Kura eq. 3: (K/25) sum + K_ref sin(psi_ref - theta_p) */
            x->u[r * w + c] = x->k / 25.0 * sum + x->kref * sin(x->psi - tp);
        }
    }
}

void kura_float_drift_direct(const double *theta, size_t h, size_t w, double k, double kref,
                             double psi_ref, double *u, struct thread_pool *pool)
{
    struct float_ctx x = {theta, h, w, k, kref, psi_ref, u};
    if (pool)
        pool_for(pool, h, float_rows, &x);
    else
        float_rows(&x, 0, h, 0);
}

int kura_float_drift_direct_q(const int16_t *q, size_t h, size_t w, double k, double kref,
                              double psi_ref, double *u, struct thread_pool *pool)
{
    size_t n;
    if (!mem_mul(h, w, &n))
        return ERR_NOMEM;
    double *theta = mem_alloc((n ? n : 1) * sizeof(double));
    if (!theta)
        return ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        theta[i] = kura_q_theta(q[i]);
    kura_float_drift_direct(theta, h, w, k, kref, psi_ref, u, pool);
    mem_free(theta);
    return 0;
}

/* ---- error bound (spec section 5, derived) ---- */

double kura_eps_sample(void)
{
    double hstep = M_PI / 8192.0;
    return 1.5 / 32768.0 + hstep * hstep / 8.0;
}

double kura_delta_u(void)
{
    double e = kura_eps_sample();
    return 24.0 * (2.0 * sqrt(2.0) * e + 2.0 * e * e) + 1.0 / 65536.0;
}

double kura_drift_bound(double k, double kref, double psi_ref)
{
    return k / 25.0 * kura_delta_u() +
           kref * kura_eps_sample() * (fabs(sin(psi_ref)) + fabs(cos(psi_ref))) + 2.1e-8;
}
