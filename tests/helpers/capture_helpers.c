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

static int emit_append(void *ctx, const Acceltrace__Record *rec, const struct trace_key *key,
                       struct errmsg *e)
{
    const struct test_emit_sink *s = ctx;
    (void)key;
    int rc = s->emit ? s->emit(s->ctx, rec) : 0;
    return rc ? errmsg_set(e, rc, "the record callback failed: %s", err_str(rc)) : 0;
}

void test_emit_sink_init(struct capture_sink *sink, struct test_emit_sink *es, test_emit_fn emit,
                         void *ctx)
{
    es->emit = emit;
    es->ctx = ctx;
    memset(sink, 0, sizeof *sink);
    sink->append = emit_append;
    sink->ctx = es;
    sink->quiet = true;
}

int test_disc_open(const struct disc_params *p, struct disc_capture **out, struct errmsg *e)
{
    void *inst = NULL;
    int rc = capture_disc_ops.open(&inst, p, e);
    *out = inst;
    return rc;
}

int test_disc_run(struct disc_capture *c, test_emit_fn emit, void *ctx, struct errmsg *e)
{
    const struct capture_ops *ops = &capture_disc_ops;
    struct test_emit_sink es;
    struct capture_sink sink;
    test_emit_sink_init(&sink, &es, emit, ctx);
    Acceltrace__TraceHeader hdr = ACCELTRACE__TRACE_HEADER__INIT;
    int rc = ops->prepare(c, e);
    if (!rc)
        rc = ops->header(c, &hdr, e);
    if (!rc)
        rc = ops->run(c, &sink, e);
    capture_progress_end(&sink);
    return rc;
}

int test_capture_disc(const struct disc_params *p, test_emit_fn emit, void *ctx,
                      struct disc_capture **out, struct errmsg *e)
{
    int rc = test_disc_open(p, out, e);
    return rc ? rc : test_disc_run(*out, emit, ctx, e);
}

int test_capture_kura(const struct kura_params *p, test_emit_fn emit, void *ctx,
                      struct kura_result *res, struct errmsg *e)
{
    const struct capture_ops *ops = capture_registry_find("kura");
    struct test_emit_sink es;
    struct capture_sink sink;
    test_emit_sink_init(&sink, &es, emit, ctx);
    sink.quiet = p->quiet;
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
