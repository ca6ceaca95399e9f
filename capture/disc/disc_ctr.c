/* disc_ctr: CTR selection, docs/disc.md#ctr-selection ([paper] selection, [decision] details). */
#include "capture/disc/disc_ctr.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

int disc_ctr_parse_target(const char *s, uint64_t *num, int *frac_digits, struct errmsg *e)
{
    size_t len = strlen(s);
    bool ok = len >= 1 && isdigit((unsigned char)s[0]);
    uint64_t v = ok ? (uint64_t)(s[0] - '0') : 0;
    int f = 0;
    if (ok && len > 1) {
        ok = s[1] == '.' && len >= 3 && len <= 11;
        for (size_t i = 2; ok && i < len; i++) {
            ok = isdigit((unsigned char)s[i]);
            v = v * 10 + (uint64_t)(s[i] - '0');
            f++;
        }
    }
    uint64_t one = 1;
    for (int i = 0; i < f; i++)
        one *= 10;
    if (!ok || v > one)
        return errmsg_set(e, ERR_USAGE,
                          "bad CTR target '%s' (a decimal 0 <= R <= 1 with at most 9 digits "
                          "after the point)",
                          s);
    *num = v;
    *frac_digits = f;
    return 0;
}

uint64_t disc_ctr_n_prune(uint64_t num, int frac_digits, uint64_t n_tokens)
{
    uint64_t den = 1;
    for (int i = 0; i < frac_digits; i++)
        den *= 10;
    /* num <= den <= 1e9 and N <= 2^32, so the product fits in 64 bits. */
    return (num * n_tokens + den - 1) / den;
}

void disc_ctr_token_max(const float *xk, const float *xprev, int c_in, int lat, int p, float *d)
{
    int G = lat / p;
    for (int i = 0; i < G * G; i++)
        d[i] = 0.0f;
    for (int c = 0; c < c_in; c++)
        for (int y = 0; y < lat; y++)
            for (int x = 0; x < lat; x++) {
                size_t k = ((size_t)c * lat + y) * lat + x;
                float v = fabsf(xk[k] - xprev[k]);
                float *di = &d[(y / p) * G + x / p];
                if (v > *di)
                    *di = v;
            }
}

static size_t count_below(const float *d, size_t n, float tau)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += d[i] < tau;
    return c;
}

float disc_ctr_tau_for_prune(const float *d, size_t n, uint64_t n_prune)
{
    if (n_prune == 0 || n == 0)
        return 0.0f;
    float mx = 0.0f;
    for (size_t i = 0; i < n; i++)
        mx = d[i] > mx ? d[i] : mx;
    float top = nextafterf(mx, INFINITY);
    uint32_t lo = 0, hi;
    memcpy(&hi, &top, 4);
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        float t;
        memcpy(&t, &mid, 4);
        if (count_below(d, n, t) >= n_prune)
            hi = mid;
        else
            lo = mid + 1;
    }
    float tau;
    memcpy(&tau, &lo, 4);
    return tau;
}

int disc_ctr_select(const float *d, size_t n, float tau, int32_t *kept, uint64_t *mask)
{
    int nk = 0;
    if (mask)
        memset(mask, 0, ((n + 63) / 64) * sizeof(uint64_t));
    for (size_t i = 0; i < n; i++)
        if (d[i] >= tau) {
            kept[nk++] = (int32_t)i;
            if (mask)
                mask[i >> 6] |= 1ull << (i & 63);
        }
    return nk;
}

void disc_ctr_diff_stats(const float *xk, const float *xprev, size_t n, double *mean, double *rms,
                         double *max)
{
    double s = 0.0, s2 = 0.0, mx = 0.0;
    for (size_t i = 0; i < n; i++) {
        double v = fabsf(xk[i] - xprev[i]);
        s += v;
        s2 += v * v;
        mx = v > mx ? v : mx;
    }
    *mean = n ? s / (double)n : NAN;
    *rms = n ? sqrt(s2 / (double)n) : NAN;
    *max = n ? mx : NAN;
}

float disc_ctr_quantile(const float *sorted, size_t n, unsigned q)
{
    if (n == 0)
        return NAN;
    size_t r = ((size_t)q * n + 99) / 100;
    if (r < 1)
        r = 1;
    return sorted[r - 1];
}
