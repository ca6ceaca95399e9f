/*
 * salca_select: selection steps of docs/salca.md#selection, baselines (6), metrics (7).
 * Compiled without FP contraction: the INT8 score formula must round as written.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "capture/salca/salca_select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

__extension__ typedef unsigned __int128 u128;

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int salca_ratio_parse(const char *s, struct salca_ratio *out)
{
    uint64_t num = 0, den = 1;
    int digits = 0;
    bool dot = false, any = false;
    if (!s || !*s)
        return ERR_USAGE;
    for (const char *p = s; *p; p++) {
        if (*p == '.') {
            if (dot)
                return ERR_USAGE;
            dot = true;
            continue;
        }
        if (*p < '0' || *p > '9')
            return ERR_USAGE;
        any = true;
        if (++digits > 18)
            return ERR_USAGE;
        num = num * 10 + (uint64_t)(*p - '0');
        if (dot)
            den *= 10;
    }
    if (!any)
        return ERR_USAGE;
    uint64_t g = gcd_u64(num, den);
    if (g == 0)
        g = 1;
    out->num = num / g;
    out->den = den / g;
    return 0;
}

uint64_t salca_ratio_ceil_mul(struct salca_ratio rho, uint64_t n)
{
    /* docs/salca.md#k-rule: (n*num + den - 1) div den; num, den < 10^18 and n < 2^32 keep this in
     * range for the ratios the CLI accepts (retention <= 1 has num <= den). */
    u128 v = (u128)n * rho.num + rho.den - 1;
    return (uint64_t)(v / rho.den);
}

uint32_t salca_k_fixed(uint32_t n, struct salca_ratio rho, uint32_t k_min)
{
    uint64_t k = salca_ratio_ceil_mul(rho, n);
    if (k < k_min)
        k = k_min;
    if (k > n)
        k = n;
    return (uint32_t)k;
}

uint32_t salca_k_dynamic(const uint32_t hist[256], uint32_t n, double kappa, double p_mass,
                         uint32_t k_min)
{
    double w[256], total = 0.0;
    for (int b = 255; b >= 0; b--) {
        w[b] = (double)hist[b] * exp(kappa * (double)(b - 255));
        total += w[b];
    }
    double target = p_mass * total, run = 0.0;
    uint64_t count = 0, kdyn = n;
    for (int b = 255; b >= 0; b--) {
        run += w[b];
        count += hist[b];
        if (run >= target) {
            kdyn = count;
            break;
        }
    }
    if (kdyn < k_min)
        kdyn = k_min;
    if (kdyn > n)
        kdyn = n;
    return (uint32_t)kdyn;
}

void salca_int8_scores(const float *a, uint32_t n, uint8_t *out, float *lo_out, float *hi_out)
{
    float lo = n ? a[0] : 0.0f, hi = lo;
    for (uint32_t i = 1; i < n; i++) {
        if (a[i] < lo)
            lo = a[i];
        if (a[i] > hi)
            hi = a[i];
    }
    if (lo_out)
        *lo_out = lo;
    if (hi_out)
        *hi_out = hi;
    if (hi == lo) {
        memset(out, 255, n);
        return;
    }
    double dlo = lo, range = (double)hi - dlo;
    for (uint32_t i = 0; i < n; i++) {
        /* docs/salca.md#int8-scores: floor((A - lo)*255/(hi - lo) + 0.5) in double, left to right
         */
        double v = floor(((double)a[i] - dlo) * 255.0 / range + 0.5);
        out[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

void salca_maxpool_u8(const uint8_t *a, uint32_t n, uint32_t w, uint8_t *out)
{
    uint32_t h = w / 2;
    if (h == 0) {
        memcpy(out, a, n);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t lo = i > h ? i - h : 0;
        uint32_t hi = i + h < n ? i + h : n - 1;
        uint8_t m = a[lo];
        for (uint32_t u = lo + 1; u <= hi; u++)
            if (a[u] > m)
                m = a[u];
        out[i] = m;
    }
}

void salca_maxpool_f32(const float *a, uint32_t n, uint32_t w, float *out)
{
    uint32_t h = w / 2;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t lo = i > h ? i - h : 0;
        uint32_t hi = i + h < n ? i + h : n - 1;
        float m = a[lo];
        for (uint32_t u = lo + 1; u <= hi; u++)
            if (a[u] > m)
                m = a[u];
        out[i] = m;
    }
}

void salca_histogram(const uint8_t *p, uint32_t n, uint32_t hist[256])
{
    memset(hist, 0, 256 * sizeof hist[0]);
    for (uint32_t i = 0; i < n; i++)
        hist[p[i]]++;
}

uint32_t salca_threshold(const uint32_t hist[256], uint32_t n, uint32_t K, enum salca_cmp cmp)
{
    if (cmp == SALCA_CMP_GT && n <= K)
        return 0;
    uint64_t cum = 0;
    for (int b = 255; b >= 0; b--) {
        cum += hist[b];
        if (cmp == SALCA_CMP_GE ? cum >= K : cum > K)
            return (uint32_t)b;
    }
    return 0;
}

uint32_t salca_filter(const uint8_t *p, uint32_t n, uint32_t T, uint32_t *idx)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        idx[m] = i;
        m += p[i] >= T; /* branch-free compaction */
    }
    return m;
}

