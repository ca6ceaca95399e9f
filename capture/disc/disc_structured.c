/*
 * disc_structured: the structured synthetic DiSC mask source (see the header for the model;
 * docs/models.md "Structured synthetic masks" for the parameters and what it is not).
 */
#include "capture/disc/disc_structured.h"
#include "capture/disc/disc_structured_impl.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_ctr.h"
#include "capture/disc/disc_flops.h"
#include "capture/disc/disc_keep.h"
#include "capture/disc/dit_sampler.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/rng.h"
#include "common/threads.h"
#include "formats/bitset.h"
#include "formats/disc_hash.h"

#define P32_ONE ((uint64_t)1 << 32) /* probability 1 in 32-bit fixed point */

/* Stream purposes (xor-ed into the keys; any distinct constants). */
#define PUR_KEEP 0x6b656570ull    /* background keep words */
#define PUR_REFRESH 0x72667368ull /* background re-draw words */
#define PUR_EKEEP 0x656b6570ull   /* structural entry keep draws */
#define PUR_EREF 0x65726672ull    /* structural entry re-draw draws */

void disc_struct_params_default(struct disc_struct_params *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->model, sizeof p->model, "tiny");
    p->ctr_on = true;
    snprintf(p->ctr_target, sizeof p->ctr_target, "0.40");
    p->st_refresh = 2;
    snprintf(p->keep_masks, sizeof p->keep_masks, "none");
    p->s.radius = 4;
    p->s.decay = 2.0;
    p->s.stripes = 8;
    p->s.stripe_keep = 0.9;
    p->s.density = 0.5;
    p->s.spread = 1.0;
    p->s.row_sigma = 0.5;
    p->s.cluster = 4;
    p->s.jaccard = 0.8;
}

/* ---- counter-based draws ---- */

