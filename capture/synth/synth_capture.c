/*
 * synth_capture: synthetic TestRecord traces (see synth_capture.h). The record contents are
 * a definition of this generator [decision]; the rng substream keeps its first name,
 * "test_trace", so traces keep their bytes.
 */
#include "capture/synth/synth_capture.h"

#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/rng.h"
#include "common/version.h"

void synth_capture_params_default(struct synth_capture_params *p)
{
    memset(p, 0, sizeof *p);
    p->n_records = 1000;
    p->records_per_step = 10;
    p->n_numbers = 16;
    p->blob_bytes = 64;
    p->seed = 1;
    p->zstd_level = 3;
}

uint64_t synth_capture_mem_estimate(const struct synth_capture_params *p)
{
    double need = 10485760.0 + 160.0 * (double)p->n_records +
                  4.0 * (4.0 * p->n_numbers + (double)p->blob_bytes);
    return need < 1.8e19 ? (uint64_t)need : UINT64_MAX;
}

int synth_capture_record(const struct synth_capture_params *p, uint64_t i, Acceltrace__Record *rec,
                         Acceltrace__TestRecord *t)
{
    acceltrace__record__init(rec);
    acceltrace__test_record__init(t);
    struct rng r;
    rng_stream(&r, p->seed, "test_trace", i, 0);
    uint32_t rps = p->records_per_step ? p->records_per_step : 1;
    t->step = (uint32_t)(i / rps);
    t->layer = (int32_t)(i % 7);
    t->head = (int32_t)(i % 3);
    t->value = (int64_t)rng_below(&r, 2001) - 1000;
    t->x = (double)t->value / 8.0;
    t->n_numbers = p->n_numbers;
    t->numbers = mem_alloc((p->n_numbers + 1) * sizeof *t->numbers);
    t->blob.len = p->blob_bytes;
    t->blob.data = mem_alloc(p->blob_bytes + 1);
    if (!t->numbers || !t->blob.data) {
        synth_capture_record_release(t);
        return ERR_NOMEM;
    }
    for (uint32_t k = 0; k < p->n_numbers; k++)
        t->numbers[k] = (uint32_t)rng_below(&r, 1000);
    for (uint32_t k = 0; k < p->blob_bytes; k += 8) {
        uint64_t v = rng_u64(&r);
        for (uint32_t b = 0; b < 8 && k + b < p->blob_bytes; b++)
            t->blob.data[k + b] = (uint8_t)(v >> (8 * b));
    }
    rec->body_case = ACCELTRACE__RECORD__BODY_TEST;
    rec->test = t;
    return 0;
}

void synth_capture_record_release(Acceltrace__TestRecord *t)
{
    mem_free(t->numbers);
    mem_free(t->blob.data);
    t->numbers = NULL;
    t->blob.data = NULL;
}

/* ---- the capture interface ---- */

struct synth_capture {
    struct synth_capture_params p;
    char params_json[256];
};

/* The workload part of the header; params_json points at buf. */
static void fill_header(const struct synth_capture_params *p, Acceltrace__TraceHeader *h, char *buf,
                        size_t n)
{
    snprintf(buf, n,
             "{\"blob_bytes\":%u,\"n_numbers\":%u,\"n_records\":%llu,\"records_per_step\":%u,"
             "\"seed\":%llu}",
             p->blob_bytes, p->n_numbers, (unsigned long long)p->n_records, p->records_per_step,
             (unsigned long long)p->seed);
    h->params_json = buf;
    h->model_json = "{}";
    h->seed = p->seed;
    h->source = "synthetic";
    h->source_detail = "capture test: generated test records (params_json)";
}

void synth_capture_header(const struct synth_capture_params *p, Acceltrace__TraceHeader *h)
{
    static char params[256];
    struct capture_opts o;
    struct capture_header_store st;
    acceltrace__trace_header__init(h);
    fill_header(p, h, params, sizeof params);
    capture_opts_default(&o);
    capture_header_common(&capture_test_ops, &o, h, &st); /* fixed: nothing points into st */
}

