/*
 * model_registry: one line per replay model. To add a model, declare its ops below and
 * add one row to `models`.
 */
#include <string.h>

#include "replay/model_registry.h"

extern const struct model_ops model_count_ops;
extern const struct model_ops model_kura_ops;
extern const struct model_ops model_disc_ops;
extern const struct model_ops model_a100_ops;
extern const struct model_ops model_salca_ops;

static const struct model_ops *const models[] = {
    &model_count_ops,
    &model_kura_ops,
    &model_disc_ops,
    &model_a100_ops,
    &model_salca_ops,
};

size_t model_registry_count(void)
{
    return sizeof models / sizeof models[0];
}

const struct model_ops *model_registry_get(size_t i)
{
    return i < model_registry_count() ? models[i] : NULL;
}

const struct model_ops *model_registry_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < model_registry_count(); i++)
        if (!strcmp(models[i]->name, name))
            return models[i];
    return NULL;
}

const struct hw_schema *model_registry_schema(const char *name)
{
    const struct model_ops *m = model_registry_find(name);
    return m ? m->schema : NULL;
}
