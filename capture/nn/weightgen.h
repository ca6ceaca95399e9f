/*
 * weightgen: seeded, documented weight initialisation for the built-in model configs.
 *
 * Every tensor draws from its own common/rng substream rng_stream(seed, name, 0, 0), where
 * name is the tensor's public (checkpoint) name, and is filled row-major. So a tensor's
 * values depend only on (seed, name, shape, init), never on the order in which tensors are
 * generated or on the thread count. Draws are made in double and rounded to FP32 once.
 *   WG_ZEROS            0
 *   WG_ONES             1
 *   WG_NORMAL           N(0, param^2)            (Box-Muller, rng_normal)
 *   WG_UNIFORM          U(-param, param)         (param * (2u - 1), u = rng_uniform)
 *   WG_XAVIER_UNIFORM   U(+-sqrt(6/(fan_in + fan_out)))  (Glorot & Bengio 2010)
 * Models document which init each tensor uses (docs/disc.md#weights for the DiT).
 */
#ifndef ACCELTRACE_WEIGHTGEN_H
#define ACCELTRACE_WEIGHTGEN_H

#include <stddef.h>
#include <stdint.h>

enum wg_init { WG_ZEROS, WG_ONES, WG_NORMAL, WG_UNIFORM, WG_XAVIER_UNIFORM };

/*
 * Fills w[0..n) for the tensor `name` with the given init. param is the std-dev (NORMAL) or
 * half-width (UNIFORM); fan_in/fan_out are used by XAVIER_UNIFORM only.
 */
void wg_fill(float *w, size_t n, enum wg_init init, double param, size_t fan_in, size_t fan_out,
             uint64_t seed, const char *name);

/* The Xavier-uniform half-width sqrt(6/(fan_in + fan_out)). */
double wg_xavier_bound(size_t fan_in, size_t fan_out);

#endif
