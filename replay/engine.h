/*
 * engine: one-pass replay of a trace against many configs (DESIGN.md sections 1 and 5).
 *
 * The engine reads each record once from a record source, lets the model's optional
 * prepare() run once on it, and hands it to every model instance of the current batch;
 * the instances (not the records) are split over a thread pool. Records are decoded in
 * groups of up to `group_records` (or group_bytes of payload) so threads synchronise once
 * per group, not per record. When a sweep holds more configs than `batch_configs`, the
 * trace is read once per batch of configs (an instance may hold much state); with the
 * default (0 = all in one batch) the trace is read exactly once.
 *
 * After the pass each instance's finish() fills a model_result, written to the results
 * folder in config order (resume skips configs already there).
 *
 * Record sources: a trace file (through traces/trace_reader.h) or an in-memory list of
 * packed records (tests, benchmarks); both count the bytes they read.
 */
#ifndef ACCELTRACE_ENGINE_H
#define ACCELTRACE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"
#include "replay/energy.h"
#include "replay/model.h"
#include "replay/results.h"
#include "replay/sweep.h"

/* A stream of decoded records. */
struct record_source {
    void *ctx;
    const char *name; /* for messages */
    const Acceltrace__TraceHeader *(*header)(void *ctx);
    /* Content hash (hex) of the trace, the results key. */
    const char *(*content_hash)(void *ctx);
    /* 1 with *rec (free with record_free), 0 end, <0 error (errmsg). */
    int (*next)(void *ctx, Acceltrace__Record **rec);
    void (*record_free)(void *ctx, Acceltrace__Record *rec);
    /* Back to the first record (before every pass; a no-op when nothing was read yet, so a
     * fresh source is read exactly once). 0 or negative. */
    int (*rewind)(void *ctx);
    uint64_t (*bytes_read)(void *ctx); /* total bytes read from the underlying source */
    uint64_t (*payload_bytes)(void *ctx); /* decoded payload bytes of the last record */
    const char *(*errmsg)(void *ctx);
    void (*close)(void *ctx);
    /* Records per pass when known (trace index), else 0; for progress only. May be NULL. */
    uint64_t (*n_records)(void *ctx);
};

/* Opens a trace file as a source; 0 or negative with e set (ERR_DATA etc. from the reader). */
int record_source_trace(struct record_source *s, const char *path, int decode_threads,
                        struct errmsg *e);

/*
 * A source over records packed in memory: hdr and recs are packed (protobuf) now and
 * unpacked again on every next(), so decode work is real. content hash = XXH3-128 hex over
 * the packed payloads (traces/trace_hash.h). 0 or ERR_NOMEM.
 */
int record_source_mem(struct record_source *s, const Acceltrace__TraceHeader *hdr,
                      Acceltrace__Record *const *recs, size_t n_recs);

/* Closes a source (either kind); safe on a zeroed struct. */
void record_source_close(struct record_source *s);

struct engine_opts {
    int threads;             /* instances split over this many threads; default 1 */
    size_t batch_configs;    /* configs per pass; 0 = all */
    size_t group_records;    /* records decoded per group; default 64 */
    uint64_t group_bytes;    /* payload bytes per group; default 64 MiB */
    unsigned shard_i, shard_n; /* --shard I/N (1-based); 0/0 = everything */
    const struct energy_table *energy; /* applied to each row, or NULL */
    bool quiet;              /* no progress on stderr */
};

void engine_opts_default(struct engine_opts *o);

/* What a run did. */
struct engine_stats {
    size_t configs_total;    /* in the sweep (or shard) */
    size_t configs_skipped;  /* already in the results folder */
    size_t configs_run;
    size_t passes;           /* times the trace was read */
    uint64_t records;        /* records decoded (all passes) */
    uint64_t bytes_read;     /* bytes read from the source (all passes) */
    double seconds;
};

/*
 * Replays source against configs [shard slice] of sweep with model m, writing rows to res.
 * 0 or negative with e set (the message names the config index and file when a model
 * fails). stats may be NULL.
 */
int engine_run(const struct model_ops *m, struct record_source *source,
               const struct sweep *sweep, struct results *res, const struct engine_opts *opts,
               struct engine_stats *stats, struct errmsg *e);

#endif