/* splitmix64 (common/rng.h), inline: the generator's inner loop. */
static inline uint64_t sm_next(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t mix(uint64_t x)
{
    return sm_next(&x);
}

/* 64 Bernoulli(p32 / 2^32) bits from the stream *s: each lane compares a uniform 32-bit
 * number with p32, most significant bit first, drawing one word per bit position until
 * every lane is decided (about 8 words). */
static inline uint64_t bern_word(uint64_t *s, uint64_t p32)
{
    if (p32 == 0)
        return 0;
    if (p32 >= P32_ONE)
        return ~0ull;
    uint64_t res = 0, und = ~0ull;
    const int lo = __builtin_ctzll(p32);
    for (int b = 31; b >= lo && und; b--) {
        uint64_t r = sm_next(s);
        if ((p32 >> b) & 1) {
            res |= und & ~r;
            und &= r;
        } else {
            und &= ~r;
        }
    }
    return res; /* lanes still undecided equal p in every bit: u >= p */
}

/* The stream of (row key, generation, word). */
static inline uint64_t word_stream(uint64_t rkey, uint32_t gen, uint32_t w)
{
    return mix(rkey ^ ((uint64_t)gen << 40) ^ (uint64_t)w);
}

/*
 * Background word w of a row at generation g: each bit holds the keep draw of the last
 * generation (<= g) that re-drew it; generation 0 draws every bit.
 */
static uint64_t bg_word(uint64_t kkey, uint64_t rkey, uint32_t g, uint64_t p32, uint64_t q32,
                        uint32_t w)
{
    if (p32 == 0)
        return 0;
    if (p32 >= P32_ONE)
        return ~0ull;
    uint64_t m = 0, pend = ~0ull;
    for (uint32_t lv = g; lv >= 1 && pend && q32; lv--) {
        uint64_t s = word_stream(rkey, lv, w);
        uint64_t take = pend & bern_word(&s, q32);
        if (take) {
            uint64_t s2 = word_stream(kkey, lv, w);
            m |= take & bern_word(&s2, p32);
        }
        pend &= ~take;
    }
    if (pend) {
        uint64_t s = word_stream(kkey, 0, w);
        m |= pend & bern_word(&s, p32);
    }
    return m;
}

/* Whether structural entry (i, j) of probability s is kept at generation g: the keep draw
 * of its last re-draw (<= g); the row re-draws with probability q (q64 in 64-bit fixed
 * point). */
static bool entry_kept(const struct head_ctx *hc, uint32_t i, uint32_t j, uint32_t g, double s,
                       double q, uint64_t q64)
{
    uint64_t ekey = mix(hc->key ^ (((uint64_t)i << 32) | j));
    uint32_t e = 0;
    for (uint32_t lv = g; lv >= 1 && q > 0; lv--)
        if (q >= 1.0 || mix(ekey ^ PUR_EREF ^ ((uint64_t)lv << 40)) < q64) {
            e = lv;
            break;
        }
    uint64_t u = mix(ekey ^ PUR_EKEEP ^ ((uint64_t)e << 40));
    return (double)(u >> 11) * 0x1.0p-53 < s;
}

/* ---- geometry ---- */

static bool is_stripe(const struct head_ctx *hc, uint32_t j)
{
    return (hc->stripe_bm[j >> 6] >> (j & 63)) & 1u;
}

/*
 * The structural entries of row i (self excluded): the window columns with their locality
 * probability (combined with the stripe's when the column is a stripe), then the stripe
 * columns outside the window. Probabilities are the unscaled s0. Returns the count (at most
 * n_win + n_stripes).
 */
static int row_entries(const struct disc_structured *c, const struct head_ctx *hc, uint32_t i,
                       uint32_t *js, double *ss)
{
    const int G = c->G, R = c->p.s.radius;
    const int y = (int)(i / (uint32_t)G), x = (int)(i % (uint32_t)G);
    const double ps = c->p.s.stripe_keep;
    int n = 0;
    for (int t = 0; t < c->n_win; t++) {
        int yy = y + c->win[t].dy, xx = x + c->win[t].dx;
        if (yy < 0 || yy >= G || xx < 0 || xx >= G)
            continue;
        uint32_t j = (uint32_t)(yy * G + xx);
        double s = c->win[t].p;
        if (is_stripe(hc, j))
            s = 1.0 - (1.0 - s) * (1.0 - ps);
        js[n] = j;
        ss[n++] = s;
    }
    for (int t = 0; t < hc->n_stripes; t++) {
        uint32_t j = hc->stripes[t];
        int jy = (int)(j / (uint32_t)G), jx = (int)(j % (uint32_t)G);
        if (j == i || (abs(jy - y) <= R && abs(jx - x) <= R))
            continue;
        js[n] = j;
        ss[n++] = ps;
    }
    return n;
}

/* Row i of the head at generation g into row (words words; padding zero). js, ss: entry
 * buffers of c->ecap. */
static void gen_row(const struct disc_structured *c, const struct head_ctx *hc, uint32_t i,
                    uint32_t g, uint64_t *row, uint32_t *js, double *ss)
{
    const uint64_t kkey = mix(hc->key ^ PUR_KEEP ^ ((uint64_t)i << 20));
    const uint64_t rkey = mix(hc->key ^ PUR_REFRESH ^ ((uint64_t)i << 20));
    const uint64_t p32 = hc->b32[i];
    const double q = hc->q[i];
    const uint64_t q32 = (uint64_t)llround(q * 4294967296.0);
    const uint64_t q64 = q >= 1.0 ? UINT64_MAX : (uint64_t)(q * 18446744073709551616.0);
    for (int w = 0; w < c->words; w++)
        row[w] = bg_word(kkey, rkey, g, p32, q32, (uint32_t)w);
    int n = row_entries(c, hc, i, js, ss);
    for (int t = 0; t < n; t++) {
        uint32_t j = js[t];
        if ((row[j >> 6] >> (j & 63)) & 1u)
            continue;
        if (entry_kept(hc, i, j, g, hc->scale * ss[t], q, q64))
            row[j >> 6] |= 1ull << (j & 63);
    }
    row[i >> 6] |= 1ull << (i & 63);
    if (c->N % 64)
        row[c->words - 1] &= (1ull << (c->N % 64)) - 1;
}

/* ---- smooth fields on the token grid ---- */

/* One pass of a box mean of radius r along rows (dx = 1) or columns (dx = G) of a G x G
 * field, the window clipped at the border. */
static void box_pass(const float *in, float *out, int G, int r, bool vertical)
{
    for (int a = 0; a < G; a++)
        for (int t = 0; t < G; t++) {
            int lo = t - r < 0 ? 0 : t - r, hi = t + r >= G ? G - 1 : t + r;
            double s = 0;
            for (int u = lo; u <= hi; u++)
                s += vertical ? in[(size_t)u * G + a] : in[(size_t)a * G + u];
            out[vertical ? (size_t)t * G + a : (size_t)a * G + t] = (float)(s / (hi - lo + 1));
        }
}

/*
 * A smooth random field of zero mean and unit variance on the G x G grid: N(0, 1) noise of
 * the substream (seed, purpose, a, b), three box means of radius r each way (close to a
 * Gaussian blur), then standardised. r = 0 leaves white noise.
 */
static void smooth_field(float *f, float *tmp, int G, int r, uint64_t seed, const char *purpose,
                         uint64_t a, uint64_t b)
{
    const size_t n = (size_t)G * G;
    struct rng g;
    rng_stream(&g, seed, purpose, a, b);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)rng_normal(&g);
    for (int pass = 0; pass < 3 && r > 0; pass++) {
        box_pass(f, tmp, G, r, false);
        box_pass(tmp, f, G, r, true);
    }
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++)
        s += f[i];
    double mean = s / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += ((double)f[i] - mean) * ((double)f[i] - mean);
    double sd = sqrt(ss / (double)n);
    for (size_t i = 0; i < n; i++)
        f[i] = sd > 0 ? (float)(((double)f[i] - mean) / sd) : 0.0f;
}

