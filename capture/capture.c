/*
 * capture: the driver every workload capture runs under (see capture.h). What differed
 * between the workloads before (the producer string, the time rule, the params hash, the
 * writer's error message) is decided here once.
 */
#include "capture/capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/mem.h"
#include "common/sha256.h"
#include "common/version.h"
#include "traces/trace_writer.h"

int capture_emit(struct capture_sink *s, const Acceltrace__Record *rec, const struct trace_key *key,
                 struct errmsg *e)
{
    int rc = s->append(s->ctx, rec, key, e);
    if (!rc)
        s->records++;
    return rc;
}

void capture_progress_begin(struct capture_sink *s, uint64_t total)
{
    const char *label = s->progress.label ? s->progress.label : "capture";
    progress_init(&s->progress, label, total, s->quiet);
    s->progress_on = true;
}

void capture_progress_update(struct capture_sink *s, uint64_t done)
{
    /* a unit of work is done: its records reach the file before it is reported, so a
     * killed capture keeps every unit its progress line counted (docs/trace-format.md);
     * a failing write shows again at the next append or at finish */
    if (s->flush)
        (void)s->flush(s->ctx);
    if (s->progress_on)
        progress_update(&s->progress, done);
}

void capture_progress_end(struct capture_sink *s)
{
    if (s->progress_on)
        progress_finish(&s->progress);
    s->progress_on = false;
}

void capture_opts_default(struct capture_opts *o)
{
    memset(o, 0, sizeof *o);
    o->zstd_level = 3;
    o->mem_limit_bytes = (uint64_t)8 << 30;
}

/* ISO 8601 of t (UTC). */
static void format_utc(time_t t, char out[32])
{
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

/* The header time: SOURCE_DATE_EPOCH (the reproducible-builds convention) wins over the
 * clock; a reproducible run without it takes the epoch [decision]. */
static void header_time(const struct capture_opts *o, char out[32])
{
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    time_t t = sde ? (time_t)strtoll(sde, NULL, 10) : o->reproducible ? 0 : time(NULL);
    format_utc(t, out);
}

void capture_header_common(const struct capture_ops *ops, const struct capture_opts *o,
                           Acceltrace__TraceHeader *hdr, struct capture_header_store *st)
{
    memset(st, 0, sizeof *st);
    hdr->producer = (char *)(ops->producer ? ops->producer : ACCELTRACE_PRODUCER);
    hdr->workload = (char *)ops->name;
    if (ops->fixed_header) { /* equal parameters, equal files, in any environment */
        hdr->command_line = "";
        hdr->utc_time = "1970-01-01T00:00:00Z";
        return;
    }
    hdr->command_line = (char *)(o->reproducible || !o->command_line ? "" : o->command_line);
    if (o->utc_time && !o->reproducible) {
        hdr->utc_time = (char *)o->utc_time;
    } else {
        header_time(o, st->utc);
        hdr->utc_time = st->utc;
    }
    const char *pj = hdr->params_json ? hdr->params_json : "";
    const char *mj = hdr->model_json ? hdr->model_json : "";
    struct sha256 s;
    uint8_t dg[32];
    sha256_init(&s);
    sha256_update(&s, pj, strlen(pj));
    sha256_update(&s, mj, strlen(mj));
    sha256_final(&s, dg);
    sha256_to_hex(dg, st->params_hash);
    hdr->params_hash = st->params_hash;
}

/* The driver's sink: one record into the trace writer. */
static int writer_append(void *ctx, const Acceltrace__Record *rec, const struct trace_key *key,
                         struct errmsg *e)
{
    struct trace_writer *w = ctx;
    int rc = trace_writer_append(w, rec, key);
    if (rc)
        errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
    return rc;
}

static int writer_flush(void *ctx)
{
    return trace_writer_flush(ctx);
}

/* The memory check, before anything large is allocated. */
static int check_memory(const struct capture_ops *ops, const void *inst,
                        const struct capture_opts *o, struct errmsg *e)
{
    uint64_t need = ops->mem_estimate(inst);
    if (!o->mem_limit_bytes || need <= o->mem_limit_bytes)
        return 0;
    char what[160];
    snprintf(what, sizeof what, "capture %s", ops->name);
    if (ops->mem_what)
        ops->mem_what(inst, what, sizeof what);
    return mem_budget_refuse(e, what, need, o->mem_limit_bytes,
                             ops->mem_hint ? ops->mem_hint : "raise --mem-limit");
}

int capture_run(const struct capture_ops *ops, void *inst, const char *path,
                const struct capture_opts *o, struct errmsg *e)
{
    struct capture_opts def;
    if (!o) {
        capture_opts_default(&def);
        o = &def;
    }
    int rc = check_memory(ops, inst, o, e);
    if (!rc && ops->prepare)
        rc = ops->prepare(inst, e);
    if (rc)
        return rc;
    Acceltrace__TraceHeader hdr = ACCELTRACE__TRACE_HEADER__INIT;
    struct capture_header_store st;
    if ((rc = ops->header(inst, &hdr, e)))
        return rc;
    if (!hdr.source || !*hdr.source)
        return errmsg_set(e, ERR_INTERNAL, "capture %s: its header names no source", ops->name);
    capture_header_common(ops, o, &hdr, &st);

    struct trace_writer_opts wo;
    trace_writer_opts_default(&wo);
    wo.zstd_level = o->zstd_level;
    struct trace_writer *w = NULL;
    if ((rc = trace_writer_open(&w, path, &wo, &hdr, e)))
        return rc;

    char label[64];
    snprintf(label, sizeof label, "%s capture", ops->name);
    struct capture_sink sink = {
        .append = writer_append, .ctx = w, .flush = writer_flush, .quiet = o->quiet};
    sink.progress.label = label;
    rc = ops->run(inst, &sink, e);
    capture_progress_end(&sink);
    if (!rc && (rc = trace_writer_finish(w)))
        errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
    trace_writer_free(w); /* removes the .partial unless finished */
    return rc;
}
