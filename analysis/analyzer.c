/*
 * analyzer: several analyzers fed from one reader pass (see the header).
 */
#include "analysis/analyzer.h"

#include <stdio.h>

void analyzer_opts_default(struct analyzer_opts *o)
{
    trace_scan_opts_default(&o->scan);
    o->scan.progress_label = "analyze";
}

struct run {
    const struct analyzer *a;
    size_t n;
};

static int run_begin(void *ctx, const struct trace_scan_pos *pos, struct errmsg *e)
{
    const struct run *r = ctx;
    for (size_t i = 0; i < r->n; i++) {
        const struct analyzer *a = &r->a[i];
        int rc = a->ops->begin ? a->ops->begin(a->self, pos, e) : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Every analyzer sees the record, in list order, also after one of them took it (the taker
 * keeps it alive; the header says only one may take a record); one asking to stop ends
 * the pass after the record. */
static int run_record(void *ctx, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                      struct errmsg *e)
{
    const struct run *r = ctx;
    Acceltrace__Record *cur = *rec;
    bool taken = false, stop = false;
    int rc = 0;
    for (size_t i = 0; i < r->n && rc >= 0; i++) {
        Acceltrace__Record *view = cur;
        if (!r->a[i].ops->record)
            continue;
        rc = r->a[i].ops->record(r->a[i].self, pos, &view, e);
        taken |= view == NULL;
        stop |= rc == ANALYZER_STOP;
    }
    if (taken)
        *rec = NULL;
    return rc < 0 ? rc : stop ? ANALYZER_STOP : 0;
}

static int run_end(void *ctx, const struct trace_scan_pos *pos, struct errmsg *e)
{
    const struct run *r = ctx;
    for (size_t i = 0; i < r->n; i++) {
        const struct analyzer *a = &r->a[i];
        int rc = a->ops->end ? a->ops->end(a->self, pos, e) : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

int analyzer_run(const char *path, const struct analyzer *a, size_t n,
                 const struct analyzer_opts *o, struct errmsg *e)
{
    struct analyzer_opts def;
    if (!o) {
        analyzer_opts_default(&def);
        o = &def;
    }
    struct run r = {a, n};
    const struct trace_scan_hooks hooks = {run_begin, run_record, run_end};
    return trace_scan_file(path, &o->scan, &hooks, &r, e);
}

int analyzer_run_reader(struct trace_reader *r, const char *path, const struct analyzer *a,
                        size_t n, const struct analyzer_opts *o, struct errmsg *e)
{
    struct analyzer_opts def;
    if (!o) {
        analyzer_opts_default(&def);
        o = &def;
    }
    struct run run = {a, n};
    const struct trace_scan_hooks hooks = {run_begin, run_record, run_end};
    return trace_scan_reader(r, path, &o->scan, &hooks, &run, e);
}

int analyzer_finish(const struct analyzer *a, size_t n, struct errmsg *e)
{
    for (size_t i = 0; i < n; i++) {
        int rc = a[i].ops->finish ? a[i].ops->finish(a[i].self, e) : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

void analyzer_free(struct analyzer *a)
{
    if (a && a->ops && a->self && a->ops->free)
        a->ops->free(a->self);
    if (a)
        a->self = NULL;
}

int analyzer_record_error(int rc, const struct trace_scan_pos *pos, struct errmsg *e)
{
    char why[sizeof e->text];
    snprintf(why, sizeof why, "%s", e->text);
    return errmsg_set(e, rc, "%s ('%s' record %llu)", why, pos->path,
                      (unsigned long long)pos->record);
}
