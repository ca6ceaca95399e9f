/*
 * engine: one-pass replay of a trace against many configs (docs/design.md#data-flow,
 * docs/design.md#replay-and-sweeps).
 *
 * The engine reads each record once from a record source, lets the model's optional
 * prepare() run once on it, and hands it to every model instance of the current batch;
 * the instances (not the records) are split over a thread pool. Records are decoded in
 * groups of up to `group_records` (or group_bytes of payload) so threads synchronise once
 * per group, not per record. When a sweep holds more configs than `batch_configs`, the
 * trace is read once per batch of configs (an instance may hold much state); with the
 * default (0 = all in one batch) the trace is read exactly once.
 *
 * After the pass each instance's finish() fills a model_result, handed in config order to
 * the run's sink: written to the results folder (engine_run; resume skips configs already
 * there), or taken by the caller (engine_run_to with its own engine_sink).
 *
 * Checkpoints (opts.checkpoint_dir set): when the model has save/load hooks (model.h), the
 * engine writes the state of every instance of the pass, at a group boundary every
 * opts.checkpoint_s seconds (and every opts.checkpoint_records records when set), to
 * DIR/replay.ckpt through a temporary DIR/replay.ckpt.tmp that is fsynced and renamed; the
 * file is removed once the pass's rows are written. A run that finds a checkpoint naming
 * the same trace content hash, model and (not yet done) configs loads the instances from
 * it and continues the trace where it was saved, so a killed single-pass replay reruns
 * only what followed the last checkpoint and ends with the same rows byte for byte. A
 * checkpoint that does not fit is ignored (stats.note says why) and the pass starts over.
 * Layout, all integers little-endian:
 *   "ATCKPT02"  u32 n + build id (XXH3-128 of the executable: a checkpoint of another
 *   build is ignored)  u32 n + trace content hash  u32 n + model name
 *   u64 records consumed  u64 source position (trace: byte offset of the next frame, whose
 *   number is records + 1)
 *   u64 n_instances  u64 n + shared state (shared_save; 0 bytes without)
 *   n_instances x (u64 config_index  u32 n + config hash  u64 n + state (save))
 *   u32 crc32c of every byte before it
 * Models without the hooks fall back to batches: a sweep of more than one config is split
 * into ENGINE_FALLBACK_PASSES passes whose rows are written as each pass ends.
 *
 * Default batch (opts.batch_configs 0): as many instances per pass as fit in
 * opts.mem_limit_bytes at the largest per-instance estimate of the configs to do
 * (model_estimate_bytes, replay/model.h), and at most ENGINE_MAX_BATCH_CONFIGS; all of them
 * when they fit, the trace then read exactly once.
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
    /* The trace header, owned by the source: the same pointer from open to close, across
     * rewinds (which may reopen the file), so callers may keep it for the whole run. */
    const Acceltrace__TraceHeader *(*header)(void *ctx);
    /* Content hash (hex) of the trace, the results key. */
    const char *(*content_hash)(void *ctx);
    /* 1 with *rec (free with record_free), 0 end, <0 error (errmsg). */
    int (*next)(void *ctx, Acceltrace__Record **rec);
    void (*record_free)(void *ctx, Acceltrace__Record *rec);
    /* Back to the first record (before every pass; a no-op when nothing was read yet, so a
     * fresh source is read exactly once). 0 or negative (ERR_DATA when the trace file
     * was replaced by another content between passes). */
    int (*rewind)(void *ctx);
    uint64_t (*bytes_read)(void *ctx);    /* total bytes read from the underlying source */
    uint64_t (*payload_bytes)(void *ctx); /* decoded payload bytes of the last record */
    const char *(*errmsg)(void *ctx);
    void (*close)(void *ctx);
    /* Records per pass when known (trace index), else 0; for progress only. May be NULL. */
    uint64_t (*n_records)(void *ctx);
    /* Where the next record starts (trace: byte offset of its frame; memory: its number).
     * May be NULL (no checkpoints then). */
    uint64_t (*position)(void *ctx);
    /* On a fresh or rewound source: continue after `records` records, at `position` as
     * position() reported it then. 0 or negative (errmsg). May be NULL. */
    int (*seek)(void *ctx, uint64_t records, uint64_t position);
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
    int threads;                       /* instances split over this many threads; default 1 */
    size_t batch_configs;              /* configs per pass; 0 = what mem_limit_bytes holds */
    size_t group_records;              /* records decoded per group; default 64 */
    uint64_t group_bytes;              /* payload bytes per group; default 64 MiB */
    unsigned shard_i, shard_n;         /* --shard I/N (1-based); 0/0 = everything */
    const struct energy_table *energy; /* applied to each row, or NULL */
    bool quiet;                        /* no progress on stderr */
    const char *checkpoint_dir;        /* folder of replay.ckpt (the results folder); NULL: none */
    double checkpoint_s;            /* seconds between checkpoints (default 0.25; at least 20 times
                                       what the last one took); <= 0 with checkpoint_records 0:
                                       none */
    uint64_t checkpoint_records;    /* also after this many records; 0 = by time only */
    double stop_after_s;            /* >= 0: stop at the first checkpoint written this many seconds
                                       after the start (stats.stopped; a rerun continues); default
                                       -1, never */
    uint64_t mem_limit_bytes;       /* instances of one pass; 0 = ENGINE_DEFAULT_MEM_LIMIT */
    struct model_sched_sink *sched; /* schedule hook handed to the models (model.h), or NULL;
                                       set it with one config, one thread, no checkpoints */
    const char *build_id;           /* identity written into and required of checkpoints; NULL: the
                                       hash of /proc/self/exe (tests set two values to stand for two
                                       builds) */
};

