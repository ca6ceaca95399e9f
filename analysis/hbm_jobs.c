/*
 * hbm_jobs: the selections of a Salca trace as DRAM request traces (see the header).
 */
#include "analysis/hbm_jobs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/grow.h"
#include "common/mem.h"
#include "common/progress.h"
#include "formats/varint.h"
#include "traces/trace_reader.h"

int hbm_jobs_check(const struct trace_reader *r, const char *path, struct errmsg *e)
{
    const Acceltrace__TraceHeader *hdr = trace_reader_header(r);
    if (!hdr || strcmp(hdr->workload, "salca") != 0)
        return errmsg_set(e, ERR_DATA, "not a salca trace ('%s' workload '%s')", path,
                          hdr ? hdr->workload : "");
    return 0;
}

static int jobs_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    (void)self;
    return hbm_jobs_check(pos->r, pos->path, e);
}

static int write_error(const struct hbm_jobs *j, struct errmsg *e)
{
    return errmsg_set(e, ERR_IO, "cannot write in '%s': %s", j->dir, strerror(errno));
}

/* Exports one selection (record pos->record + 1 in the messages, as `dump` counts). */
static int export_job(struct hbm_jobs *j, const struct trace_scan_pos *pos,
                      const Acceltrace__SalcaSelect *s, struct errmsg *e)
{
    unsigned long long rec_no = (unsigned long long)pos->record + 1;
    if (s->count > s->n_ctx || s->n_ctx > (1u << 26))
        return errmsg_set(e, ERR_DATA,
                          "selection of %u tokens in a context of %u ('%s' record %llu)", s->count,
                          s->n_ctx, pos->path, rec_no);
    if (grow((void **)&j->idx, &j->idx_cap, s->count, sizeof *j->idx))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    size_t got = 0;
    int drc = varint_decode_indices(s->sel.data, s->sel.len, s->n_ctx, j->idx, s->count, &got);
    if (drc < 0 || got != s->count)
        return errmsg_set(e, ERR_DATA,
                          "bad selection list (%zu of %u indices) at step %u layer %u head %u "
                          "('%s' record %llu)",
                          got, s->count, s->t, s->l, s->h, pos->path, rec_no);
    double t0 = progress_now_s();
    for (size_t k = 0; k < 2; k++)
        if (j->x[k] && hbm_export_job(j->x[k], s->l, s->h, j->idx, got) < 0)
            return write_error(j, e);
    j->t_write_s += progress_now_s() - t0;
    char line[160];
    int len = snprintf(line, sizeof line, "%llu,%u,%u,%u,%zu,%llu,%llu\n",
                       (unsigned long long)j->jobs, s->t, s->l, s->h, got,
                       (unsigned long long)j->requests + 1, (unsigned long long)got * j->per_token);
    if (sink_write(j->csv, line, (size_t)len) < 0)
        return write_error(j, e);
    j->jobs++;
    j->tokens += got;
    j->requests += (uint64_t)got * j->per_token;
    return 0;
}

static int jobs_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                       struct errmsg *e)
{
    struct hbm_jobs *j = self;
    const Acceltrace__Record *r = *rec;
    if (r->body_case != ACCELTRACE__RECORD__BODY_SALCA_SELECT)
        return 0;
    const Acceltrace__SalcaSelect *s = r->salca_select;
    if (s->method != (uint32_t)j->method || (j->steps && (s->t < j->step_lo || s->t > j->step_hi)))
        return 0;
    return export_job(j, pos, s, e);
}

const struct analyzer_ops hbm_jobs_ops = {
    .name = "hbm_jobs",
    .begin = jobs_begin,
    .record = jobs_record,
};

void hbm_jobs_release(struct hbm_jobs *j)
{
    if (!j)
        return;
    mem_free(j->idx);
    j->idx = NULL;
    j->idx_cap = 0;
}
