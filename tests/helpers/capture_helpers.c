/*
 * capture_helpers: see capture_helpers.h.
 */
#include "tests/helpers/capture_helpers.h"

#include <string.h>

#include "capture/capture_registry.h"
#include "common/mem.h"

int test_capture_salca(const struct salca_capture_params *p, const char *path,
                       struct salca_capture_result *res, struct errmsg *e)
{
    const struct capture_ops *ops = capture_registry_find("salca");
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = p->zstd_level;
    o.mem_limit_bytes = p->mem_limit_bytes;
    o.quiet = p->quiet;
    o.command_line = p->command_line;
    o.utc_time = p->utc_time ? p->utc_time : "";
    if (res)
        memset(res, 0, sizeof *res);
    void *inst = NULL;
    int rc = ops->open(&inst, p, e);
    if (!rc)
        rc = capture_run(ops, inst, path, &o, e);
    if (inst && res)
        *res = *salca_capture_result(inst);
    ops->close(inst);
    return rc;
}

/* The sink that hands records to a test_emit_fn. */
struct emit_sink {
    test_emit_fn emit;
    void *ctx;
};

static int emit_append(void *ctx, const Acceltrace__Record *rec, const struct trace_key *key,
                       struct errmsg *e)
{
    const struct emit_sink *s = ctx;
    (void)key;
    int rc = s->emit(s->ctx, rec);
    return rc ? errmsg_set(e, rc, "the record callback failed: %s", err_str(rc)) : 0;
}

int test_capture_kura(const struct kura_params *p, test_emit_fn emit, void *ctx,
                      struct kura_result *res, struct errmsg *e)
{
    const struct capture_ops *ops = capture_registry_find("kura");
    struct emit_sink es = {emit, ctx};
    struct capture_sink sink = {.append = emit_append, .ctx = &es, .quiet = p->quiet};
    sink.progress.label = "kura capture";
    if (res)
        memset(res, 0, sizeof *res);
    void *inst = NULL;
    int rc = ops->open(&inst, p, e);
    if (!rc && p->mem_limit_bytes && ops->mem_estimate(inst) > p->mem_limit_bytes) {
        char what[160]; /* the refusal of capture_run, before anything map-sized */
        ops->mem_what(inst, what, sizeof what);
        rc = mem_budget_refuse(e, what, ops->mem_estimate(inst), p->mem_limit_bytes, ops->mem_hint);
    }
    if (!rc && ops->prepare)
        rc = ops->prepare(inst, e);
    if (!rc)
        rc = ops->run(inst, &sink, e);
    capture_progress_end(&sink);
    if (!rc && res)
        kura_capture_take_result(inst, res);
    ops->close(inst);
    return rc;
}