static int synth_open(void **inst, const void *params, struct errmsg *e)
{
    struct synth_capture *c = mem_calloc(1, sizeof *c);
    *inst = c;
    if (!c)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    c->p = *(const struct synth_capture_params *)params;
    return 0;
}

static uint64_t synth_estimate(const void *inst)
{
    return synth_capture_mem_estimate(&((const struct synth_capture *)inst)->p);
}

static void synth_what(const void *inst, char *what, size_t n)
{
    const struct synth_capture *c = inst;
    snprintf(what, n, "capture test of %llu records", (unsigned long long)c->p.n_records);
}

static int synth_header(void *inst, Acceltrace__TraceHeader *h, struct errmsg *e)
{
    struct synth_capture *c = inst;
    (void)e;
    fill_header(&c->p, h, c->params_json, sizeof c->params_json);
    return 0;
}

static int synth_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    const struct synth_capture_params *p = &((struct synth_capture *)inst)->p;
    int rc = 0;
    for (uint64_t i = sink->resume_unit; i < p->n_records && !rc; i++) {
        Acceltrace__Record rec;
        Acceltrace__TestRecord t;
        if ((rc = synth_capture_record(p, i, &rec, &t))) {
            errmsg_set(e, rc, "out of memory");
            break;
        }
        struct trace_key key = {(int32_t)t.step, t.layer, t.head};
        rc = capture_emit(sink, &rec, &key, e);
        synth_capture_record_release(&t);
        if (!rc)
            rc = capture_checkpoint(sink, i + 1, e);
    }
    return rc;
}

/* Checkpoint layout: u32 version 1, u64 record count (the units are records; each is a
 * pure function of the parameters and its index, so there is no other state). */
static int synth_ckpt_save(void *inst, uint64_t unit, FILE *f, struct errmsg *e)
{
    const struct synth_capture *c = inst;
    uint32_t ver = 1;
    (void)unit;
    if (fwrite(&ver, 4, 1, f) != 1 || fwrite(&c->p.n_records, 8, 1, f) != 1)
        return errmsg_set(e, ERR_NOMEM, "out of memory for a checkpoint");
    return 0;
}

static int synth_ckpt_load(void *inst, uint64_t unit, FILE *f, const char *path, struct errmsg *e)
{
    const struct synth_capture *c = inst;
    uint32_t ver = 0;
    uint64_t n = 0;
    long off = ftell(f);
    if (fread(&ver, 4, 1, f) != 1 || ver != 1)
        return errmsg_set(e, ERR_DATA, "checkpoint '%s': bad test capture version at offset %ld",
                          path, off);
    off = ftell(f);
    if (fread(&n, 8, 1, f) != 1 || n != c->p.n_records || unit > n)
        return errmsg_set(e, ERR_DATA,
                          "checkpoint '%s': record count at offset %ld is not this run's %llu",
                          path, off, (unsigned long long)c->p.n_records);
    return 0;
}

static void synth_close(void *inst)
{
    mem_free(inst);
}

const struct capture_ops capture_test_ops = {
    .name = "test",
    .summary = "synthetic TestRecords for the replay engine's tests",
    .producer = ACCELTRACE_PRODUCER_SYNTH,
    .fixed_header = true,
    .mem_hint = "use fewer --records or raise --mem-limit",
    .open = synth_open,
    .mem_estimate = synth_estimate,
    .mem_what = synth_what,
    .header = synth_header,
    .run = synth_run,
    .close = synth_close,
    .checkpoint_save = synth_ckpt_save,
    .checkpoint_load = synth_ckpt_load,
};

int synth_capture_write(const char *path, const struct synth_capture_params *p, struct errmsg *err)
{
    struct errmsg e = {0};
    void *inst = NULL;
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = p->zstd_level;
    o.mem_limit_bytes = 0;
    o.quiet = true;
    int rc = capture_test_ops.open(&inst, p, &e);
    if (!rc)
        rc = capture_run(&capture_test_ops, inst, path, &o, &e);
    capture_test_ops.close(inst);
    if (rc && err)
        errmsg_set(err, rc, "%s", errmsg_text(&e));
    return rc;
}
