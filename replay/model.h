/*
 * model: the interface every replayed hardware model implements (docs/design.md#replay-and-sweeps).
 *
 * A model is a table of function pointers (struct model_ops) registered once in
 * replay/model_registry.c. For a sweep of N configs the engine creates N instances with
 * ops->new, then reads the trace ONCE and hands every record to every instance with
 * ops->consume (threads split the instances, never the records), then calls ops->finish on
 * each instance, which reports its figures into a struct model_result, and ops->free.
 *
 * Threading contract: one instance is only ever touched by one thread at a time, and the
 * records (and the optional per-record aux data, see prepare) are read-only and shared by
 * all instances, so consume must not modify them. Instances of one sweep never talk to each
 * other; anything worth computing once per record for all configs goes into prepare.
 *
 * Results: finish() adds one or more rows (struct model_result, built with the result_*
 * functions below). Each row holds
 *   - labels: string columns that split one config into several rows ("mode" = "ctr");
 *   - counts: activity counts (MACs, SRAM/HBM bytes, vector ops, cycles per unit ...).
 *     Energy tables (replay/energy.h) apply to counts only, so energy can be recomputed
 *     from results.csv without a replay;
 *   - metrics: derived figures (seconds, utilization, speedup ...).
 * Column names are snake_case, units go separately ("cycles", "B", "pJ", "s", "1" or ""
 * for dimensionless). Every row of a table must have the same columns in the same order.
 * Rows go to results.csv / results.jsonl, or to <table>.csv / <table>.jsonl for a named
 * secondary table (result_row_begin(res, "ops") -> ops.csv), each row prefixed by the key
 * columns (trace_hash, config_hash, config_index, model) and every config key.
 *
 * Errors: new/consume/finish return 0 or a negative enum err and fill e with a message
 * (ERR_DATA for a trace the model cannot replay, ERR_CONFIG for an impossible config).
 *
 * Memory estimates (for batch sizing and --mem-limit). The function to call:
 *
 *   uint64_t model_estimate_bytes(const struct model_ops *m, const struct hw_config *cfg,
 *                                 const Acceltrace__TraceHeader *hdr);
 *
 * the estimated peak bytes that one instance of m for cfg costs while a trace with header
 * hdr (NULL: not known yet) is replayed: the model's optional estimate_bytes hook (its
 * state and result rows; MODEL_ESTIMATE_DEFAULT_BYTES when the model has no hook) plus
 * MODEL_INSTANCE_OVERHEAD_BYTES for the engine's record of the instance (config copy,
 * error message). model_estimate_sweep (replay/model_registry.h) sums it over a sweep;
 * model_estimate_pass_bytes (below) adds what a pass holds once for all instances (shared
 * state, a group of decoded records and their prepare() aux).
 */
#ifndef ACCELTRACE_MODEL_H
#define ACCELTRACE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/io.h"
#include "formats/trace.pb-c.h"
#include "replay/hw_config.h"

/* One record as handed to consume. */
struct model_record {
    const Acceltrace__Record *rec; /* decoded record (owned by the engine, read-only) */
    const void *aux;               /* ops->prepare's output for this record, or NULL */
    uint64_t index;                /* 0-based record number after the header */
};

/*
 * Schedule hook (optional; `acceltrace export timeline`, docs/interop.md#timeline). A model
 * that supports it reports each piece of work to env->sched as its own schedule places it,
 * in modelled time, so a timeline drawn from the slices is the model's schedule and not a
 * redraw of its totals: the slices of one track sum to the busy figure named by `busy`. The
 * engine sets env->sched only when the caller asked for a timeline (engine_opts.sched; one
 * config, one thread); it is NULL in every other replay and a model then does no extra
 * work. All strings are the model's (static or valid during the call); the sink copies.
 */
struct model_slice {
    const char *group; /* process of the timeline: the pipeline or mode ("disc all") */
    const char *track; /* hardware unit ("DPU array", "stage A", "DMA") */
    const char *name;  /* what ran ("sa_qk", "tile 12") */
    const char *cls;   /* op class ("linear", "softmax"), or NULL */
    double t_s, dur_s; /* start and length, seconds of modelled time */
    int64_t step;      /* sampler / decode / drift step, -1 none */
    int64_t block;     /* block or layer, -1 none */
    int64_t index;     /* head, tile or op number within the block, -1 none */
    const char *busy;  /* results column (or column / scale) the slices sum to, or NULL */
    double bytes;      /* HBM (or DMA) bytes the slice moves; 0 none */
    double util;       /* fraction of the unit's peak work rate during the slice; < 0 none */
};

struct model_sched_sink {
    void *ctx;
    /* One slice; 0 or a negative enum err with e set (the model returns it). */
    int (*slice)(void *ctx, const struct model_slice *s, struct errmsg *e);
};

