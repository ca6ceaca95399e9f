/*
 * test_trace: synthetic TestRecord traces (see test_trace.h). The record contents are a
 * definition of this generator [decision].
 */
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/rng.h"
#include "replay/test_trace.h"
#include "traces/trace_writer.h"

void test_trace_params_default(struct test_trace_params *p)
{
    memset(p, 0, sizeof *p);
    p->n_records = 1000;
    p->records_per_step = 10;
    p->n_numbers = 16;
    p->blob_bytes = 64;
    p->seed = 1;
    p->zstd_level = 3;
}

int test_trace_record(const struct test_trace_params *p, uint64_t i, Acceltrace__Record *rec,
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
        test_trace_record_release(t);
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

void test_trace_record_release(Acceltrace__TestRecord *t)
{
    mem_free(t->numbers);
    mem_free(t->blob.data);
    t->numbers = NULL;
    t->blob.data = NULL;
}

void test_trace_header(const struct test_trace_params *p, Acceltrace__TraceHeader *h)
{
    static char params[256];
    acceltrace__trace_header__init(h);
    h->producer = "acceltrace test_trace";
    h->workload = "test";
    snprintf(params, sizeof params,
             "{\"blob_bytes\":%u,\"n_numbers\":%u,\"n_records\":%llu,\"records_per_step\":%u,"
             "\"seed\":%llu}",
             p->blob_bytes, p->n_numbers, (unsigned long long)p->n_records, p->records_per_step,
             (unsigned long long)p->seed);
    h->params_json = params;
    h->model_json = "{}";
    h->seed = p->seed;
    h->command_line = "";
    h->utc_time = "1970-01-01T00:00:00Z"; /* fixed so equal params give equal files */
}

int test_trace_write(const char *path, const struct test_trace_params *p, char *errtext,
                     size_t errtext_len)
{
    Acceltrace__TraceHeader h;
    test_trace_header(p, &h);
    struct trace_writer_opts o;
    trace_writer_opts_default(&o);
    o.zstd_level = p->zstd_level;
    struct trace_writer *w;
    int rc = trace_writer_open(&w, path, &o, &h, errtext, errtext_len);
    if (rc)
        return rc;
    for (uint64_t i = 0; i < p->n_records && !rc; i++) {
        Acceltrace__Record rec;
        Acceltrace__TestRecord t;
        if ((rc = test_trace_record(p, i, &rec, &t)))
            break;
        struct trace_key key = {(int32_t)t.step, t.layer, t.head};
        rc = trace_writer_append(w, &rec, &key);
        test_trace_record_release(&t);
    }
    if (!rc)
        rc = trace_writer_finish(w);
    if (rc && errtext)
        snprintf(errtext, errtext_len, "%s", trace_writer_errmsg(w));
    trace_writer_free(w);
    return rc;
}
