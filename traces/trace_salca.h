/*
 * trace_salca: what a SalcaSelect record means, for every reader of Salca traces (the
 * replay model and the analyzers): the fixed method ids and their names, the names of the
 * K rule, and the decoding of the selected token list (formats/salca_records.proto,
 * docs/salca.md#trace-records).
 *
 * The method table is the one of salca_records.proto: ids are fixed, a trace's header may
 * name further ids (SalcaHeader.methods). Decoding bounds every length by the record's own
 * n_ctx and count, and n_ctx by TRACE_SALCA_MAX_CTX, before it writes anything, so a
 * malformed record is a data error, never an overrun. Nothing here allocates or prints.
 */
#ifndef ACCELTRACE_TRACE_SALCA_H
#define ACCELTRACE_TRACE_SALCA_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"

/* The fixed method ids of SalcaSelect.method (salca_records.proto "method ids"). */
enum trace_salca_method {
    TRACE_SALCA_M_SALCA = 0,
    TRACE_SALCA_M_STD_TOPK = 1,
    TRACE_SALCA_M_PL_TOPK = 2,
    TRACE_SALCA_M_FULL_FEAT = 3,
    TRACE_SALCA_M_QUEST = 4,
    TRACE_SALCA_M_DENSE = 5,
    TRACE_SALCA_N_METHODS = 6
};

/* K rule of a capture (SalcaHeader.k_mode). */
enum trace_salca_k_mode {
    TRACE_SALCA_K_FIXED = 0,
    TRACE_SALCA_K_DYNAMIC = 1,
};

/* Largest n_ctx a reader accepts from a trace (64 Mi tokens) [decision]. */
#define TRACE_SALCA_MAX_CTX (1u << 26)

/* Name of a fixed method id ("salca", "std_topk", ...), or NULL past the table. Static. */
const char *trace_salca_method_name(uint32_t id);

/* Id of a fixed method name, or -1 when name is not one. */
int trace_salca_method_id(const char *name);

/* "fixed" or "dynamic" (SalcaHeader.k_mode); NULL for another value. Static. */
const char *trace_salca_k_mode_name(enum trace_salca_k_mode m);

/*
 * Decodes the selected token indices of s (ascending, each < n_ctx) into idx, whose
 * capacity must be at least s->count (check with trace_salca_select_check first when sizing a
 * buffer from the record). *n receives the number of indices (s->count on success).
 * 0, or with e set (message naming step, layer and head): ERR_LIMIT for n_ctx above
 * TRACE_SALCA_MAX_CTX, ERR_DATA for count above n_ctx or a list that does not decode to
 * exactly count indices below n_ctx.
 */
int trace_salca_select_decode(const Acceltrace__SalcaSelect *s, uint32_t *idx, size_t *n,
                              struct errmsg *e);

/*
 * The size checks of trace_salca_select_decode alone (n_ctx bound, count <= n_ctx), so callers
 * can size idx from s->count safely. 0, ERR_LIMIT or ERR_DATA with e set.
 */
int trace_salca_select_check(const Acceltrace__SalcaSelect *s, struct errmsg *e);

/*
 * The whole check of a record's selection, without storing it: the size checks above, then
 * the list must decode to exactly `count` ascending indices below n_ctx. The trace reader
 * runs it on every SalcaSelect it returns (traces/trace_reader.h), so every verb rejects
 * such a record the same way, with the reader's file, frame and offset. 0, or ERR_LIMIT /
 * ERR_DATA with e set ("bad selection list: ..." naming step, layer and head).
 */
int trace_salca_select_validate(const Acceltrace__SalcaSelect *s, struct errmsg *e);

/*
 * 0 when hdr is the header of a Salca trace (workload "salca"), else ERR_DATA with e set:
 * "not a salca trace ('PATH' workload 'W')". hdr may be NULL (then it is not one).
 */
int trace_salca_header_check(const Acceltrace__TraceHeader *hdr, const char *path,
                             struct errmsg *e);

/*
 * The series label of a Salca trace's selections under mode: "family" (SalcaHeader.
 * task_family), "task" (task_name), "file" (path); "all" for another mode or when the
 * header lacks the field. The result points into hdr, path or static storage.
 */
const char *trace_salca_group(const Acceltrace__TraceHeader *hdr, const char *mode,
                              const char *path);

#endif