/* Order for top-k: larger score first, then lower index (docs/salca.md#baselines ties). */
static inline bool before(const float *s, uint32_t a, uint32_t b)
{
    return s[a] > s[b] || (s[a] == s[b] && a < b);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Partially orders w[lo..hi] so that w[k] holds the k-th element and the ones before it
 * precede it (Hoare-style quickselect with median-of-three; total order, so exact). */
static void nth_element(const float *s, uint32_t *w, uint32_t lo, uint32_t hi, uint32_t k)
{
    while (hi > lo) {
        uint32_t mid = lo + (hi - lo) / 2;
        /* median of three into w[mid] */
        if (before(s, w[mid], w[lo])) {
            uint32_t t = w[mid];
            w[mid] = w[lo];
            w[lo] = t;
        }
        if (before(s, w[hi], w[lo])) {
            uint32_t t = w[hi];
            w[hi] = w[lo];
            w[lo] = t;
        }
        if (before(s, w[hi], w[mid])) {
            uint32_t t = w[hi];
            w[hi] = w[mid];
            w[mid] = t;
        }
        uint32_t pivot = w[mid];
        uint32_t i = lo, j = hi;
        for (;;) {
            while (before(s, w[i], pivot))
                i++;
            while (before(s, pivot, w[j]))
                j--;
            if (i >= j)
                break;
            uint32_t t = w[i];
            w[i] = w[j];
            w[j] = t;
            i++;
            j--;
        }
        /* [lo, j] precede-or-equal, [j+1, hi] follow-or-equal */
        if (k <= j)
            hi = j;
        else
            lo = j + 1;
    }
}

uint32_t salca_topk(const float *s, uint32_t n, uint32_t K, uint32_t *idx, uint32_t *work)
{
    if (K > n)
        K = n;
    if (K == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        work[i] = i;
    if (K < n)
        nth_element(s, work, 0, n - 1, K - 1);
    memcpy(idx, work, K * sizeof *idx);
    qsort(idx, K, sizeof *idx, cmp_u32);
    return K;
}

static const float *qsort_scores; /* qsort has no context argument; bench-only path */

static int cmp_score(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (before(qsort_scores, x, y))
        return -1;
    if (before(qsort_scores, y, x))
        return 1;
    return 0;
}

uint32_t salca_topk_qsort(const float *s, uint32_t n, uint32_t K, uint32_t *idx, uint32_t *work)
{
    if (K > n)
        K = n;
    for (uint32_t i = 0; i < n; i++)
        work[i] = i;
    qsort_scores = s;
    qsort(work, n, sizeof *work, cmp_score);
    memcpy(idx, work, K * sizeof *idx);
    qsort(idx, K, sizeof *idx, cmp_u32);
    return K;
}

float salca_dot(const float *q, const float *k, uint32_t d)
{
    /* four interleaved partial sums in a fixed order (faster than one chain, still the
     * same bits on every run and thread count), combined as (a0 + a1) + (a2 + a3) */
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    uint32_t j = 0;
    for (; j + 4 <= d; j += 4) {
        a0 += q[j] * k[j];
        a1 += q[j + 1] * k[j + 1];
        a2 += q[j + 2] * k[j + 2];
        a3 += q[j + 3] * k[j + 3];
    }
    for (; j < d; j++)
        a0 += q[j] * k[j];
    return (a0 + a1) + (a2 + a3);
}

void salca_quest_bounds(const float *q, const float *pmin, const float *pmax, uint32_t pages,
                        uint32_t d, float *u)
{
    for (uint32_t p = 0; p < pages; p++) {
        const float *mn = pmin + (size_t)p * d, *mx = pmax + (size_t)p * d;
        float acc = 0.0f;
        for (uint32_t j = 0; j < d; j++) {
            /* docs/salca.md#baselines (Quest): U = sum_j max(q_j M_j, q_j m_j) */
            float a = q[j] * mx[j], b = q[j] * mn[j];
            acc += a > b ? a : b;
        }
        u[p] = acc;
    }
}

uint32_t salca_quest_select(const float *u, uint32_t pages, uint32_t page, uint32_t n, uint32_t K,
                            uint32_t *idx, uint32_t *work)
{
    uint32_t np = (K + page - 1) / page;
    if (np > pages)
        np = pages;
    uint32_t *sel = work + pages;
    uint32_t got = salca_topk(u, pages, np, sel, work);
    uint32_t m = 0;
    for (uint32_t a = 0; a < got; a++) {
        uint32_t start = sel[a] * page, end = start + page;
        if (end > n)
            end = n;
        for (uint32_t i = start; i < end; i++)
            idx[m++] = i;
    }
    return m;
}

void salca_softmax(float *x, uint32_t m)
{
    if (m == 0)
        return;
    float mx = x[0];
    for (uint32_t i = 1; i < m; i++)
        if (x[i] > mx)
            mx = x[i];
    double sum = 0.0;
    for (uint32_t i = 0; i < m; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (uint32_t i = 0; i < m; i++)
        x[i] *= inv;
}

void salca_attend_int8(const int8_t *q8, float sq, const int8_t *k8, const float *sk,
                       const int8_t *v8, const float *sv, uint32_t d, const uint32_t *S, uint32_t m,
                       float *o, float *scratch)
{
    memset(o, 0, d * sizeof *o);
    float rs = sqrtf((float)d);
    for (uint32_t a = 0; a < m; a++) {
        uint32_t i = S[a];
        const int8_t *kr = k8 + (size_t)i * d;
        int32_t dot = 0;
        for (uint32_t j = 0; j < d; j++)
            dot += (int32_t)q8[j] * kr[j];
        /* docs/salca.md#int8-attention: sigma_q*sigma_k*(q8.k8)/sqrt(d) */
        scratch[a] = sq * sk[i] * (float)dot / rs;
    }
    salca_softmax(scratch, m);
    for (uint32_t a = 0; a < m; a++) {
        uint32_t i = S[a];
        const int8_t *vr = v8 + (size_t)i * d;
        float w = scratch[a] * sv[i];
        for (uint32_t j = 0; j < d; j++)
            o[j] += w * (float)vr[j];
    }
}

void salca_attend_f32(const float *q, const float *k, const float *v, uint32_t d, const uint32_t *S,
                      uint32_t m, float *o, float *scratch)
{
    memset(o, 0, d * sizeof *o);
    float rs = sqrtf((float)d);
    for (uint32_t a = 0; a < m; a++) {
        uint32_t i = S ? S[a] : a;
        scratch[a] = salca_dot(q, k + (size_t)i * d, d) / rs;
    }
    salca_softmax(scratch, m);
    for (uint32_t a = 0; a < m; a++) {
        uint32_t i = S ? S[a] : a;
        const float *vr = v + (size_t)i * d;
        float w = scratch[a];
        for (uint32_t j = 0; j < d; j++)
            o[j] += w * vr[j];
    }
}

double salca_cosine(const float *a, const float *b, uint32_t d)
{
    double ab = 0, aa = 0, bb = 0;
    for (uint32_t j = 0; j < d; j++) {
        ab += (double)a[j] * b[j];
        aa += (double)a[j] * a[j];
        bb += (double)b[j] * b[j];
    }
    if (aa == 0 && bb == 0)
        return 1.0;
    if (aa == 0 || bb == 0)
        return 0.0;
    return ab / sqrt(aa * bb);
}

uint32_t salca_runs(const uint32_t *idx, uint32_t m)
{
    uint32_t runs = 0;
    for (uint32_t a = 0; a < m; a++)
        if (a == 0 || idx[a] != idx[a - 1] + 1)
            runs++;
    return runs;
}

double salca_recall(const float *P, const uint32_t *S, uint32_t m)
{
    double r = 0.0;
    for (uint32_t a = 0; a < m; a++)
        r += P[S[a]];
    return r;
}
