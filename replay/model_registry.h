/*
 * model_registry: the table of every replay model. Each model defines one
 * `const struct model_ops model_<name>_ops` in its own replay/ file and adds ONE line to
 * the table in replay/model_registry.c. The table order is the listing order.
 */
#ifndef ACCELTRACE_MODEL_REGISTRY_H
#define ACCELTRACE_MODEL_REGISTRY_H

#include <stddef.h>

#include "replay/model.h"

/* The model named `name`, or NULL. */
const struct model_ops *model_registry_find(const char *name);

/* Number of models and the i-th (0-based) for listings. */
size_t model_registry_count(void);
const struct model_ops *model_registry_get(size_t i);

/* Schema of the model named `name`, or NULL (used by hw_config for "model" keys). */
const struct hw_schema *model_registry_schema(const char *name);

#endif
