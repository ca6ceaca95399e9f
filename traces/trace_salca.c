/*
 * trace_salca: method names and selection decoding of SalcaSelect records (see the
 * header).
 */
#include "traces/trace_salca.h"

#include <string.h>

#include "formats/varint.h"

/* salca_records.proto "method ids" */
static const char *const method_names[TRACE_SALCA_N_METHODS] = {
    "salca", "std_topk", "pl_topk", "full_feat", "quest", "dense",
};

const char *trace_salca_method_name(uint32_t id)
{
    return id < TRACE_SALCA_N_METHODS ? method_names[id] : NULL;
}

int trace_salca_method_id(const char *name)
{
    for (int m = 0; name && m < TRACE_SALCA_N_METHODS; m++)
        if (!strcmp(name, method_names[m]))
            return m;
    return -1;
}

const char *trace_salca_k_mode_name(enum trace_salca_k_mode m)
{
    switch (m) {
    case TRACE_SALCA_K_FIXED:
        return "fixed";
    case TRACE_SALCA_K_DYNAMIC:
        return "dynamic";
    }
    return NULL;
}

int trace_salca_select_check(const Acceltrace__SalcaSelect *s, struct errmsg *e)
{
    if (s->n_ctx > TRACE_SALCA_MAX_CTX)
        return errmsg_set(e, ERR_LIMIT, "n_ctx %u above %u (step %u layer %u head %u)", s->n_ctx,
                          TRACE_SALCA_MAX_CTX, s->t, s->l, s->h);
    if (s->count > s->n_ctx)
        return errmsg_set(e, ERR_DATA, "count %u above n_ctx %u (step %u layer %u head %u)",
                          s->count, s->n_ctx, s->t, s->l, s->h);
    return 0;
}

int trace_salca_select_validate(const Acceltrace__SalcaSelect *s, struct errmsg *e)
{
    int rc = trace_salca_select_check(s, e);
    if (rc < 0)
        return rc;
    size_t got = 0;
    if (varint_indices_count(s->sel.data, s->sel.len, s->n_ctx, &got) < 0)
        return errmsg_set(e, ERR_DATA,
                          "bad selection list: not ascending varints below n_ctx %u (step %u "
                          "layer %u head %u)",
                          s->n_ctx, s->t, s->l, s->h);
    if (got != s->count)
        return errmsg_set(e, ERR_DATA,
                          "bad selection list: %zu indices, count says %u (step %u layer %u "
                          "head %u)",
                          got, s->count, s->t, s->l, s->h);
    return 0;
}

int trace_salca_select_decode(const Acceltrace__SalcaSelect *s, uint32_t *idx, size_t *n,
                              struct errmsg *e)
{
    *n = 0;
    int rc = trace_salca_select_check(s, e);
    if (rc < 0)
        return rc;
    size_t got = 0;
    rc = varint_decode_indices(s->sel.data, s->sel.len, s->n_ctx, idx, s->count, &got);
    if (rc < 0 || got != s->count)
        return errmsg_set(e, ERR_DATA,
                          "bad selection list (%s%zu of %u indices) at step %u layer %u head %u",
                          rc == ERR_LIMIT ? "more than " : "", got, s->count, s->t, s->l, s->h);
    *n = got;
    return 0;
}

int trace_salca_header_check(const Acceltrace__TraceHeader *hdr, const char *path, struct errmsg *e)
{
    if (!hdr || strcmp(hdr->workload, "salca") != 0)
        return errmsg_set(e, ERR_DATA, "not a salca trace ('%s' workload '%s')", path,
                          hdr ? hdr->workload : "");
    return 0;
}

const char *trace_salca_group(const Acceltrace__TraceHeader *hdr, const char *mode,
                              const char *path)
{
    const Acceltrace__SalcaHeader *h = hdr ? hdr->salca : NULL;
    if (!strcmp(mode, "family") && h && h->task_family[0])
        return h->task_family;
    if (!strcmp(mode, "task") && h && h->task_name[0])
        return h->task_name;
    if (!strcmp(mode, "file"))
        return path;
    return "all";
}
