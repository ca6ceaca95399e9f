/*
 * kura_fixed: bit-exact fixed-point Kuramoto drift (docs/kura.md#fixed-point-drift).
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
static int32_t sinq_all[65536]; /* int32 so vector gathers apply */
/* (sin_q << 16) | (cos_q & 0xFFFF) per code: one gather gives both */
static uint32_t sincos_all[65536];
static pthread_once_t lut_once = PTHREAD_ONCE_INIT;

/* docs/kura.md#sde-and-schedule wrap; kura_sde and the phase images use it (kura_fixed.h). */
double kura_wrap(double x)
{
    /* docs/kura.md#sde-and-schedule: the correction keeps every result in [-pi, pi). */
    double r = x - 2.0 * M_PI * floor((x + M_PI) / (2.0 * M_PI));
    if (r < -M_PI)
        r += 2.0 * M_PI;
    else if (r >= M_PI)
        r -= 2.0 * M_PI;
    return r;
}

/* docs/kura.md#fixed-point-drift: round(x) = floor(x + 0.5) in double. */
static double round_half_up(double x)
{
    return floor(x + 0.5);
}

/* The interpolation of docs/kura.md#fixed-point-drift on the raw LUT (used once to fill sinq_all).
 */
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
    /* LUT [paper: quarter wave, 4096 samples; docs/kura.md#fixed-point-drift: guard and clamp] */
    for (int k = 0; k < KURA_LUT_N; k++) {
        double v = round_half_up(32768.0 * sin(M_PI * k / 8192.0));
        lut[k] = (int16_t)(v > 32767.0 ? 32767.0 : v);
    }
    for (uint32_t u = 0; u < 65536u; u++)
        sinq_all[u] = sin_q_from_lut((uint16_t)u);
    for (uint32_t u = 0; u < 65536u; u++)
        sincos_all[u] =
            ((uint32_t)(uint16_t)sinq_all[u] << 16) | (uint16_t)sinq_all[(uint16_t)(u + 0x4000u)];
}

const int16_t *kura_lut(void)
{
    pthread_once(&lut_once, lut_build);
    return lut;
}

static const int32_t *sinq_table(void)
{
    pthread_once(&lut_once, lut_build);
    return sinq_all;
}

/* The slow but general path: any finite theta. */
static int16_t quantize_general(double theta)
{
    if (!isfinite(theta))
        return 0; /* outside the contract; defined rather than undefined */
    /* docs/kura.md#fixed-point-drift: product first, then one division; wrap16 of the rounded
     * value. */
    double v = round_half_up((theta * 32768.0) / M_PI);
    v = fmod(v, 65536.0); /* exact on integers; keeps the conversion in range */
    int64_t i = (int64_t)v;
    return (int16_t)(uint16_t)((uint64_t)i & 0xFFFFu);
}

/*
 * Fast exact form of quantize for |(theta*32768)/pi + 0.5| < 2^52: floor by truncation
 * and one correction (no libm call, vectorizable). Returns false when out of that range.
 */
static inline bool quantize_fast(double theta, int16_t *q)
{
    double v = (theta * 32768.0) / M_PI + 0.5;
    bool ok = v > -4503599627370496.0 && v < 4503599627370496.0; /* also false for NaN */
    int64_t i = (int64_t)(ok ? v : 0.0);
    i -= (double)i > v; /* floor(v) */
    *q = (int16_t)(uint16_t)((uint64_t)i & 0xFFFFu);
    return ok;
}

int16_t kura_quantize(double theta)
{
    int16_t q;
    return quantize_fast(theta, &q) ? q : quantize_general(theta);
}

