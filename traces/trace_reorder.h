/*
 * trace_reorder: rewrites a finished trace with its records in another order, given by a
 * comparator over index entries (docs/trace-format.md#reordered-traces). The input is read
 * through its index one frame at a time (each frame's crc, size and keys checked against
 * its entry); memory holds the sorted entries and one frame, never the whole trace.
 * Record frames are copied verbatim (codec and stored bytes as they are); the header frame
 * is written anew, so a caller may edit the header first. The output is a normal trace:
 * written to a temporary, fsynced and renamed, with its own index and the content hash of
 * the new order.
 */
#ifndef ACCELTRACE_TRACE_REORDER_H
#define ACCELTRACE_TRACE_REORDER_H

#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"
#include "traces/trace_key.h"

/* One record of the input as the comparator sees it: its index entry. */
struct trace_reorder_entry {
    uint32_t type;        /* record type (Record.body field number) */
    struct trace_key key; /* index keys */
    uint64_t pos;         /* position in the input (1 = the first record after the header) */
};

struct trace_reorder_opts {
    /* Order of two records: <0 a first, >0 b first, 0 keeps their input order (the sort is
     * stable). Required. */
    int (*cmp)(const struct trace_reorder_entry *a, const struct trace_reorder_entry *b, void *ctx);
    void *ctx;
    /* Optional: edits a shallow copy of the input's header before it is written (pointers it
     * sets must stay valid until trace_reorder returns). 0 or an err with e set. */
    int (*edit_header)(Acceltrace__TraceHeader *hdr, void *ctx, struct errmsg *e);
    /* The output's temporary; NULL: out_path + ".partial" (the writer's own). Must differ
     * from in_path. A file already there is refused (ERR_USAGE), as by the writer. */
    const char *tmp_path;
    int zstd_level; /* of the header frame (the records keep their own codec) */
};

/*
 * Reads in_path (a trace with a valid index, e.g. a sealed .partial: trace_writer_seal)
 * and writes its records in the order of o->cmp to out_path. 0; ERR_NOTFOUND/ERR_DATA when
 * the input has no valid index or a frame disagrees with it, ERR_USAGE when in_path is the
 * output or its temporary, ERR_IO/ERR_NOMEM; e names the file and position. On failure the
 * temporary is removed and out_path is as it was.
 */
int trace_reorder(const char *in_path, const char *out_path, const struct trace_reorder_opts *o,
                  struct errmsg *e);

#endif
