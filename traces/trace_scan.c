/*
 * trace_scan: one streaming pass over a trace file with begin/record/end hooks (see the
 * header).
 */
#include "traces/trace_scan.h"

#include "common/progress.h"

void trace_scan_opts_default(struct trace_scan_opts *o)
{
    trace_reader_opts_default(&o->reader);
    o->progress_label = NULL;
    o->quiet = false;
}

/* Records of the trace when its index says, else 0 (progress only). */
static uint64_t n_records(const struct trace_reader *r)
{
    const Acceltrace__TraceIndex *idx = trace_reader_index(r);
    return idx && idx->n_entries > 0 ? (uint64_t)idx->n_entries - 1 : 0;
}

int trace_scan_reader(struct trace_reader *r, const char *path, const struct trace_scan_opts *o,
                      const struct trace_scan_hooks *hooks, void *ctx, struct errmsg *e)
{
    struct trace_scan_opts def;
    if (!o) {
        trace_scan_opts_default(&def);
        o = &def;
    }
    struct trace_scan_pos pos = {path, r, 0};
    Acceltrace__Record *rec = NULL;
    struct progress prog;
    bool show = o->progress_label != NULL;
    progress_init(&prog, show ? o->progress_label : "", n_records(r), o->quiet || !show);
    int rc = hooks->begin ? hooks->begin(ctx, &pos, e) : 0;
    while (rc >= 0) {
        rc = trace_reader_next(r, &rec, NULL);
        if (rc < 0) {
            errmsg_set(e, rc, "%s", trace_reader_errmsg(r));
            break;
        }
        if (rc == 0) {
            rc = hooks->end ? hooks->end(ctx, &pos, e) : 0;
            /* a pass short enough to print nothing stays silent at its end too */
            if (prog.t_last_s > prog.t_start_s)
                progress_finish(&prog);
            break;
        }
        rc = hooks->record(ctx, &pos, &rec, e);
        trace_record_free(rec);
        rec = NULL;
        pos.record++;
        progress_update(&prog, pos.record);
        if (rc == TRACE_SCAN_STOP)
            break;
    }
    return rc < 0 ? rc : 0;
}

int trace_scan_file(const char *path, const struct trace_scan_opts *o,
                    const struct trace_scan_hooks *hooks, void *ctx, struct errmsg *e)
{
    struct trace_scan_opts def;
    if (!o) {
        trace_scan_opts_default(&def);
        o = &def;
    }
    struct trace_reader *r = NULL;
    int rc = trace_reader_open(&r, path, &o->reader, e);
    if (rc < 0)
        return rc;
    rc = trace_scan_reader(r, path, o, hooks, ctx, e);
    trace_reader_free(r);
    return rc;
}
