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

int trace_scan_file(const char *path, const struct trace_scan_opts *o,
                    const struct trace_scan_hooks *hooks, void *ctx, struct errmsg *e)
{
    struct trace_scan_opts def;
    if (!o) {
        trace_scan_opts_default(&def);
        o = &def;
    }
    char text[600];
    struct trace_scan_pos pos = {path, NULL, 0};
    Acceltrace__Record *rec = NULL;
    int rc = trace_reader_open(&pos.r, path, &o->reader, text, sizeof text);
    if (rc < 0)
        return errmsg_set(e, rc, "%s", text);
    struct progress prog;
    bool show = o->progress_label != NULL;
    progress_init(&prog, show ? o->progress_label : "", n_records(pos.r), o->quiet || !show);
    if (hooks->begin && (rc = hooks->begin(ctx, &pos, e)) < 0)
        goto done;
    for (;;) {
        rc = trace_reader_next(pos.r, &rec, NULL);
        if (rc < 0) {
            errmsg_set(e, rc, "%s", trace_reader_errmsg(pos.r));
            goto done;
        }
        if (rc == 0)
            break;
        if ((rc = hooks->record(ctx, &pos, &rec, e)) < 0)
            goto done;
        trace_record_free(rec);
        rec = NULL;
        pos.record++;
        progress_update(&prog, pos.record);
    }
    rc = hooks->end ? hooks->end(ctx, &pos, e) : 0;
    /* a pass short enough to print nothing stays silent at its end too */
    if (prog.t_last_s > prog.t_start_s)
        progress_finish(&prog);
done:
    trace_record_free(rec);
    trace_reader_free(pos.r);
    return rc < 0 ? rc : 0;
}
