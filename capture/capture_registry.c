/*
 * capture_registry: one line per workload capture. To add a workload, declare its ops
 * below and add one row to `captures`.
 */
#include <string.h>

#include "capture/capture_registry.h"

extern const struct capture_ops capture_disc_ops;
extern const struct capture_ops capture_kura_ops;
extern const struct capture_ops capture_salca_ops;
extern const struct capture_ops capture_test_ops;

static const struct capture_ops *const captures[] = {
    &capture_disc_ops,
    &capture_kura_ops,
    &capture_salca_ops,
    &capture_test_ops,
};

size_t capture_registry_count(void)
{
    return sizeof captures / sizeof captures[0];
}

const struct capture_ops *capture_registry_get(size_t i)
{
    return i < capture_registry_count() ? captures[i] : NULL;
}

const struct capture_ops *capture_registry_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < capture_registry_count(); i++)
        if (!strcmp(captures[i]->name, name))
            return captures[i];
    return NULL;
}
