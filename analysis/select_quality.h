/*
 * select_quality: the quality of every selection method of Salca traces (docs/salca.md#figures
 * plot 4) and the structure of the selected sets. Per (group, method, target retention rho)
 * it keeps each SalcaSelect's recall and output cosine (their means and 5th percentiles)
 * and the mean retention |S|/n; per (group, method, rho, head class) the share of
 * selections holding every sink token and every one of the last 16 tokens, and the run
 * lengths of the selected indices. A group is a series label such as the trace's task
 * family (trace_salca_group); rho and the method names come from each trace's header.
 *
 * An analyzer of its own (analysis/analyzer.h): select_quality_analyzer feeds a handle
 * from a trace pass, beside the other analyzers of Salca traces; select_quality_write
 * writes recall_vs_retention.csv, cosine_vs_retention.csv, selection_structure.csv and
 * the recall and cosine plots. The handle owns its memory; errors go into the caller's
 * struct errmsg; nothing prints.
 */
#ifndef ACCELTRACE_SELECT_QUALITY_H
#define ACCELTRACE_SELECT_QUALITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"

#define SELECT_QUALITY_MAX_GROUPS 32 /* groups drawn as panels of the plots */

struct select_quality;
struct analyzer;

/*
 * A new, empty handle; free with select_quality_free. strict_method: the SalcaSelect.method
 * whose malformed selection list is an error (-1: every method); lists of other methods
 * that do not decode are left out of the structure table silently (the conflict analyzer
 * reports those of the method it analyzes). 0 or ERR_NOMEM with e set.
 */
int select_quality_new(struct select_quality **out, int32_t strict_method, struct errmsg *e);
/* Releases q (NULL is a no-op). */
void select_quality_free(struct select_quality *q);

/*
 * Starts a trace: records its target retention (SalcaHeader.rho, the x series of the
 * recall-vs-retention plot), its method names and, from params_json, its head classes and
 * sink count. hdr may be NULL or lack a salca part. 0 or ERR_NOMEM with e set.
 */
int select_quality_begin_trace(struct select_quality *q, const Acceltrace__TraceHeader *hdr,
                               struct errmsg *e);

/*
 * Adds one SalcaSelect of group `group` (NULL or "" = "all"), every method, keyed by
 * (group, method, rho of the current trace). 0, or with e set ERR_DATA/ERR_LIMIT for a
 * malformed list of strict_method (as trace_salca_select_decode says), ERR_LIMIT past
 * 4096 keys, ERR_NOMEM.
 */
int select_quality_add(struct select_quality *q, const char *group,
                       const Acceltrace__SalcaSelect *s, struct errmsg *e);

/* Quality rows kept so far (group, method, rho keys). */
size_t select_quality_n_rows(const struct select_quality *q);

/*
 * Writes into dir (created if missing) selection_structure.csv, recall_vs_retention.csv,
 * cosine_vs_retention.csv and the plots recall_vs_retention and cosine_vs_retention;
 * nothing without rows. *rendered (may be NULL) becomes false when gnuplot made no image.
 * 0 or <0 with e set.
 */
int select_quality_write(struct select_quality *q, const char *dir, bool *rendered,
                         struct errmsg *e);

/*
 * The analyzer of a trace pass over q (q not owned; no free hook): begin refuses a trace
 * of another workload (ERR_DATA) and starts it (select_quality_begin_trace) with the group
 * trace_salca_group(header, group_mode, path); record adds its SalcaSelect records (an
 * error names the file and record number); finish writes into dir (select_quality_write;
 * nothing when dir is NULL) and clears *rendered (may be NULL) when gnuplot made no image.
 * group_mode must outlive the analyzer.
 */
void select_quality_analyzer(struct select_quality *q, const char *group_mode, const char *dir,
                             bool *rendered, struct analyzer *out);

#endif