/* What new() learns besides its config. */
struct model_env {
    const Acceltrace__TraceHeader *hdr; /* trace header (owned by the engine) */
    const char *trace_path;             /* for messages; may be "(memory)" */
    void *shared;                       /* ops->shared_new's state, or NULL */
    struct model_sched_sink *sched;     /* the schedule hook above, or NULL (almost always) */
};

/* Rows reported by finish(); opaque, owned by the engine. */
struct model_result;

/* A checkpoint being read back (below). */
struct model_ckpt_in;

struct model_ops {
    const char *name;               /* registry name and the "model" key of configs: "count" */
    const char *workload;           /* TraceHeader.workload it replays ("test", "disc"); NULL any */
    const char *summary;            /* one line for `config show` / `replay --help` */
    const struct hw_schema *schema; /* every config key (replay/hw_config.h) */
    const char *default_config;     /* repo-relative config file ("configs/x.json"), or NULL */
    const char *default_energy_table; /* repo-relative energy table, or NULL */

    /* New instance for cfg (validated against schema); *state receives it. */
    int (*new)(void **state, const struct hw_config *cfg, const struct model_env *env,
               struct errmsg *e);
    /* One record, in trace order. Records of types the model ignores are simply skipped. */
    int (*consume)(void *state, const struct model_record *r, struct errmsg *e);
    /* End of trace: add the rows of this config to res. */
    int (*finish)(void *state, struct model_result *res, struct errmsg *e);
    /* Frees an instance (NULL is a no-op); also called after a failed new/consume/finish. */
    void (*free)(void *state);

    /*
     * Optional (NULL = unused): work done ONCE per record for all instances, on the
     * engine's reading thread before the instances see the record. shared_new builds a
     * read-only-after-prepare state from the header; prepare may return per-record aux data
     * (*aux, freed with aux_free after every instance consumed the record).
     */
    int (*shared_new)(void **shared, const struct model_env *env, struct errmsg *e);
    int (*prepare)(void *shared, const struct model_record *r, void **aux, struct errmsg *e);
    void (*aux_free)(void *shared, void *aux);
    void (*shared_free)(void *shared);

    /*
     * Optional checkpoint hooks (both or neither; NULL = the model cannot checkpoint, and
     * the engine splits a long sweep into batches instead, engine.h). save writes what
     * consume has changed since new; load, called on a fresh instance new() built from
     * the same config, reads it back so the instance continues exactly as the saved one
     * would have (same rows, byte for byte). The bytes stay on this machine and build
     * (native byte order and layout). load returns 0, or ERR_DATA when the bytes do not
     * fit (model_ckpt_get fails). shared_save/shared_load do the same for the state of
     * shared_new/prepare when prepare carries something from one record to the next;
     * they may be NULL when it does not. Called between groups of records, never
     * concurrently with consume.
     */
    int (*save)(const void *state, struct sink *k, struct errmsg *e);
    int (*load)(void *state, struct model_ckpt_in *in, struct errmsg *e);
    int (*shared_save)(const void *shared, struct sink *k, struct errmsg *e);
    int (*shared_load)(void *shared, struct model_ckpt_in *in, struct errmsg *e);

    /*
     * Optional (NULL = MODEL_ESTIMATE_DEFAULT_BYTES): estimated peak bytes of one instance
     * for cfg (validated) on a trace with header hdr (NULL when unknown: assume the
     * workload's default capture): what new() allocates, what consume() grows to and the
     * rows finish() adds (MODEL_RESULT_ROW_BYTES each). Must not allocate, fail or
     * look at anything but cfg and hdr; a few microseconds at most (it runs per config of
     * a sweep before anything is built). Formulas are in
     * docs/models.md#memory-estimates-replay-engine-convention.
     */
    uint64_t (*estimate_bytes)(const struct hw_config *cfg, const Acceltrace__TraceHeader *hdr);
    /*
     * Optional (NULL = MODEL_RECORD_DEFAULT_BYTES per record, nothing shared): what a pass
     * holds once for all instances on a trace with header hdr (NULL: the default capture):
     * *shared_bytes for shared_new's state, *per_record_bytes for one record in flight
     * (the decoded record and prepare's aux; the engine holds a group of them at once).
     */
    void (*estimate_pass)(const Acceltrace__TraceHeader *hdr, uint64_t *shared_bytes,
                          uint64_t *per_record_bytes);
};

/* Engine bytes per instance besides the model's own: the struct the engine keeps for it
 * (with its 512-byte error message) and the config copy [measured: 1.0 KB per config held,
 * count model, 10^5 configs, --batch 100,
 * docs/models.md#memory-estimates-replay-engine-convention]. */
