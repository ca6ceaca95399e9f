#include "common/rng.h"

#include <math.h>

uint64_t rng_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t rng_mix64(uint64_t x)
{
    return rng_splitmix64(&x);
}

uint64_t rng_fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

void rng_seed(struct rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = rng_splitmix64(&x);
    r->has_spare = false;
    r->spare = 0.0;
}

void rng_stream(struct rng *r, uint64_t seed, const char *purpose, uint64_t a, uint64_t b)
{
    uint64_t x = seed;
    x = rng_mix64(x ^ rng_fnv1a64(purpose));
    x = rng_mix64(x ^ a);
    x = rng_mix64(x ^ b);
    rng_seed(r, x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rng_u64(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rng_uniform(struct rng *r)
{
    return (double)(rng_u64(r) >> 11) * 0x1.0p-53;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
    /* Rejection sampling on the top of the range: unbiased for any n > 0. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = rng_u64(r);
    } while (x >= limit);
    return x % n;
}

double rng_normal(struct rng *r)
{
    if (r->has_spare) {
        r->has_spare = false;
        return r->spare;
    }
    double u1 = 1.0 - rng_uniform(r); /* (0, 1]: log is finite */
    double u2 = rng_uniform(r);
    double rad = sqrt(-2.0 * log(u1));
    double ang = 2.0 * M_PI * u2;
    r->spare = rad * sin(ang);
    r->has_spare = true;
    return rad * cos(ang);
}

double rng_von_mises(struct rng *r, double mu, double kappa)
{
    /* Best & Fisher (1979), Appl. Statist. 28(2):152-157, algorithm VM. */
    double th;
    if (kappa < 1e-8) {
        th = M_PI * (2.0 * rng_uniform(r) - 1.0);
    } else {
        double tau = 1.0 + sqrt(1.0 + 4.0 * kappa * kappa);
        double rho = (tau - sqrt(2.0 * tau)) / (2.0 * kappa);
        double rr = (1.0 + rho * rho) / (2.0 * rho);
        double f;
        for (;;) {
            double u1 = rng_uniform(r), u2 = rng_uniform(r), u3 = rng_uniform(r);
            double z = cos(M_PI * u1);
            f = (1.0 + rr * z) / (rr + z);
            double c = kappa * (rr - f);
            if (c * (2.0 - c) - u2 > 0.0 || log(c / u2) + 1.0 - c >= 0.0) {
                th = (u3 > 0.5 ? 1.0 : -1.0) * acos(f);
                break;
            }
        }
    }
    th += mu;
    th = fmod(th + M_PI, 2.0 * M_PI);
    if (th <= 0.0)
        th += 2.0 * M_PI;
    return th - M_PI;
}
