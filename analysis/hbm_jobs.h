/*
 * hbm_jobs: the analyzer behind `acceltrace export hbm-trace` (analysis/analyzer.h). Every
 * SalcaSelect record of one method (and, when asked, of a step range) of a Salca trace is
 * decoded and handed, in file order, to the DRAM request trace writers (replay/hbm_export)
 * and as one line "job,step,layer,head,tokens,first_request,requests" to jobs.csv.
 *
 * The caller fills the first block of struct hbm_jobs (the writers and jobs.csv stay its
 * own), runs the pass (analyzer_run or analyzer_run_reader with {&hbm_jobs_ops, &j}) and
 * reads the counts; hbm_jobs_release frees the selection buffer. Errors: ERR_DATA for a
 * trace that is not a Salca trace or a selection that does not decode (file and record
 * named), ERR_IO for a write error ("cannot write in 'DIR': ...").
 */
#ifndef ACCELTRACE_HBM_JOBS_H
#define ACCELTRACE_HBM_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/analyzer.h"
#include "common/io.h"
#include "replay/hbm_export.h"

struct hbm_jobs {
    /* set by the caller */
    struct hbm_export *x[2]; /* the Ramulator 2 and DRAMsim3 writers; NULL = not written */
    struct sink *csv;        /* jobs.csv, its header line written */
    const char *dir;         /* the output folder, for the write-error message */
    int64_t method;          /* the SalcaSelect.method exported */
    bool steps;              /* only steps step_lo..step_hi (inclusive) */
    uint32_t step_lo, step_hi;
    uint32_t per_token; /* requests per token: token bytes / burst bytes */
    /* results */
    uint64_t jobs, tokens, requests;
    double t_write_s; /* seconds spent formatting and writing the request traces */
    /* the pass's own */
    uint32_t *idx; /* (idx_cap) decoded selection */
    size_t idx_cap;
};

extern const struct analyzer_ops hbm_jobs_ops;

/* 0 when the open trace r (named path) is a Salca trace, the check the pass's begin hook
 * makes, for a caller that refuses the trace before it creates its outputs; else ERR_DATA
 * "not a salca trace ('PATH' workload 'W')". */
int hbm_jobs_check(const struct trace_reader *r, const char *path, struct errmsg *e);

/* Frees j's selection buffer (not the writers). */
void hbm_jobs_release(struct hbm_jobs *j);

#endif