/* ---- per-head setup ---- */

/* The head's stripe columns: distinct, uniform, from the substream of (block, head). */
static void head_stripes(struct disc_structured *c, struct head_ctx *hc, int blk, int h)
{
    struct rng g;
    rng_stream(&g, c->p.seed, "struct-stripes", (uint64_t)blk, (uint64_t)h);
    memset(hc->stripe_bm, 0, (size_t)c->words * sizeof(uint64_t));
    hc->n_stripes = c->p.s.stripes < c->N - 1 ? c->p.s.stripes : c->N - 1;
    for (int t = 0; t < hc->n_stripes;) {
        uint32_t j = (uint32_t)rng_below(&g, (uint64_t)c->N);
        if (is_stripe(hc, j))
            continue;
        hc->stripe_bm[j >> 6] |= 1ull << (j & 63);
        hc->stripes[t++] = j;
    }
}

/* Expected nnz of the whole mask for background factor cf (structure at scale 1). */
static double expected_nnz(const struct disc_structured *c, const struct head_ctx *hc,
                           const double *Q, double cf)
{
    double e = 0;
    for (int i = 0; i < c->N; i++) {
        double b = cf * hc->m[i];
        b = b > 1.0 ? 1.0 : b;
        e += 1.0 + Q[i] + b * ((double)c->N - 1.0 - Q[i]);
    }
    return e;
}

/*
 * The structural scale and the background factor that give the head's target density in
 * expectation: E nnz_i = 1 + Q_i + b_i (N - 1 - Q_i), Q_i = sum of the row's structural
 * probabilities; structure alone too dense scales it down with no background.
 */
static void head_density(struct disc_structured *c, struct head_ctx *hc, double *Q)
{
    const double N = c->N, target = hc->density * N * N;
    double base = 0, sq = 0, mmin = INFINITY;
    for (int i = 0; i < c->N; i++) {
        base += 1.0 + Q[i];
        sq += Q[i];
        mmin = hc->m[i] < mmin ? hc->m[i] : mmin;
    }
    hc->scale = 1.0, hc->c = 0.0;
    if (target <= base) {
        hc->scale = sq > 0 ? (target - N) / sq : 0.0;
        hc->scale = hc->scale < 0 ? 0 : hc->scale > 1 ? 1 : hc->scale;
    } else {
        double lo = 0, hi = 1.0 / mmin;
        for (int it = 0; it < 64; it++) {
            double mid = 0.5 * (lo + hi);
            if (expected_nnz(c, hc, Q, mid) < target)
                lo = mid;
            else
                hi = mid;
        }
        hc->c = 0.5 * (lo + hi);
    }
    for (int i = 0; i < c->N; i++) {
        double b = hc->c * hc->m[i];
        b = b > 1.0 ? 1.0 : b;
        hc->b[i] = b;
        hc->b32[i] = (uint64_t)llround(b * 4294967296.0);
    }
}

