/*
 * kura_data: the procedural data generators of docs/kura.md#data-generators (no downloaded
 * data). Image generators (grating, fingerprint, wood) give x in [-1, 1], mapped to
 * theta = 0.9 pi x; test fields (const, ramp, uniform) give theta directly. Every
 * generator is deterministic given its size, parameters and seed, and independent of the
 * thread count.
 *
 * Parameters are "k=v,k=v" strings; unknown keys or malformed values are ERR_USAGE with
 * a message. kura_data_describe writes all parameters, defaults filled in.
 */
#ifndef ACCELTRACE_KURA_DATA_H
#define ACCELTRACE_KURA_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct thread_pool;

enum kura_gen {
    KURA_GEN_GRATING = 0,
    KURA_GEN_FINGERPRINT,
    KURA_GEN_WOOD,
    KURA_GEN_CONST,
    KURA_GEN_RAMP,
    KURA_GEN_UNIFORM,
    KURA_GEN_COUNT_
};

#define KURA_GEN_MAX_PARAMS 8

/* A generator and its parameter values (in the order of its table; see kura_data.c). */
struct kura_data_spec {
    enum kura_gen kind;
    double p[KURA_GEN_MAX_PARAMS];
};

/* Parses name ("fingerprint", ...) and params ("lambda=7,iters=4" or NULL/""). */
int kura_data_parse(const char *name, const char *params, struct kura_data_spec *spec,
                    struct errmsg *e);

/* Generator name. */
const char *kura_data_name(enum kura_gen kind);

/* Comma-separated list of all generator names (for help). */
const char *kura_data_names(void);

/* True for the image generators (x in [-1, 1]); false for the test fields. */
bool kura_data_is_image(enum kura_gen kind);

/* "k=v,..." with every parameter (size-dependent defaults resolved for h x w). */
void kura_data_describe(const struct kura_data_spec *spec, size_t h, size_t w, char *out,
                        size_t out_len);

/*
 * Generates an h x w map into theta (rad, in [-pi, pi)) and, for image generators, the
 * image into x when x is not NULL (test fields: x gets theta/(0.9 pi) clamped). seed selects
 * the generator's random stream. pool may be NULL. 0, ERR_USAGE (h or w < 1), ERR_NOMEM.
 */
int kura_data_generate(const struct kura_data_spec *spec, size_t h, size_t w, uint64_t seed,
                       double *theta, double *x, struct thread_pool *pool, struct errmsg *e);

#endif