/* Memory the instances of one pass may take by default (8 GiB) [decision]. */
#define ENGINE_DEFAULT_MEM_LIMIT ((uint64_t)8 << 30)
/* Instances of one default pass at most, whatever the memory limit [decision;
 * docs/models.md#memory-estimates-replay-engine-convention]: one more read of the trace per 16384
 * configs costs the demo sweeps under 2% of their time (decode per record / consume per record and
 * config, measured by `replay --dry-run`: count 160, salca 60, disc 265, kura < 1), while the
 * memory of a large grid stops growing with it (a 10^6-config count grid: 43 MB of instances, not
 * 2.6 GB; the salca model: 1.1 GiB, not the whole default limit). --batch overrides it. */
#define ENGINE_MAX_BATCH_CONFIGS ((size_t)16384)
/* Passes of a sweep whose model cannot checkpoint: a kill loses at most a quarter of the
 * work, for three more reads of the trace [decision]. */
#define ENGINE_FALLBACK_PASSES 4

void engine_opts_default(struct engine_opts *o);

/* What a run did. */
struct engine_stats {
    size_t configs_total;   /* in the sweep (or shard) */
    size_t configs_skipped; /* already in the results folder */
    size_t configs_run;
    size_t passes;       /* times the trace was read */
    uint64_t records;    /* records decoded (all passes) */
    uint64_t bytes_read; /* bytes read from the source (all passes) */
    double seconds;
    size_t batch_configs;      /* instances per pass used */
    size_t checkpoints;        /* checkpoints written */
    uint64_t checkpoint_bytes; /* size of the last one */
    uint64_t resumed_records;  /* records a checkpoint spared (not replayed) */
    char note[400];            /* why a checkpoint found was ignored, or "" */
    bool stopped;              /* stop_after_s ended the run at a checkpoint: rows missing */
};

/*
 * Replays source against configs [shard slice] of sweep with model m, writing rows to res
 * (engine_run_to with the sink of engine_sink_results). 0 or negative with e set (the
 * message names the config index and file when a model fails). stats may be NULL.
 */
int engine_run(const struct model_ops *m, struct record_source *source, const struct sweep *sweep,
               struct results *res, const struct engine_opts *opts, struct engine_stats *stats,
               struct errmsg *e);

/*
 * Where the result of each config goes when its pass ends: a results folder
 * (engine_sink_results) or the caller (a verb that prints or plots what it replayed).
 */
struct engine_sink {
    void *ctx;
    /* Whether the config with this hash needs no replay (already written); NULL = none. */
    bool (*done)(void *ctx, const char *config_hash);
    /* The result of config config_index (cfg) with the run's energy table (may be NULL),
     * called in config order within a pass, from the calling thread. The sink may take the
     * result (*res = NULL; it then frees it with model_result_free). 0 or negative with e
     * set (the run stops with that code and message). */
    int (*rows)(void *ctx, const struct hw_config *cfg, size_t config_index,
                struct model_result **res, const struct energy_table *energy, struct errmsg *e);
};

/* The sink of a results folder: configs already in res are done; rows go through
 * results_append (energy applied). res stays the caller's. */
void engine_sink_results(struct engine_sink *s, struct results *res);

/* The configs of a run: a sweep (sweep not NULL), or an explicit list of n_list configs
 * (copied as each batch needs them; the list stays the caller's). Shards slice either. */
struct engine_configs {
    const struct sweep *sweep;
    struct hw_config *const *list;
    size_t n_list;
};

/*
 * The one-pass replay of engine_run with any configs and any sink: the batches,
 * threads, checkpoints (with opts.checkpoint_dir) and stats of engine_run, each config's
 * result handed to sink->rows. 0 or negative with e set.
 */
int engine_run_to(const struct model_ops *m, struct record_source *source,
                  const struct engine_configs *configs, const struct engine_sink *sink,
                  const struct engine_opts *opts, struct engine_stats *stats, struct errmsg *e);

#endif
