/*
 * disc_models: the weights the project ships for a DiSC model (docs/models.md
 * "trained-small"). trained-small's weights are configs/models/trained-small.safetensors with
 * their sha256 in trained-small.safetensors.sha256 beside them; the folder is found as
 * $ACCELTRACE_MODELS, else <program>/../share/acceltrace/models (installed), else
 * <program>/../configs/models (the program in build/ of the repository), else
 * ./configs/models.
 */
#ifndef ACCELTRACE_DISC_MODELS_H
#define ACCELTRACE_DISC_MODELS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* Whether model `name` has shipped weights (and so no seeded default). */
bool disc_model_shipped(const char *name);

/* The shipped weights of `name`: path (n bytes) and the sha256 recorded beside them (65).
 * ERR_NOINPUT when no folder holds them, ERR_DATA when the .sha256 file is malformed. */
int disc_model_find(const char *name, char *path, size_t n, char sha[65], struct errmsg *e);

#endif
