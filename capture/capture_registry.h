/*
 * capture_registry: the table of every workload capture. Each workload defines one
 * `const struct capture_ops capture_<name>_ops` (capture/capture.h) in its own capture/
 * folder and adds ONE line to the table in capture/capture_registry.c. The table order is
 * the listing order.
 */
#ifndef ACCELTRACE_CAPTURE_REGISTRY_H
#define ACCELTRACE_CAPTURE_REGISTRY_H

#include <stddef.h>

#include "capture/capture.h"

/* The capture named `name` (its workload name), or NULL. */
const struct capture_ops *capture_registry_find(const char *name);

/* Number of captures and the i-th (0-based) for listings; NULL past the end. */
size_t capture_registry_count(void);
const struct capture_ops *capture_registry_get(size_t i);

#endif
