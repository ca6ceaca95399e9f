/*
 * test_trace: synthetic traces of TestRecords for the replay engine's tests, benchmarks and
 * demo (`acceltrace capture test`). Record i has step = i / records_per_step, layer = i %
 * 7, head = i % 3, value uniform in [-1000, 1000], x = value / 8, `numbers` uint32 values
 * below 1000 and a `blob` of blob_bytes pseudo-random bytes, all drawn from the rng
 * substream ("test_trace", i) of the seed, so any record can be regenerated alone.
 * Large numbers/blob sizes make a decode-heavy trace.
 */
#ifndef ACCELTRACE_TEST_TRACE_H
#define ACCELTRACE_TEST_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "formats/trace.pb-c.h"

struct test_trace_params {
    uint64_t n_records;        /* records after the header */
    uint32_t records_per_step; /* >= 1 */
    uint32_t n_numbers;        /* repeated uint32 numbers per record */
    uint32_t blob_bytes;       /* bytes of blob per record */
    uint64_t seed;
    int zstd_level;            /* trace writer level (0 = raw frames) */
};

void test_trace_params_default(struct test_trace_params *p);

/*
 * Fills *rec (caller's storage, initialised here) with record i; *numbers and *blob are
 * allocated with mem_alloc and must be freed with test_trace_record_release.
 */
int test_trace_record(const struct test_trace_params *p, uint64_t i, Acceltrace__Record *rec,
                      Acceltrace__TestRecord *t);
void test_trace_record_release(Acceltrace__TestRecord *t);

/* The header of such a trace (workload "test"); strings are static. */
void test_trace_header(const struct test_trace_params *p, Acceltrace__TraceHeader *h);

/* Writes a whole trace to path. 0 or negative; errtext gets the message. */
int test_trace_write(const char *path, const struct test_trace_params *p, char *errtext,
                     size_t errtext_len);

#endif
