/*
 * trace_scan: the one streaming pass over a trace file that every reader outside the
 * replay engine uses (analysis/analyzer builds on it; replay/kura_tiles' activity
 * calibration calls it directly, being below analysis/).
 *
 * trace_scan_file opens the file with the given reader options (the CLI's --allow-partial
 * and the content-hash check come in through them), calls begin with the open reader
 * (the header, the content hash), hands every record after the header in file order to
 * record, calls end after the last one and frees everything. A hook that returns a
 * negative enum err stops the pass; that code is returned with the hook's message in e.
 * A reader error is returned with the reader's message (file, frame and offset). Progress
 * is reported on stderr (common/progress) only when a pass runs long enough to report.
 *
 * Ownership: each record belongs to the pass; record may take it by setting *rec to NULL
 * (it then frees it with trace_record_free).
 */
#ifndef ACCELTRACE_TRACE_SCAN_H
#define ACCELTRACE_TRACE_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"
#include "traces/trace_reader.h"

/* Where a pass is: handed to every hook. */
struct trace_scan_pos {
    const char *path;       /* the file, for messages */
    struct trace_reader *r; /* the open reader (header, content hash, frames) */
    uint64_t record;        /* number of the record being handed (0 = first after the
                               header); after the pass, the number of records */
};

/* What record returns to end the pass after this record (a reader that wants only the first
 * records): no further record is read, end is not called, and the pass returns 0. */
#define TRACE_SCAN_STOP 1

struct trace_scan_hooks {
    /* After open, before the first record; may refuse the trace. May be NULL. */
    int (*begin)(void *ctx, const struct trace_scan_pos *pos, struct errmsg *e);
    /* One record; may take it (*rec = NULL). 0, TRACE_SCAN_STOP or <0. Required. */
    int (*record)(void *ctx, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                  struct errmsg *e);
    /* After the last record (the content hash is checked by then). May be NULL. */
    int (*end)(void *ctx, const struct trace_scan_pos *pos, struct errmsg *e);
};

struct trace_scan_opts {
    struct trace_reader_opts reader; /* trace_reader_opts_default by trace_scan_opts_default */
    const char *progress_label;      /* label of the progress line; NULL = no progress */
    bool quiet;                      /* no progress (progress_global_quiet is ORed in) */
};

/* Reader defaults (hash checked, --allow-partial as the process says), no progress. */
void trace_scan_opts_default(struct trace_scan_opts *o);

/*
 * One pass over the trace at path (o NULL = defaults). 0, or the first negative code of
 * the open, a hook or the reader, with e set.
 */
int trace_scan_file(const char *path, const struct trace_scan_opts *o,
                    const struct trace_scan_hooks *hooks, void *ctx, struct errmsg *e);

/*
 * The same pass over a reader the caller opened (o->reader is not used) and keeps: for
 * callers that hold on to the header after the pass. r must not have returned a record
 * yet; it stays open and owned by the caller. path names the trace in messages.
 */
int trace_scan_reader(struct trace_reader *r, const char *path, const struct trace_scan_opts *o,
                      const struct trace_scan_hooks *hooks, void *ctx, struct errmsg *e);

#endif
