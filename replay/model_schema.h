/*
 * model_schema: the config schema of a model by its name, the one service of the model
 * registry that replay/hw_config needs (to follow a config's "model" key). It includes
 * nothing of replay/, so hw_config depends on it without depending on model.h, the
 * registry or sweep (which themselves depend on hw_config). It is defined in
 * replay/model_registry.c, over the registry's table; replay/model_registry.h includes it.
 */
#ifndef ACCELTRACE_MODEL_SCHEMA_H
#define ACCELTRACE_MODEL_SCHEMA_H

struct hw_schema; /* replay/hw_config.h */

/* Schema of the model named `name` (static, the model's own), or NULL for no such model. */
const struct hw_schema *model_registry_schema(const char *name);

/* For an unknown model name: the registered name closest to it (common/suggest.h), or NULL
 * when none is close. Static storage. */
const char *model_registry_closest(const char *name);

#endif