/*
 * The re-draw probability q of the head that gives the set Jaccard between consecutive
 * generations of its mask in expectation (every row regenerated). Per entry of structural
 * probability s and background b (independent, each re-drawn with probability q), with
 * A = 1 - s, B = 1 - b:
 *   P(kept at both) = 1 - AB - q AB (s + b) + q^2 AB s b,
 *   P(kept at either) = 1 - AB + q AB (s + b) - q^2 AB s b;
 * summed over the mask's entries C0 = sum (1 - AB), C1 = sum AB (s + b), C2 = sum AB s b,
 * J(q) = (C0 - q C1 + q^2 C2) / (C0 + q C1 - q^2 C2) = J gives
 *   C2 q^2 - C1 q + kappa C0 = 0,  kappa = (1 - J) / (1 + J),
 * whose smaller root is taken; none in [0, 1] means out of reach: q = 1 (independent
 * re-draws; the Jaccard stays above J). One q for the head, not one per row: dense rows
 * could not reach J alone. A subset of rows (those CTR computes) has J up to the sampling
 * of the smooth row field, which shrinks as N grows.
 */
static void head_jaccard(struct disc_structured *c, struct head_ctx *hc, uint32_t *js, double *ss)
{
    double C0 = 0, C1 = 0, C2 = 0;
    for (int i = 0; i < c->N; i++) {
        int n = row_entries(c, hc, (uint32_t)i, js, ss);
        double b = hc->b[i], nb = (double)c->N - 1.0 - n;
        C0 += 1.0 + nb * b; /* the diagonal, the background entries */
        C1 += nb * (1.0 - b) * b;
        for (int t = 0; t < n; t++) {
            double s = hc->scale * ss[t], ab = (1.0 - s) * (1.0 - b);
            C0 += 1.0 - ab;
            C1 += ab * (s + b);
            C2 += ab * s * b;
        }
    }
    const double J = c->p.s.jaccard, kappa = (1.0 - J) / (1.0 + J);
    double q;
    if (kappa <= 0)
        q = 0;
    else if (C2 <= 0)
        q = C1 > 0 ? kappa * C0 / C1 : 2.0;
    else {
        double disc = C1 * C1 - 4.0 * C2 * kappa * C0;
        q = disc < 0 ? 2.0 : 2.0 * kappa * C0 / (C1 + sqrt(disc));
    }
    hc->short_j = q > 1.0 && C1 > 0; /* C1 = 0: every entry certain, nothing to re-draw */
    q = q > 1.0 ? 1.0 : q;
    for (int i = 0; i < c->N; i++)
        hc->q[i] = q;
    hc->jaccard = C1 > 0 ? (C0 - q * C1 + q * q * C2) / (C0 + q * C1 - q * q * C2) : 1.0;
}

/* Everything generating the rows of (block, head) needs; the same at every step. */
static void head_setup(struct disc_structured *c, int blk, int h)
{
    struct head_ctx *hc = &c->hc;
    const int N = c->N;
    uint64_t k = mix(c->p.seed ^ rng_fnv1a64("struct-mask"));
    hc->key = mix(mix(k ^ (uint64_t)blk) ^ (uint64_t)h);
    hc->density = c->targets[(size_t)blk * c->H + h];
    head_stripes(c, hc, blk, h);
    smooth_field(c->field, c->ftmp, c->G, c->p.s.cluster, c->p.seed, "struct-rows", (uint64_t)blk,
                 (uint64_t)h);
    const double sg = c->p.s.row_sigma;
    for (int i = 0; i < N; i++)
        hc->m[i] = exp(sg * c->field[i] - 0.5 * sg * sg);
    /* Q_i into b: head_density reads all of Q before it writes b */
    double *Q = hc->b;
    for (int i = 0; i < N; i++) {
        int n = row_entries(c, hc, (uint32_t)i, c->ejs, c->ess);
        double q = 0;
        for (int t = 0; t < n; t++)
            q += c->ess[t];
        Q[i] = q;
    }
    head_density(c, hc, Q);
    head_jaccard(c, hc, c->ejs, c->ess);
}

/* ---- mask statistics and bits ---- */

struct rows_job {
    struct disc_structured *c;
    const uint32_t *rows; /* NULL: row t is t */
    bool stats;           /* per-row statistics into c->rs, else the rows into c->kbits */
};

