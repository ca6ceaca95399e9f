/*
 * capture: the one interface of a workload capture, as replay/model.h is for models.
 *
 * A workload (disc, salca, kura, the synthetic test trace) defines one
 * `const struct capture_ops capture_<name>_ops` and adds ONE line to the table in
 * capture/capture_registry.c. The ops turn the workload's own parameter struct into an
 * instance, estimate its memory, fill the workload part of the TraceHeader and run,
 * emitting every record after the header through a struct capture_sink.
 *
 * The driver, capture_run, owns everything the workloads share: the memory estimate and its
 * refusal (common/mem.h mem_budget_refuse), the trace writer (NAME.atr.partial, fsync and
 * rename at finish: traces/trace_writer.h), the progress reporter, and the common header
 * fields: producer (common/version.h), workload (the ops' name), command line, UTC time
 * (SOURCE_DATE_EPOCH when set) and params hash (sha256 hex of params_json + model_json).
 *
 * Call sequence of a caller (the CLI, a test):
 *   ops->open(&inst, &params, e)       validates, no heavy allocation (salca: loads the
 *                                       model and generates the task, which its estimate
 *                                       needs)
 *   capture_run(ops, inst, path, &opts, e)
 *                                       refuse above opts.mem_limit_bytes, prepare, header,
 *                                       open the writer, run, finish
 *   the workload's own result accessor on inst (disc_capture_result, ...)
 *   ops->close(inst)
 * Modules never print: capture_run reports progress on stderr through common/progress and
 * returns errors in e.
 */
#ifndef ACCELTRACE_CAPTURE_H
#define ACCELTRACE_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "common/progress.h"
#include "formats/trace.pb-c.h"
#include "traces/trace_key.h"
#include "traces/trace_reorder.h"

/*
 * Where a running capture sends its records. The driver's sink appends them to the trace
 * writer (the writer's message in e on failure); a test may supply its own. The progress
 * reporter belongs to the driver: a source starts it with its total once it knows it.
 */
struct capture_sink {
    /* Receives one record; key NULL derives the index keys from the record. 0 or an err. */
    int (*append)(void *ctx, const Acceltrace__Record *rec, const struct trace_key *key,
                  struct errmsg *e);
    void *ctx;
    /* Optional: makes every record appended so far durable against a killed process
     * (write(2) of the writer's buffer); called at each progress unit. 0 or an err. */
    int (*flush)(void *ctx);
    uint64_t records; /* records appended so far (a resumed run: in the file too) */
    /* 0: a fresh run; else run() starts at this unit, the state of the units before it
     * loaded by checkpoint_load (their records are in the file already) */
    uint64_t resume_unit;
    /* The driver's checkpoint writer (capture_checkpoint); NULL: no checkpoints. */
    int (*checkpoint)(void *ctx, uint64_t unit, struct errmsg *e);
    void *checkpoint_ctx;
    /* The file the checkpoint writer replaces (PATH.ckpt), for a workload that checks the
     * folder's free space first; NULL with no checkpoint writer. */
    const char *checkpoint_path;
    struct progress progress; /* label "<name> capture"; started by capture_progress_begin */
    bool quiet;               /* no progress on stderr */
    bool progress_on;         /* capture_progress_begin was called */
    bool checkpoint_force;    /* capture_checkpoint_now: this checkpoint ignores the interval */
};

/* Sends rec to the sink (counted in s->records). 0 or the sink's error, e set. */
int capture_emit(struct capture_sink *s, const Acceltrace__Record *rec, const struct trace_key *key,
                 struct errmsg *e);

/*
 * Called by a workload's run() at a boundary where units [0, unit) are complete and
 * emitted (a DiSC step, a Salca decode step or layer, a kura sample):
 *     for (uint64_t u = sink->resume_unit; u < n_units; u++) {
 *         ... emit the records of unit u ...
 *         if ((rc = capture_checkpoint(sink, u + 1, e))) goto fail;
 *     }
 * No-op (0) when s->checkpoint is NULL. The driver's writes a checkpoint at most every
 * ACCELTRACE_CHECKPOINT_INTERVAL seconds (default 60; 0: at every boundary): it flushes the
 * trace writer and replaces PATH.ckpt (docs/trace-format.md#checkpoints). 0 or an err.
 */
int capture_checkpoint(struct capture_sink *s, uint64_t unit, struct errmsg *e);

