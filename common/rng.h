/*
 * rng: the project's seeded pseudo-random numbers.
 *
 * Generator: xoshiro256** (Blackman & Vigna), state seeded by four outputs of splitmix64.
 * Substreams: every named purpose gets its own stream, seeded from
 *   splitmix64 chain over (seed, fnv1a64(purpose), a, b)
 * (see rng_stream), so draws never depend on evaluation order or thread count.
 * Draws: uniform doubles with 53 random bits in [0, 1); normals by Box-Muller (the
 * second value of a pair is cached); von Mises by Best & Fisher (1979).
 * A struct rng is plain data: copy it to fork a stream, no heap, no global state.
 */
#ifndef ACCELTRACE_RNG_H
#define ACCELTRACE_RNG_H

#include <stdbool.h>
#include <stdint.h>

struct rng {
    uint64_t s[4]; /* xoshiro256** state */
    double spare;  /* cached second Box-Muller normal */
    bool has_spare;
};

/* splitmix64: advances *x and returns the next output (Steele, Lea & Flood 2014). */
uint64_t rng_splitmix64(uint64_t *x);

/* The first output of splitmix64 seeded with x (a 64-bit mixing function). */
uint64_t rng_mix64(uint64_t x);

/* FNV-1a 64-bit hash of a NUL-terminated string. */
uint64_t rng_fnv1a64(const char *s);

/* Seeds r from one 64-bit seed: state = four successive splitmix64 outputs. */
void rng_seed(struct rng *r, uint64_t seed);

/*
 * Seeds r as the substream (seed, purpose, a, b): x = seed; x = mix(x ^ fnv1a64(purpose));
 * x = mix(x ^ a); x = mix(x ^ b); then rng_seed(r, x). Use a, b for layer/head or 0.
 */
void rng_stream(struct rng *r, uint64_t seed, const char *purpose, uint64_t a, uint64_t b);

/* Next raw 64-bit output of xoshiro256**. */
uint64_t rng_u64(struct rng *r);

/* Uniform double in [0, 1) from the top 53 bits. */
double rng_uniform(struct rng *r);

/* Uniform integer in [0, n) without modulo bias (rejection); n > 0. */
uint64_t rng_below(struct rng *r, uint64_t n);

/* Standard normal N(0, 1) by Box-Muller: u1 in (0, 1], u2 in [0, 1). */
double rng_normal(struct rng *r);

/* Von Mises draw on (-pi, pi] with mean mu and concentration kappa >= 0 (Best-Fisher). */
double rng_von_mises(struct rng *r, double mu, double kappa);

#endif
