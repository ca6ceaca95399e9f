/*
 * analyzer: the interface of the trace analyzers and the one reader pass that feeds them
 * (docs/design.md#data-flow), as replay/model.h and replay/engine are for models.
 *
 * An analyzer is a vtable and its state. analyzer_run reads a trace once (traces/
 * trace_scan: reader options, so the content-hash check and --allow-partial hold for
 * every analyzer; progress; errors) and hands the header, then every record in file
 * order, to each analyzer of the list in list order, then tells each the trace ended.
 * Several analyzers share one pass; one analyzer may see several traces (one
 * analyzer_run per trace) before analyzer_finish writes what it accumulated.
 *
 * Hooks return 0 or a negative enum err with e set; the first error stops the pass and is
 * returned. A hook's message is used as it is, so it names what it needs of the position
 * (struct trace_scan_pos: file, record number). The analyzers stay owned by the caller:
 * analyzer_free releases one through its free hook.
 */
#ifndef ACCELTRACE_ANALYZER_H
#define ACCELTRACE_ANALYZER_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"
#include "traces/trace_scan.h"

#define ANALYZER_STOP TRACE_SCAN_STOP /* record: end the pass after this record */

struct analyzer_ops {
    const char *name; /* "hash_lb", "conflicts", ... (messages, tests) */
    /* A trace starts (pos->r: header, content hash); may refuse it. May be NULL. */
    int (*begin)(void *self, const struct trace_scan_pos *pos, struct errmsg *e);
    /* One record of the trace; may take it (*rec = NULL; then it frees it with
     * trace_record_free). Analyzers later in the list still see a taken record; at most one
     * analyzer of a pass may take a given record. Returns 0, <0, or ANALYZER_STOP when it
     * needs no further record: the pass then ends after the analyzers later in the list
     * have seen this record, with no end hook, and analyzer_run returns 0 (a pass that
     * reads only the first records). Optional: NULL for an analyzer of the header alone. */
    int (*record)(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                  struct errmsg *e);
    /* The trace ended (every record seen, its hash checked). May be NULL. */
    int (*end)(void *self, const struct trace_scan_pos *pos, struct errmsg *e);
    /* After every trace: computes and writes the outputs. May be NULL. */
    int (*finish)(void *self, struct errmsg *e);
    /* Releases self (NULL tolerated). May be NULL. */
    void (*free)(void *self);
};

struct analyzer {
    const struct analyzer_ops *ops;
    void *self;
};

struct analyzer_opts {
    struct trace_scan_opts scan; /* reader options and progress */
};

/* Reader defaults (hash checked, --allow-partial as the process says), progress labelled
 * "analyze" unless quiet. */
void analyzer_opts_default(struct analyzer_opts *o);

/*
 * Reads the trace at path once and feeds every analyzer of a[0..n) (o NULL = defaults).
 * 0, or the first negative code (open, reader, or a hook) with e set.
 */
int analyzer_run(const char *path, const struct analyzer *a, size_t n,
                 const struct analyzer_opts *o, struct errmsg *e);

/* The same pass over a reader the caller opened and keeps (trace_scan_reader): r must
 * not have returned a record yet; o->scan.reader is not used. */
int analyzer_run_reader(struct trace_reader *r, const char *path, const struct analyzer *a,
                        size_t n, const struct analyzer_opts *o, struct errmsg *e);

/* For a record hook: rc (< 0, with e set by the failed call) returned with the record's place
 * added to e's message: "MESSAGE ('PATH' record N)". */
int analyzer_record_error(int rc, const struct trace_scan_pos *pos, struct errmsg *e);

/* Calls each analyzer's finish in list order; the first error stops and is returned. */
int analyzer_finish(const struct analyzer *a, size_t n, struct errmsg *e);

/* Releases one analyzer through its free hook (a NULL ops or self is a no-op). */
void analyzer_free(struct analyzer *a);

#endif