/* capture_checkpoint without the rate limit: for the last unit of a run whose end takes
 * long (a rewrite in another order, capture_ops.final_order), so that a run killed there
 * resumes with every unit done. 0 or an err. */
int capture_checkpoint_now(struct capture_sink *s, uint64_t unit, struct errmsg *e);

/* What a workload asks of its finished trace (capture_ops.final_order). */
struct capture_order {
    /* the order of the records (traces/trace_reorder.h); ctx is the workload's */
    int (*cmp)(const struct trace_reorder_entry *a, const struct trace_reorder_entry *b, void *ctx);
    void *ctx;
    /* the rewritten trace's params_json (its params hash follows it); NULL keeps the
     * file's. Owned by the instance. */
    const char *params_json;
};

/* Bytes a checkpoint file holds beyond its workload's part (the fixed part;
 * docs/trace-format.md#checkpoints), for a workload's free-space check. */
#define CAPTURE_CKPT_OVERHEAD_BYTES 120u

/* Starts the sink's progress report of `total` units (again: restarts it). A resumed run
 * counts the units before s->resume_unit as done before the start, so the estimate of the
 * time left comes from the units this run did. */
void capture_progress_begin(struct capture_sink *s, uint64_t total);
/* Sets the units done. */
void capture_progress_update(struct capture_sink *s, uint64_t done);
/* Final progress line, before work that is not counted (the driver ends it otherwise). */
void capture_progress_end(struct capture_sink *s);

/* The ops of one workload. Every function pointer is set unless marked optional. */
struct capture_ops {
    const char *name;     /* workload: TraceHeader.workload and the `capture NAME` verb */
    const char *summary;  /* one line for listings */
    const char *producer; /* NULL: ACCELTRACE_PRODUCER (common/version.h) */
    /* The header carries no time, command line or params hash, so equal parameters give
     * equal files whatever the environment (the synthetic test traces) */
    bool fixed_header;
    /* Hint of the memory refusal, e.g. "use a smaller --size or raise --mem-limit". */
    const char *mem_hint;

    /* Makes an instance from the workload's parameter struct (copied or referenced as the
     * workload's header says). ERR_USAGE for bad parameters, with the message in e. */
    int (*open)(void **inst, const void *params, struct errmsg *e);
    /* Estimated peak bytes of the run (arithmetic; nothing allocated). */
    uint64_t (*mem_estimate)(const void *inst);
    /* What the estimate is of, for the refusal: "capture kura of a 96x96 map ...". */
    void (*mem_what)(const void *inst, char *what, size_t n);
    /* Optional: loads inputs and allocates the run's state (after the memory check). */
    int (*prepare)(void *inst, struct errmsg *e);
    /* Fills the workload part of hdr (initialised by the driver): params_json, model_json,
     * seed, the provenance (source, one of the names in trace.proto, and source_detail:
     * seeds, files with their sha256, generator parameters) and the workload header.
     * Strings stay owned by inst until close. A header without a source is refused. */
    int (*header)(void *inst, Acceltrace__TraceHeader *hdr, struct errmsg *e);
    /* Runs the capture, emitting every record after the header in the workload's order. */
    int (*run)(void *inst, struct capture_sink *sink, struct errmsg *e);
    /* Frees inst; NULL is a no-op. */
    void (*close)(void *inst);
    /* Optional (NULL: the workload cannot resume; `--resume` on it is ERR_USAGE "capture
     * NAME cannot resume"). Writes the state the run needs to continue at unit `unit`
     * (every record of the units before it has been emitted) to f, in the workload's own
     * layout starting with a version word. f is the checkpoint file itself (streamed, of
     * any size): write large state in pieces. 0 or an err with e set; a failed write of f
     * is reported by the driver as ERR_IO naming the file. */
    int (*checkpoint_save)(void *inst, uint64_t unit, FILE *f, struct errmsg *e);
    /* Reads what checkpoint_save wrote into a prepared inst (called after prepare, before
     * run); a file from other parameters or a bad layout is ERR_DATA naming the file and
     * byte offset (ftell(f) is the offset in the file). f is the checked file, positioned
     * at the workload's part, which ends at the end of the stream. */
    int (*checkpoint_load)(void *inst, uint64_t unit, FILE *f, const char *path, struct errmsg *e);
    /* Optional: called after run() succeeded; true (o filled) when the records must end in
     * another order than run() emitted them. The driver then seals PATH.partial
     * (trace_writer_seal), rewrites it through PATH.reordering into PATH
     * (traces/trace_reorder.h: one frame at a time, header with o->params_json and its
     * params hash) and removes the .partial and the checkpoint. A run killed during the
     * rewrite resumes from its checkpoint like any other (run() checkpoints its last unit
     * with capture_checkpoint_now, so only the records after it are made again). */
    bool (*final_order)(void *inst, struct capture_order *o);
};

