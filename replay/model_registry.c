/*
 * model_registry: one line per replay model. To add a model, declare its ops below and
 * add one row to `models`.
 */
#include <string.h>

#include "common/suggest.h"
#include "replay/model_registry.h"

extern const struct model_ops model_count_ops;
extern const struct model_ops model_kura_ops;
extern const struct model_ops model_disc_ops;
extern const struct model_ops model_gpu_ops;
extern const struct model_ops model_salca_ops;

static const struct model_ops *const models[] = {
    &model_count_ops, &model_kura_ops, &model_disc_ops, &model_gpu_ops, &model_salca_ops,
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

const char *model_registry_closest(const char *name)
{
    struct suggest sg;
    suggest_init(&sg, name, strlen(name));
    for (size_t i = 0; i < model_registry_count(); i++)
        suggest_add(&sg, models[i]->name);
    return suggest_result(&sg);
}

const struct hw_schema *model_registry_schema(const char *name)
{
    const struct model_ops *m = model_registry_find(name);
    return m ? m->schema : NULL;
}

uint64_t model_estimate_bytes(const struct model_ops *m, const struct hw_config *cfg,
                              const Acceltrace__TraceHeader *hdr)
{
    uint64_t b = m->estimate_bytes ? m->estimate_bytes(cfg, hdr) : MODEL_ESTIMATE_DEFAULT_BYTES;
    return b > UINT64_MAX - MODEL_INSTANCE_OVERHEAD_BYTES ? UINT64_MAX
                                                          : b + MODEL_INSTANCE_OVERHEAD_BYTES;
}

uint64_t model_estimate_pass_bytes(const struct model_ops *m, const Acceltrace__TraceHeader *hdr,
                                   size_t group_records)
{
    uint64_t shared = 0, per = MODEL_RECORD_DEFAULT_BYTES;
    if (m->estimate_pass)
        m->estimate_pass(hdr, &shared, &per);
    uint64_t g = group_records ? group_records : 1;
    uint64_t recs = per && g > UINT64_MAX / per ? UINT64_MAX : g * per;
    return shared > UINT64_MAX - recs ? UINT64_MAX : shared + recs;
}

int model_estimate_sweep(const struct model_ops *m, const struct sweep *sweep, size_t begin,
                         size_t end, const Acceltrace__TraceHeader *hdr, struct model_estimate *out,
                         struct errmsg *e)
{
    memset(out, 0, sizeof *out);
    size_t n = end > begin ? end - begin : 0;
    out->n_configs = n;
    size_t k = n <= MODEL_ESTIMATE_EXACT_MAX ? n : MODEL_ESTIMATE_EXACT_MAX;
    out->sampled = k < n;
    double sum = 0; /* a double: sums past 2^64 saturate below instead of wrapping */
    for (size_t j = 0; j < k; j++) {
        /* evenly spaced: n <= 10^7 and j < 2^14, so the product fits 64 bits */
        size_t i = begin + (size_t)((uint64_t)j * n / k);
        struct hw_config *c;
        int rc = sweep_config(sweep, i, &c, e);
        if (rc)
            return rc;
        uint64_t b = model_estimate_bytes(m, c, hdr);
        hw_config_free(c);
        sum += (double)b;
        if (b > out->max_instance_bytes)
            out->max_instance_bytes = b;
        out->n_measured++;
    }
    if (out->sampled)
        sum *= (double)n / (double)k;
    out->total_bytes = sum >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)sum;
    return 0;
}