KURA_HOT void kura_quantize_map(const double *theta, size_t n, int16_t *q)
{
    bool all_ok = true;
    for (size_t i = 0; i < n; i++)
        all_ok &= quantize_fast(theta[i], &q[i]);
    if (!all_ok)
        for (size_t i = 0; i < n; i++)
            q[i] = kura_quantize(theta[i]);
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

/* Rounds x to int32 or fails (docs/kura.md#fixed-point-drift registers). */
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
    /* docs/kura.md#fixed-point-drift (paper eq. 7, 8): G = round(K/(25 pi) 2^31), R = round(K_ref
     * trig/pi 2^31). */
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
    const int32_t *tab = sinq_table();
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

/*
 * Rows stream through a per-worker ring of 5 rows (sin_q, cos_q and their horizontal
 * 5-sums), so the working set stays in cache and nothing map-sized is allocated. A worker
 * handling rows [r0, r1) also computes the 4 halo rows around its chunk.
 */
struct fixed_ctx {
    const int16_t *q;
    size_t h, w;
    const struct kura_regs *regs;
    int32_t *scratch;  /* per worker: 4 rings of 5 rows + 2 padded rows */
    size_t per_worker; /* int32 entries per worker */
    int32_t *u_q, *d;
    bool *overflow; /* per worker */
};

/* sin_q, cos_q of one row by one gather per code (restrict: vectorizable). */
static inline void lookup_row(size_t w, const uint32_t *restrict tab, const int16_t *restrict qr,
                              int32_t *restrict sq, int32_t *restrict cq)
{
    for (size_t c = 0; c < w; c++) {
        uint32_t v = tab[(uint16_t)qr[c]];
        sq[c] = (int16_t)(uint16_t)(v >> 16);
        cq[c] = (int16_t)(uint16_t)(v & 0xFFFFu);
    }
}

/* Periodic horizontal 5-sums of one row: plain interior (vectorizable), wrapped edges. */
static inline void hsum_row(size_t w, const int32_t *restrict v, int32_t *restrict out)
{
    size_t lo = w >= 5 ? 2 : w, hi = w >= 5 ? w - 2 : w;
    for (size_t c = lo; c < hi; c++)
        out[c] = v[c - 2] + v[c - 1] + v[c] + v[c + 1] + v[c + 2];
    for (size_t c = 0; c < w; c++) {
        if (c == lo && lo < hi)
            c = hi; /* skip the interior */
        if (c >= w)
            break;
        int32_t acc = 0;
        for (size_t k = 0; k < 5; k++)
            acc += v[(c + 3 * w + k - 2) % w];
        out[c] = acc;
    }
}

/* Fills ring slot `slot` with image row j (periodic): sin_q, cos_q, horizontal 5-sums. */
KURA_HOT static void fixed_row(const struct fixed_ctx *x, int32_t *base, long long j, size_t slot)
{
    const uint32_t *tab = sincos_all;
    size_t h = x->h, w = x->w;
    size_t r = (size_t)(((j % (long long)h) + (long long)h) % (long long)h);
    int32_t *sq = base + slot * w, *cq = base + (5 + slot) * w;
    int32_t *hs = base + (10 + slot) * w, *hc = base + (15 + slot) * w;
    lookup_row(w, tab, x->q + r * w, sq, cq);
    hsum_row(w, sq, hs);
    hsum_row(w, cq, hc);
}

/*
 * One output row: S, C over the 24 non-centre offsets [paper eq. 6] from the five
 * horizontal sums, u_q and d. Branch-free so it vectorizes; returns true if some d left
 * int32.
 */
KURA_HOT static bool fixed_pixels(size_t w, const int32_t *restrict a0, const int32_t *restrict a1,
                                  const int32_t *restrict a2, const int32_t *restrict a3,
                                  const int32_t *restrict a4, const int32_t *restrict b0,
                                  const int32_t *restrict b1, const int32_t *restrict b2,
                                  const int32_t *restrict b3, const int32_t *restrict b4,
                                  const int32_t *restrict sq, const int32_t *restrict cq,
                                  const struct kura_regs *regs, int32_t *restrict uo,
                                  int32_t *restrict dout)
{
    const int64_t g = regs->g, rs = regs->r_s, rc = regs->r_c;
    int64_t dmin = 0, dmax = 0;
    for (size_t c = 0; c < w; c++) {
        int32_t s = a0[c] + a1[c] + a2[c] + a3[c] + a4[c] - sq[c];
        int32_t cs = b0[c] + b1[c] + b2[c] + b3[c] + b4[c] - cq[c];
        int64_t raw = (int64_t)cq[c] * s - (int64_t)sq[c] * cs;
        int32_t uq = (int32_t)kura_shr_floor(raw + (1 << 14), 15);
        uo[c] = uq;
        int64_t dv = kura_shr_floor(g * uq + (1 << 14), 15) +
                     kura_shr_floor(rs * cq[c] - rc * sq[c] + (1 << 14), 15);
        dmin = dv < dmin ? dv : dmin;
        dmax = dv > dmax ? dv : dmax;
        dout[c] = (int32_t)dv;
    }
    return dmin < INT32_MIN || dmax > INT32_MAX;
}

static void fixed_rows(void *vctx, size_t r0, size_t r1, int worker)
{
    struct fixed_ctx *x = vctx;
    if (r0 >= r1)
        return;
    size_t w = x->w;
    int32_t *base = x->scratch + (size_t)worker * x->per_worker;
    const struct kura_regs *regs = x->regs;
    long long first = (long long)r0 - 2; /* ring slot of row j is (j - first) mod 5 */
    for (long long j = first; j < (long long)r0 + 2; j++)
        fixed_row(x, base, j, (size_t)(j - first) % 5);
    bool ovf = false;
    for (size_t r = r0; r < r1; r++) {
        long long jn = (long long)r + 2;
        fixed_row(x, base, jn, (size_t)(jn - first) % 5);
        size_t sl[5];
        for (int k = 0; k < 5; k++)
            sl[k] = (size_t)((long long)r - 2 + k - first) % 5;
        const int32_t *a0 = base + (10 + sl[0]) * w, *a1 = base + (10 + sl[1]) * w,
                      *a2 = base + (10 + sl[2]) * w, *a3 = base + (10 + sl[3]) * w,
                      *a4 = base + (10 + sl[4]) * w;
        const int32_t *b0 = base + (15 + sl[0]) * w, *b1 = base + (15 + sl[1]) * w,
                      *b2 = base + (15 + sl[2]) * w, *b3 = base + (15 + sl[3]) * w,
                      *b4 = base + (15 + sl[4]) * w;
        const int32_t *sq = base + sl[2] * w, *cq = base + (5 + sl[2]) * w;
        int32_t *spill = base + 20 * w + 2 * (w + 4); /* for outputs the caller skipped */
        int32_t *uo = x->u_q ? x->u_q + r * w : spill;
        int32_t *dout = x->d ? x->d + r * w : spill + w;
        ovf |= fixed_pixels(w, a0, a1, a2, a3, a4, b0, b1, b2, b3, b4, sq, cq, regs, uo, dout);
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
    if (!mem_mul(h, w, &n) || w > SIZE_MAX / 64)
        return ERR_NOMEM;
    struct fixed_ctx x = {.q = q, .h = h, .w = w, .regs = regs, .u_q = u_q, .d = d};
    int nworkers = pool ? pool_size(pool) : 1;
    x.per_worker = 20 * w + 2 * (w + 4) + 2 * w; /* rings, padded rows, u_q/d spill rows */
    int rc = ERR_NOMEM;
    x.scratch = mem_alloc((size_t)nworkers * x.per_worker * sizeof(int32_t));
    x.overflow = mem_calloc((size_t)nworkers, sizeof(bool));
    if (!x.scratch || !x.overflow)
        goto fail;
    sinq_table();
    if (pool)
        pool_for(pool, h, fixed_rows, &x);
    else
        fixed_rows(&x, 0, h, 0);
    rc = 0;
    for (int k = 0; k < nworkers; k++)
        if (x.overflow[k])
            rc = ERR_DATA;
fail:
    mem_free(x.scratch);
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
            /* docs/kura.md#fixed-point-drift: the 25 terms in row-major offset order, dy outer. */
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

/* ---- error bound (docs/kura.md#fixed-point-drift, derived) ---- */

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