/* Options of the driver: what every capture shares. */
struct capture_opts {
    int zstd_level;           /* trace frame compression (default 3; 0 stores raw) */
    uint64_t mem_limit_bytes; /* refuse above this estimate; 0 = no limit (default 8 GiB) */
    bool quiet;               /* no progress on stderr (progress_global_quiet also counts) */
    /* Empty command line and the time of SOURCE_DATE_EPOCH, else 1970-01-01: the same
     * parameters give the same bytes */
    bool reproducible;
    const char *command_line; /* for the header; NULL = "" */
    const char *utc_time;     /* header time as given; NULL = SOURCE_DATE_EPOCH or now */
    /* Continue the killed run of path from path.ckpt (see capture_run) */
    bool resume;
    /* Seconds between checkpoints of a workload that can resume (0: every boundary) */
    double checkpoint_interval_s;
};

/* Defaults: level 3, 8 GiB, progress on, not reproducible, no command line, no resume,
 * a checkpoint every 60 s or every ACCELTRACE_CHECKPOINT_INTERVAL seconds when set. */
void capture_opts_default(struct capture_opts *o);

/* Storage behind the common header strings capture_header_common sets. */
struct capture_header_store {
    char utc[32];
    char params_hash[65];
};

/*
 * Sets the common fields of hdr after ops->header filled the workload part: producer,
 * workload, command line, UTC time and params hash (see the top of this file). Strings point
 * into st, the ops or o. Never fails.
 */
void capture_header_common(const struct capture_ops *ops, const struct capture_opts *o,
                           Acceltrace__TraceHeader *hdr, struct capture_header_store *st);

/*
 * Runs the capture inst of ops into path: refuses (ERR_LIMIT) above o->mem_limit_bytes
 * before preparing anything, prepares, builds the header, opens the trace writer
 * (path.partial, refused when it exists), runs with a sink into the writer, and finishes
 * the trace (fsync, rename to path). On any error the run leaves no path.partial of its own
 * and path as it was.
 * o NULL means capture_opts_default. 0 or a negative enum err with the message in e. The
 * caller keeps inst (its results stay readable) and closes it with ops->close.
 */
int capture_run(const struct capture_ops *ops, void *inst, const char *path,
                const struct capture_opts *o, struct errmsg *e);

/*
 * Resumable captures (docs/trace-format.md#checkpoints). A run of ops with checkpoint_save
 * writes path.ckpt at the boundaries its run() reports (capture_checkpoint), removes a stale
 * one when it starts fresh and removes its own when it finishes. With o->resume, capture_run
 * (after the memory check, prepare and the header) reads path.ckpt: its params hash must be
 * this run's (else ERR_USAGE naming both); path.partial is cut to the recorded length and
 * reopened (traces/trace_writer.h trace_writer_reopen), ops->checkpoint_load reads the
 * workload's state and run() starts at the recorded unit. Without a checkpoint (or without
 * the .partial it belongs to) the run starts fresh, replacing a .partial no writer holds.
 * A bad checkpoint is ERR_DATA naming the file and the byte offset. Checkpoints are written
 * and checked as streams (a fixed 1 MiB buffer), so their size is bounded by the disk only.
 */

/* The checkpoint path of a trace path: path + CAPTURE_CKPT_SUFFIX. */
#define CAPTURE_CKPT_SUFFIX ".ckpt"

/* The unit path.ckpt records in *unit: 0, ERR_NOTFOUND when there is none, ERR_DATA when
 * its fixed part is not a checkpoint's or its length is not the file's (message in e); the
 * CRC is left to the resume, which reads the whole file. For the caller's "resuming at"
 * line. */
int capture_checkpoint_unit(const char *path, uint64_t *unit, struct errmsg *e);

#endif
