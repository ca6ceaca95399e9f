/*
 * timeline: `acceltrace export timeline` (docs/interop.md#timeline). Replays one config of
 * a results folder again, with the models' schedule hook (replay/model.h, struct
 * model_sched_sink) switched on, and writes what the model scheduled as a Chrome Trace
 * Event Format file (a JSON object {"traceEvents": [...]}; ui.perfetto.dev and
 * chrome://tracing open it):
 *   - one process per model group (a DiSC mode, the Salca pipeline and its dense reference,
 *     SA-Kura), named by "M" process_name events; one thread per hardware unit ("DPU array",
 *     "stage A (gather, attention)", "DMA"), named by thread_name events;
 *   - one "X" complete event per slice: ts and dur in microseconds of modelled time, name the
 *     op, cat its class, args step, block, index, the HBM/DMA bytes and the utilization;
 *   - "C" counter events per unit: bandwidth in GB/s and utilization (0..1), set at a slice's
 *     start and back to 0 at its end;
 *   - "otherData": the model, trace, config, and per track the summed slice time (s) and the
 *     results column it stands for.
 * Bounded size: the first detail_events slices are written one by one; after that the
 * slices of one (step, block) on one track are merged into one (level 1, "block N, k ops"),
 * and after 4 x detail_events those of one step (level 2); a merged slice starts where its
 * first did and lasts their summed time, so per-track sums never change. --steps keeps the
 * slices of steps A..B only (their times stay those of the whole run).
 *
 * The trace is the manifest's trace_path (or opts.trace_path); its content hash must equal
 * the manifest's. The config is rebuilt from the results row of config_index (its "config"
 * object, every key), and its hash must equal the row's config_hash. Nothing prints;
 * errors are ERR_USAGE (no such config, bad options), ERR_NOINPUT (folder or trace
 * missing), ERR_DATA (hash mismatch, bad manifest), ERR_IO.
 */
#ifndef ACCELTRACE_TIMELINE_H
#define ACCELTRACE_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct timeline_opts {
    const char *results_dir; /* the replay's -o folder */
    size_t config_index;     /* which config of it (default 0) */
    const char *trace_path;  /* NULL: the manifest's trace_path */
    bool steps;              /* keep steps step_lo..step_hi only */
    int64_t step_lo, step_hi;
    uint64_t detail_events; /* slices written one by one (0: TIMELINE_DETAIL_EVENTS) */
    const char *out_path;   /* the .json written (temporary, fsync, rename) */
    const char *plot_dir;   /* also a Gantt figure timeline.png of the first step, or NULL */
};

/* Slices written one by one before merging by block [decision: about 6 MB of JSON with its
 * counters]. */
#define TIMELINE_DETAIL_EVENTS 20000u
#define TIMELINE_MAX_TRACKS 32

struct timeline_track {
    char group[48], track[48];
    char busy[48];   /* results column the sum stands for, or "" */
    double sum_s;    /* summed slice time written, seconds */
    uint64_t slices; /* slices the model reported (before merging) */
};

struct timeline_stats {
    char model[32];
    char trace[4096];
    uint64_t slices; /* reported by the model and kept (--steps) */
    uint64_t events; /* events written (X, C and M) */
    uint64_t bytes;  /* size of the file */
    int level;       /* deepest merge level used: 0 none, 1 by block, 2 by step */
    size_t n_tracks;
    struct timeline_track tracks[TIMELINE_MAX_TRACKS];
    bool plotted, rendered; /* Gantt figure data written / PNG made */
    char plot_err[256];     /* why the figure failed (the export still succeeded), or "" */
};

/* Runs the export of o into st (filled as far as it got). 0 or a negative enum err, e set. */
int timeline_export(const struct timeline_opts *o, struct timeline_stats *st, struct errmsg *e);

#endif
