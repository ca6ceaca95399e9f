/*
 * synth_capture: synthetic traces of TestRecords for the replay engine's tests, benchmarks
 * and demo (`acceltrace capture test`, workload "test"). Record i has step = i /
 * records_per_step, layer = i % 7, head = i % 3, value uniform in [-1000, 1000], x = value
 * / 8, `numbers` uint32 values below 1000 and a `blob` of blob_bytes pseudo-random bytes,
 * all drawn from the rng substream ("test_trace", i) of the seed, so any record can be
 * regenerated alone. Large numbers/blob sizes make a decode-heavy trace.
 *
 * The capture interface (capture/capture.h) runs it as capture_test_ops, whose open takes a
 * struct synth_capture_params (copied). Its header is fixed (producer
 * ACCELTRACE_PRODUCER_SYNTH, time 1970-01-01, no command line or params hash): equal
 * parameters give equal files.
 */
#ifndef ACCELTRACE_SYNTH_CAPTURE_H
#define ACCELTRACE_SYNTH_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"
#include "common/err.h"
#include "formats/trace.pb-c.h"

struct synth_capture_params {
    uint64_t n_records;        /* records after the header */
    uint32_t records_per_step; /* >= 1 */
    uint32_t n_numbers;        /* repeated uint32 numbers per record */
    uint32_t blob_bytes;       /* bytes of blob per record */
    uint64_t seed;
    int zstd_level; /* trace writer level (0 = raw frames); synth_capture_write */
};

/* The ops of `capture test`; open takes a const struct synth_capture_params *. */
extern const struct capture_ops capture_test_ops;

/* Defaults: 1000 records, 10 per step, 16 numbers, 64 blob bytes, seed 1, level 3. */
void synth_capture_params_default(struct synth_capture_params *p);

/*
 * Estimated peak bytes of writing such a trace: the program (10 MiB), the writer's index
 * entry per record (48 B, capacity doubled, then packed at finish: 160 B allowed; measured
 * 131 B per record at 10^6 records) and one record's numbers and blob four times (record,
 * packed, compressed, frame) [decision]. Saturates at UINT64_MAX.
 */
uint64_t synth_capture_mem_estimate(const struct synth_capture_params *p);

/*
 * Fills *rec (caller's storage, initialised here) with record i; *numbers and *blob are
 * allocated with mem_alloc and must be freed with synth_capture_record_release.
 */
int synth_capture_record(const struct synth_capture_params *p, uint64_t i, Acceltrace__Record *rec,
                         Acceltrace__TestRecord *t);
void synth_capture_record_release(Acceltrace__TestRecord *t);

/* The whole header of such a trace, as capture_run writes it; strings are static (the
 * params JSON in one static buffer, rewritten by the next call). */
void synth_capture_header(const struct synth_capture_params *p, Acceltrace__TraceHeader *h);

/* Writes a whole trace to path through capture_run (no memory limit). 0 or negative;
 * e (when not NULL) gets the code and message. */
int synth_capture_write(const char *path, const struct synth_capture_params *p, struct errmsg *e);

#endif