#define MODEL_INSTANCE_OVERHEAD_BYTES 1024u
/* Bytes of one result row of n_cols columns held until it is written: the column array
 * (at least 16 slots of 56 bytes) and each column's name and unit [measured: a 5-column
 * count row costs 1.4 KB]. */
#define MODEL_RESULT_ROW_BYTES(n_cols) (1024u + 120u * (uint64_t)(n_cols))
/* Per-instance estimate of a model without an estimate_bytes hook [decision]. */
#define MODEL_ESTIMATE_DEFAULT_BYTES (64u << 10)

/* Bytes of one record in flight for a model without an estimate_pass hook [decision]. */
#define MODEL_RECORD_DEFAULT_BYTES (64u << 10)

/* See "Memory estimates" above; implemented in replay/model_registry.c. */
uint64_t model_estimate_bytes(const struct model_ops *m, const struct hw_config *cfg,
                              const Acceltrace__TraceHeader *hdr);
/*
 * Bytes a pass of model m holds besides its instances when the engine decodes
 * group_records records at a time: the estimate_pass hook's shared state plus
 * group_records records in flight (saturating).
 */
uint64_t model_estimate_pass_bytes(const struct model_ops *m, const Acceltrace__TraceHeader *hdr,
                                   size_t group_records);

/* Bytes of one instance's checkpoint as handed to load (owned by the engine). */
struct model_ckpt_in {
    const uint8_t *data;
    size_t len, pos; /* pos: bytes consumed so far */
};

/*
 * Copies the next n bytes of in to dst; 0, or ERR_DATA (nothing copied) when fewer than
 * n are left. For load hooks; implemented by the engine.
 */
int model_ckpt_get(struct model_ckpt_in *in, void *dst, size_t n);
/*
 * The next n bytes of in as n bools (a bool is saved as one byte): 0, or ERR_DATA (nothing
 * copied, pos unchanged) when fewer than n are left or a byte is neither 0 nor 1 (a bool
 * holding another value is undefined behaviour in C, so no load hook copies bools raw).
 */
int model_ckpt_get_bools(struct model_ckpt_in *in, bool *dst, size_t n);
/*
 * Whether x, a float read from a checkpoint, is finite and in [lo, hi]. Load hooks check
 * every float so before anything converts it to an integer (out of range, that conversion
 * is undefined behaviour) or divides by it (docs/models.md#checkpoints-replay-engine-convention).
 */
bool model_ckpt_in_range(double x, double lo, double hi);
/*
 * The next n bytes of in copied into a new block of max(n, 1) bytes (*dst; caller frees
 * with mem_free). 0, ERR_DATA or ERR_NOMEM.
 */
int model_ckpt_get_alloc(struct model_ckpt_in *in, void **dst, size_t n);

/*
 * Building rows (SQLite-style sticky error): every result_* call returns 0 or the error of
 * res, and res keeps the FIRST error (code and message); once it holds one, every later
 * result_* call on it is a no-op returning that code. So finish() may call them as plain
 * statements and check once at the end with result_err(res, e); the engine checks it
 * again after finish, and results_append refuses a result that holds an error.
 *
 * Starts a new row in table `table` (NULL or "results" = the main results table). The
 * columns of the row are then added in order with result_label/_count/_metric.
 * 0 or ERR_NOMEM/ERR_USAGE (bad table name: it must be [a-z0-9_]+).
 */
int result_row_begin(struct model_result *res, const char *table);
/* A string column of the current row (no newlines; quoted in CSV as needed).
 * Column names must not hold ',', '"', '[', ']', spaces or newlines (ERR_USAGE), nor may a
 * column come before result_row_begin (ERR_USAGE); ERR_NOMEM when out of memory. */
int result_label(struct model_result *res, const char *name, const char *value);
/* An activity count (exact up to 2^64-1) of the current row, unit e.g. "B", "MAC", "cycles". */
int result_count(struct model_result *res, const char *name, const char *unit, uint64_t value);
/* A count that is not an integer (e.g. an average over steps); energy tables apply to it. */
int result_count_f64(struct model_result *res, const char *name, const char *unit, double value);
/* A derived figure (seconds, utilization, speedup); energy tables do not touch it. */
int result_metric(struct model_result *res, const char *name, const char *unit, double value);
/* An integer derived figure (masks_estimated, number of steps). */
int result_metric_i64(struct model_result *res, const char *name, const char *unit, int64_t value);
/*
 * The first error of a result_* call on res: 0 when none, else its code, with its message
 * copied to e (when e is not NULL), e.g. "bad result table name 'Ops' (it must be
 * [a-z0-9_]+)"; a fixed shorter one ("out of memory adding a result column") when there
 * was no memory left to keep the message. finish() hooks end with
 * `return result_err(res, e);`.
 */
int result_err(const struct model_result *res, struct errmsg *e);

#endif
