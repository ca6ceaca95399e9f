/* weightgen: seeded initialisers; see weightgen.h for the formulas. */
#include "capture/nn/weightgen.h"

#include <math.h>

#include "common/rng.h"

double wg_xavier_bound(size_t fan_in, size_t fan_out)
{
    /* Glorot & Bengio (2010), eq. 16; torch.nn.init.xavier_uniform_. */
    return sqrt(6.0 / (double)(fan_in + fan_out));
}

void wg_fill(float *w, size_t n, enum wg_init init, double param, size_t fan_in, size_t fan_out,
             uint64_t seed, const char *name)
{
    struct rng r;
    rng_stream(&r, seed, name, 0, 0);
    switch (init) {
    case WG_ZEROS:
    case WG_ONES:
        for (size_t i = 0; i < n; i++)
            w[i] = init == WG_ONES ? 1.0f : 0.0f;
        break;
    case WG_NORMAL:
        for (size_t i = 0; i < n; i++)
            w[i] = (float)(param * rng_normal(&r));
        break;
    case WG_UNIFORM:
    case WG_XAVIER_UNIFORM: {
        double a = init == WG_UNIFORM ? param : wg_xavier_bound(fan_in, fan_out);
        for (size_t i = 0; i < n; i++)
            w[i] = (float)(a * (2.0 * rng_uniform(&r) - 1.0));
        break;
    }
    }
}
