/*
 * model_registry: the table of every replay model. Each model defines one
 * `const struct model_ops model_<name>_ops` in its own replay/ file and adds ONE line to
 * the table in replay/model_registry.c. The table order is the listing order.
 */
#ifndef ACCELTRACE_MODEL_REGISTRY_H
#define ACCELTRACE_MODEL_REGISTRY_H

#include <stddef.h>

#include "replay/model.h"
#include "replay/model_schema.h"
#include "replay/sweep.h"

/* The model named `name`, or NULL. */
const struct model_ops *model_registry_find(const char *name);

/* Number of models and the i-th (0-based) for listings. */
size_t model_registry_count(void);
const struct model_ops *model_registry_get(size_t i);

/* model_registry_schema(name): the schema of a model by name (replay/model_schema.h). */

/* Slices up to this many configs are estimated config by config; larger ones by sample. */
#define MODEL_ESTIMATE_EXACT_MAX 16384u

/* Memory of a sweep slice's instances, all alive at once (model_estimate_sweep). */
struct model_estimate {
    size_t n_configs;            /* configs in the slice */
    size_t n_measured;           /* configs whose estimate was computed */
    uint64_t total_bytes;        /* every instance of the slice at once (saturates) */
    uint64_t max_instance_bytes; /* largest instance measured */
    bool sampled;                /* n_measured < n_configs: total scaled from the sample */
};

/*
 * Estimates the bytes of the instances of model m for configs [begin, end) of sweep on a
 * trace with header hdr (may be NULL), all alive at once, as the sum of
 * model_estimate_bytes (model.h). Up to MODEL_ESTIMATE_EXACT_MAX configs are summed one by
 * one; a larger slice from that many evenly spaced configs, the sum scaled to the slice,
 * so any grid is estimated in well under a second and nothing is kept. 0, or the error of
 * sweep_config (a config the schema's cross-key check rejects), e set.
 */
int model_estimate_sweep(const struct model_ops *m, const struct sweep *sweep, size_t begin,
                         size_t end, const Acceltrace__TraceHeader *hdr, struct model_estimate *out,
                         struct errmsg *e);

#endif