static void rows_chunk(void *ctx, size_t begin, size_t end, int worker)
{
    struct rows_job *j = ctx;
    struct disc_structured *c = j->c;
    const size_t sl = disc_lb_scratch_len(c->lb);
    uint64_t *row = c->wrow + (size_t)worker * c->words;
    uint32_t *js = c->ejs + (size_t)worker * c->ecap;
    double *ss = c->ess + (size_t)worker * c->ecap;
    for (size_t t = begin; t < end; t++) {
        uint32_t i = j->rows ? j->rows[t] : (uint32_t)t;
        if (j->stats) {
            gen_row(c, &c->hc, i, c->row_gen[i], row, js, ss);
            disc_lb_row(c->lb, row, c->scratch + (size_t)worker * sl, &c->rs[t]);
        } else {
            uint64_t *kr = c->kbits + (size_t)i * c->words;
            gen_row(c, &c->hc, i, c->row_gen[i], kr, js, ss);
            c->krow_nnz[i] = (uint32_t)bitset_words_popcount(kr, (size_t)c->words);
        }
    }
}

/* The statistics of the set-up head's mask over the step's computed rows, summed in
 * ascending row order as disc_lb_mask sums them (so equal for any thread count). */
static void mask_stats(struct disc_structured *c, struct disc_lb_acc *acc)
{
    disc_lb_acc_init(acc, c->lb);
    if (c->nk == 0)
        return;
    struct rows_job j = {c, (const uint32_t *)c->kept, true};
    pool_for(c->pool, (size_t)c->nk, rows_chunk, &j);
    for (int t = 0; t < c->nk; t++)
        disc_lb_acc_add(acc, &c->rs[t]);
}

/* Every stored row of the set-up head's mask into c->kbits (as little-endian bytes) and
 * c->krow_nnz. */
static int mask_bits(struct disc_structured *c, struct errmsg *e)
{
    const size_t nw = (size_t)c->N * c->words;
    if (!c->kbits) {
        c->kbits = mem_alloc(nw * sizeof(uint64_t));
        c->krow_nnz = mem_alloc((size_t)c->N * sizeof(uint32_t));
        if (!c->kbits || !c->krow_nnz)
            return errmsg_set(e, ERR_NOMEM, "out of memory for a kept %d x %d mask", c->N, c->N);
    }
    struct rows_job j = {c, NULL, false};
    pool_for(c->pool, (size_t)c->N, rows_chunk, &j);
    uint8_t *b = (uint8_t *)c->kbits;
    for (size_t w = 0; w < nw; w++) { /* in place: byte 8w + q is read before written */
        uint64_t v = c->kbits[w];
        for (int q = 0; q < 8; q++)
            b[w * 8 + (size_t)q] = (uint8_t)(v >> (8 * q));
    }
    return 0;
}

/* ---- records ---- */

/* The CTR token mask of step k (docs/disc.md#ctr-selection: step 0 keeps all; R N tokens pruned
 * after): the tokens of lowest value of the step's smooth field are pruned. */
static void select_tokens(struct disc_structured *c, int k)
{
    const int N = c->N;
    if (k == 0 || !c->p.ctr_on || c->n_prune == 0) {
        c->nk = N;
        for (int i = 0; i < N; i++)
            c->kept[i] = i;
        memset(c->tokmask, 0, (size_t)c->words * sizeof(uint64_t));
        for (int i = 0; i < N; i++)
            c->tokmask[i >> 6] |= 1ull << (i & 63);
        return;
    }
    smooth_field(c->field, c->ftmp, c->G, c->p.s.cluster, c->p.seed, "struct-ctr", (uint64_t)k, 0);
    float mn = INFINITY;
    for (int i = 0; i < N; i++)
        mn = c->field[i] < mn ? c->field[i] : mn;
    for (int i = 0; i < N; i++)
        c->field[i] -= mn; /* d_i >= 0 as disc_ctr_tau_for_prune wants */
    float tau = disc_ctr_tau_for_prune(c->field, (size_t)N, c->n_prune);
    c->nk = disc_ctr_select(c->field, (size_t)N, tau, c->kept, c->tokmask);
}

