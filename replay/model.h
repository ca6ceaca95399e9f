/*
 * model: the interface every replayed hardware model implements (DESIGN.md section 5).
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
 */
#ifndef ACCELTRACE_MODEL_H
#define ACCELTRACE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"
#include "replay/hw_config.h"

/* One record as handed to consume. */
struct model_record {
    const Acceltrace__Record *rec; /* decoded record (owned by the engine, read-only) */
    const void *aux;               /* ops->prepare's output for this record, or NULL */
    uint64_t index;                /* 0-based record number after the header */
};

/* What new() learns besides its config. */
struct model_env {
    const Acceltrace__TraceHeader *hdr; /* trace header (owned by the engine) */
    const char *trace_path;             /* for messages; may be "(memory)" */
    void *shared;                       /* ops->shared_new's state, or NULL */
};

/* Rows reported by finish(); opaque, owned by the engine. */
struct model_result;

struct model_ops {
    const char *name;       /* registry name and the "model" key of configs: "count" */
    const char *workload;   /* TraceHeader.workload it replays ("test", "disc"); NULL any */
    const char *summary;    /* one line for `config show` / `replay --help` */
    const struct hw_schema *schema; /* every config key (replay/hw_config.h) */
    const char *default_config;       /* repo-relative config file ("configs/x.json"), or NULL */
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
};

/*
 * Starts a new row in table `table` (NULL or "results" = the main results table). The
 * columns of the row are then added in order with result_label/_count/_metric.
 * 0 or ERR_NOMEM/ERR_USAGE (bad table name: it must be [a-z0-9_]+).
 */
int result_row_begin(struct model_result *res, const char *table);
/* A string column of the current row (no newlines; quoted in CSV as needed). */
int result_label(struct model_result *res, const char *name, const char *value);
/* An activity count (exact up to 2^64-1) of the current row, unit e.g. "B", "MAC", "cycles". */
int result_count(struct model_result *res, const char *name, const char *unit, uint64_t value);
/* A count that is not an integer (e.g. an average over steps); energy tables apply to it. */
int result_count_f64(struct model_result *res, const char *name, const char *unit, double value);
/* A derived figure (seconds, utilization, speedup); energy tables do not touch it. */
int result_metric(struct model_result *res, const char *name, const char *unit, double value);
/* An integer derived figure (masks_estimated, number of steps). */
int result_metric_i64(struct model_result *res, const char *name, const char *unit,
                      int64_t value);

#endif