static int emit_step(struct disc_structured *c, struct capture_sink *sink, int k, bool gen,
                     uint64_t *fd, uint64_t *fc, uint64_t *fa, struct errmsg *e)
{
    const size_t words = (size_t)c->words;
    Acceltrace__DiscStep s = ACCELTRACE__DISC_STEP__INIT;
    s.k = (uint32_t)k;
    s.t = c->sched.t[k];
    s.tau = NAN; /* no latent: tau and the difference statistics are not defined */
    s.n_kept = (uint32_t)c->nk;
    s.prune_ratio = 1.0 - (double)c->nk / c->N;
    uint8_t *tmb = mem_alloc(words * 8);
    if (!tmb)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t w = 0; w < words; w++)
        for (int i = 0; i < 8; i++)
            tmb[w * 8 + (size_t)i] = (uint8_t)(c->tokmask[w] >> (8 * i));
    s.token_mask.data = tmb;
    s.token_mask.len = words * 8;
    s.diff_mean = s.diff_rms = s.diff_max = NAN;
    s.d_p50 = s.d_p90 = s.d_p99 = s.d_max = NAN;
    s.n_flops_dense = s.n_flops_ctr = s.n_flops_all = DISC_F_COUNT;
    s.flops_dense = fd;
    s.flops_ctr = fc;
    s.flops_all = fa;
    s.rel_err = NAN;
    s.st_generated = gen;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_DISC_STEP;
    rec.disc_step = &s;
    struct trace_key key = {k, -1, -1};
    int rc = capture_emit(sink, &rec, &key, e);
    mem_free(tmb);
    return rc;
}

/* The DiscMask records of step k (statistics in c->acc), kept bits regenerated. */
static int emit_masks(struct disc_structured *c, struct capture_sink *sink, int k, bool gen,
                      struct errmsg *e)
{
    struct disc_mask_lb_buf lb;
    const double cells = (double)c->nk * c->N;
    for (int blk = 0; blk < c->L; blk++)
        for (int h = 0; h < c->H; h++) {
            const struct disc_lb_acc *a = &c->acc[(size_t)blk * c->H + h];
            Acceltrace__DiscMask m = ACCELTRACE__DISC_MASK__INIT;
            m.step = (uint32_t)k;
            m.block = (uint32_t)blk;
            m.head = (uint32_t)h;
            m.generated = gen;
            m.rows = (uint32_t)c->nk;
            m.nnz = a->nnz;
            m.sparsity = c->nk ? 1.0 - (double)a->nnz / cells : NAN;
            m.theta = NAN; /* no softmax threshold */
            m.n_cols = (uint32_t)c->N;
            disc_mask_set_lb(&m, a, &lb);
            c->sum_nnz += (double)a->nnz, c->sum_cells += cells;
            c->blk_nnz[blk] += (double)a->nnz, c->blk_cells[blk] += cells;
            if (gen)
                c->gen_nnz += (double)a->nnz, c->gen_cells += cells;
            else
                c->reuse_nnz += (double)a->nnz, c->reuse_cells += cells;
            if (disc_keep_has(&c->keep, k, 0, blk, h)) {
                head_setup(c, blk, h);
                int rc = mask_bits(c, e);
                if (rc)
                    return rc;
                m.kept = true;
                m.n_row_nnz = (size_t)c->N;
                m.row_nnz = c->krow_nnz;
                m.bits.data = (uint8_t *)c->kbits;
                m.bits.len = (size_t)c->N * c->words * 8;
                c->res.masks_kept++;
            }
            Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
            rec.body_case = ACCELTRACE__RECORD__BODY_DISC_MASK;
            rec.disc_mask = &m;
            struct trace_key key = {k, blk, h};
            int rc = capture_emit(sink, &rec, &key, e);
            if (rc)
                return rc;
            c->res.masks_written++;
        }
    return 0;
}

/* Step k: tokens, stored-row generations, every mask's statistics, then the records. */
static int run_step(struct disc_structured *c, struct capture_sink *sink, int k, struct errmsg *e)
{
    const bool gen = k % c->p.st_refresh == 0;
    select_tokens(c, k);
    if (gen)
        for (int t = 0; t < c->nk; t++)
            c->row_gen[c->kept[t]] = (uint32_t)(k / c->p.st_refresh);
    if (k > 0)
        c->prune_sum += 1.0 - (double)c->nk / c->N;
    uint64_t *nnz_block = c->nnz_block;
    memset(nnz_block, 0, (size_t)c->L * sizeof *nnz_block);
    double jsum = 0;
    for (int blk = 0; blk < c->L; blk++)
        for (int h = 0; h < c->H; h++) {
            head_setup(c, blk, h);
            if (k == 0) {
                jsum += c->hc.jaccard;
                c->res.jaccard_short += c->hc.short_j;
            }
            struct disc_lb_acc *a = &c->acc[(size_t)blk * c->H + h];
            mask_stats(c, a);
            nnz_block[blk] += a->nnz;
            capture_progress_update(sink, ((uint64_t)k * c->L + blk) * c->H + h + 1);
        }
    if (k == 0)
        c->res.jaccard_mean = jsum / ((double)c->L * c->H);
    uint64_t fd[DISC_F_COUNT] = {0}, fc[DISC_F_COUNT] = {0}, fa[DISC_F_COUNT] = {0};
    disc_flops_step(&c->cfg, 1, (uint64_t)c->nk, gen ? DISC_FLOP_ST_GEN : DISC_FLOP_ST_REUSE,
                    nnz_block, fd, fc, fa);
    for (int i = 0; i < DISC_F_COUNT; i++) {
        c->flops_dense[i] += fd[i];
        c->flops_ctr[i] += fc[i];
        c->flops_all[i] += fa[i];
    }
    int rc = emit_step(c, sink, k, gen, fd, fc, fa, e);
    return rc ? rc : emit_masks(c, sink, k, gen, e);
}

static int emit_summary(struct disc_structured *c, struct capture_sink *sink, struct errmsg *e)
{
    struct disc_struct_result *r = &c->res;
    Acceltrace__DiscSummary s = ACCELTRACE__DISC_SUMMARY__INIT;
    s.mean_prune_ratio = r->mean_prune_ratio;
    s.sparsity = r->sparsity;
    for (int b = 0; b < c->L; b++)
        c->sparsity_block[b] = c->blk_cells[b] > 0 ? 1.0 - c->blk_nnz[b] / c->blk_cells[b] : NAN;
    s.n_sparsity_per_block = (size_t)c->L;
    s.sparsity_per_block = c->sparsity_block;
    s.sparsity_generation = c->gen_cells > 0 ? 1.0 - c->gen_nnz / c->gen_cells : NAN;
    s.sparsity_reuse = c->reuse_cells > 0 ? 1.0 - c->reuse_nnz / c->reuse_cells : NAN;
    s.n_flops_dense = s.n_flops_ctr = s.n_flops_all = DISC_F_COUNT;
    s.flops_dense = c->flops_dense;
    s.flops_ctr = c->flops_ctr;
    s.flops_all = c->flops_all;
    double fd = (double)disc_flops_total(c->flops_dense);
    double fc = (double)disc_flops_total(c->flops_ctr);
    double fa = (double)disc_flops_total(c->flops_all);
    double sd = 0, sc = 0, sa = 0;
    for (int i = DISC_F_SA_QKV; i <= DISC_F_SA_PROJ; i++) {
        sd += (double)c->flops_dense[i];
        sc += (double)c->flops_ctr[i];
        sa += (double)c->flops_all[i];
    }
    /* Fig. 17 quantities (docs/disc.md#quality-and-flop-accounting), as the capture's */
    s.reduction_ctr = 1.0 - fc / fd;
    s.reduction_st = (fc - fa) / fd;
    s.sa_reduction_ctr = 1.0 - sc / sd;
    s.sa_reduction_st = (sc - sa) / sd;
    s.sa_share = sd / fd;
    s.masks_written = r->masks_written;
    s.masks_kept = r->masks_kept;
    Acceltrace__Summary sm = ACCELTRACE__SUMMARY__INIT;
    sm.workload = "disc";
    sm.disc = &s;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_SUMMARY;
    rec.summary = &sm;
    return capture_emit(sink, &rec, NULL, e);
}

int disc_struct_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    struct disc_structured *c = inst;
    const double t0 = progress_now_s();
    capture_progress_begin(sink, (uint64_t)c->K * c->L * c->H);
    int rc = 0;
    for (int k = 0; k < c->K && !rc; k++)
        rc = run_step(c, sink, k, e);
    if (rc)
        return rc;
    capture_progress_end(sink);
    struct disc_struct_result *r = &c->res;
    r->mean_prune_ratio = c->K > 1 ? c->prune_sum / (c->K - 1) : NAN;
    r->sparsity = c->sum_cells > 0 ? 1.0 - c->sum_nnz / c->sum_cells : NAN;
    r->wall_s = progress_now_s() - t0;
    return emit_summary(c, sink, e);
}
