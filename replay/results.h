/*
 * results: the results folder of a replay (docs/design.md#replay-and-sweeps).
 *
 *   DIR/results.csv     one row per (config[, labels]): key columns, every config key,
 *                       then the model's labels, counts and metrics; header cells are
 *                       "name [unit]" ("name" when dimensionless)
 *   DIR/results.jsonl   the same rows as JSON objects {"trace_hash", "config_hash",
 *                       "config_index", "model", "config": {...}, "row": i, "rows": n,
 *                       "labels": {...}, "counts": {...}, "metrics": {...}, "units": {...}}
 *
 * When the sweep names its rows (replay/sweep.h, results_set_names) every table gets a
 * column "name" after the key columns (CSV) and a member "name" after "model" (JSON);
 * without names the files are exactly as above.
 *   DIR/<table>.csv/.jsonl  secondary tables a model adds (result_row_begin(res, "ops"))
 *
 * Key columns: trace_hash, config_hash, config_index, model. Rows of one config are
 * written as a group (secondary tables first, the main table last), each row appended and
 * flushed on its own. The main table's JSON lines are the record of what is done: a config
 * is done when all `rows` of its group are in results.jsonl. Opening an existing folder
 * (resume) drops torn or incomplete trailing groups from every file, so a rerun after a
 * SIGKILL appends exactly what is missing and the final files equal an uninterrupted run's
 * byte for byte (rows come in config_index order either way). A folder holding rows of a
 * different trace or model is refused (ERR_USAGE). Only the tail may be dropped: a torn
 * last line, the rows of the one group in flight and CSV rows past the JSON lines; a
 * corrupt line with rows after it, or a CSV row whose keys differ from its JSON line, is
 * ERR_DATA naming file and line. What was dropped is told by results_dropped().
 *
 *   DIR/.lock           flock(2) by every writer (replay, merge, energy) for its whole run;
 *                       holds "PID VERB" of the holder. A second writer is refused
 *                       (ERR_USAGE naming the folder and the holder); readers of a merge
 *                       take it shared.
 *   DIR/manifest.json   what made the rows (struct results_manifest), written before the
 *                       first row (temporary + rename). A run whose manifest differs in any
 *                       compared field is refused before anything is touched (ERR_USAGE
 *                       naming each field that changed), so two sweeps never mix.
 *
 * struct model_result (replay/model.h) collects one config's rows before they are written.
 */
#ifndef ACCELTRACE_RESULTS_H
#define ACCELTRACE_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "replay/energy.h"
#include "replay/hw_config.h"
#include "replay/model.h"
#include "replay/sweep.h"

struct results;

/* Hex digests in manifests: XXH3-128 (32 hex digits) + NUL. */
#define RESULTS_HASH_HEX 65

/*
 * What made a results folder. All strings are the caller's; NULL means "none" (no grid,
 * no energy table, no shard). Compared on rerun: every field but `command` and
 * `energy_path`.
 */
struct results_manifest {
    const char *version;             /* tool version */
    const char *model;               /* model name */
    const char *trace_hash;          /* trace content hash (hex) */
    const char *config_hash;         /* hash of the resolved base config (hw_config_hash) */
    const char *grid_hash;           /* results_hash_json_file of the sweep grid, or NULL */
    size_t n_configs;                /* configs in the sweep (all shards) */
    const char *energy_hash;         /* results_hash_json_file of the energy table, or NULL */
    const char *energy_path;         /* for messages only */
    const char *shard;               /* "I/N" or NULL */
    const char *command;             /* command line, informational */
    const char *trace_source;        /* the trace header's source, informational, or NULL */
    const char *trace_source_detail; /* its source_detail, informational, or NULL */
    const char *trace_path;          /* absolute path of the trace replayed, informational (what
                                        `export timeline` replays again), or NULL */
};

/*
 * What made a folder of figures or analyzer outputs (`plot`, `analyze`): the provenance
 * the report shows under each figure. Strings are the caller's; NULL: none.
 */
struct results_output_manifest {
    const char *kind;          /* "plot", "analyze hash", ... */
    const char *version;       /* tool version */
    const char *command;       /* command line */
    const char *const *inputs; /* (n_inputs) results folders and traces read */
    size_t n_inputs;
    const char *trace_hash;          /* of the trace behind the inputs, or NULL */
    const char *config_hash;         /* of the replay's base config, or NULL */
    const char *trace_source;        /* the trace header's source, or NULL */
    const char *trace_source_detail; /* its source_detail, or NULL */
};

/*
 * Writes DIR/manifest.json for m ({"format": 1, "kind", "version", "command", "inputs",
 * "trace_hash", "config_hash", "trace_source", "trace_source_detail"}) through a
 * temporary, fsync and rename, as a results folder's manifest is written. A results
 * folder's own manifest.json (one without "kind": DIR is where a replay wrote rows) is
 * left as it is, since it is what guards its rows. 0 or ERR_IO/ERR_NOMEM with e set.
 */
int results_write_output_manifest(const char *dir, const struct results_output_manifest *m,
                                  struct errmsg *e);

/*
 * XXH3-128 hex of the canonical form (keys sorted, compact) of the JSON file `path`, so
 * layout and key order do not matter. 0, or ERR_NOINPUT/ERR_CONFIG with e set.
 */
int results_hash_json_file(const char *path, char out[RESULTS_HASH_HEX], struct errmsg *e);

/*
 * Trace content hash of the rows of results folder DIR: its manifest's, else the first
 * row's of results.jsonl. 0, ERR_NOTFOUND (no manifest, no rows) or ERR_IO/ERR_DATA with
 * e set. out gets at most n bytes.
 */
int results_trace_hash(const char *dir, char *out, size_t n, struct errmsg *e);

/*
 * Locks results folder DIR (created when missing) through DIR/.lock: exclusive for a
 * writer (records "PID VERB" in it), shared for a reader. Never waits: a folder held
 * otherwise is ERR_USAGE naming the folder and the holder. *fd receives the lock's
 * descriptor; release with results_unlock (closing it drops the lock).
 */
int results_lock(const char *dir, bool exclusive, const char *verb, int *fd, struct errmsg *e);
void results_unlock(int fd);

/*
 * Opens (creating) DIR, locked for the whole life of the handle, for the rows that
 * manifest m describes: an existing DIR/manifest.json must equal m (else ERR_USAGE naming
 * what changed, nothing touched); a folder with rows but no manifest is refused; otherwise
 * the manifest is written. Then existing rows are checked and trimmed as above.
 */
int results_open_manifest(struct results **out, const char *dir, const struct results_manifest *m,
                          struct errmsg *e);
/*
 * What opening dropped from the files ("'DIR/results.jsonl': a torn last line (line 31);
 * ..."), or NULL when nothing was dropped. Owned by r.
 */
const char *results_dropped(const struct results *r);

/*
 * Opens (creating) DIR, locked, for the rows of trace `trace_hash` and model `model`
 * without a manifest (tests, library users); existing rows are checked and trimmed as
 * above. 0 or negative with e set.
 */
int results_open(struct results **out, const char *dir, const char *trace_hash, const char *model,
                 struct errmsg *e);
/*
 * Names the rows of configs written from now on with sweep_name(s, config_index): a "name"
 * column (see above) when s names its rows; NULL or a sweep without names: none. s stays
 * the caller's and must outlive the writes.
 */
void results_set_names(struct results *r, const struct sweep *s);

/* True when config_hash's rows are all present. */
bool results_done(const struct results *r, const char *config_hash);
/* Number of configs done. */
size_t results_n_done(const struct results *r);

/*
 * Writes the rows of one config (energy applied first when `energy` is not NULL).
 * 0 or negative with e set (ERR_INTERNAL when a table's columns change between rows).
 */
int results_append(struct results *r, const struct hw_config *cfg, size_t config_index,
                   struct model_result *res, const struct energy_table *energy, struct errmsg *e);
/* Closes the files; returns the first error. NULL is a no-op. */
int results_close(struct results *r);

/* A new, empty model_result (engine side). */
struct model_result *model_result_new(void);
void model_result_free(struct model_result *res);
/* Number of rows collected. */
size_t model_result_rows(const struct model_result *res);
/* Value of a count or metric column of row i by name; 0, or ERR_NOTFOUND. */
int model_result_get(const struct model_result *res, size_t row, const char *name, double *v);

/*
 * Joins results folders (shards) into out_dir: every table's rows in config_index order,
 * streamed line by line (each folder's rows are in config order, as replay writes them;
 * memory does not grow with the files). Refuses mixed traces or models, differing headers
 * or manifests, rows out of order, CSV rows that differ from their JSON lines, and
 * duplicate configs (ERR_DATA naming the folders). out_dir is locked; inputs are locked
 * shared. Each file is written to a temporary and renamed, so a failure (ENOSPC) leaves
 * the previous files. When the inputs carry manifests, out_dir gets theirs without the
 * shard. 0 or negative with e set: an input folder that does not exist is ERR_NOINPUT, a
 * file named as one ERR_USAGE.
 */
int results_merge(const char *const *dirs, size_t n_dirs, const char *out_dir, struct errmsg *e);

/*
 * Recomputes the energy columns of every table of results folder DIR (results.csv and
 * results.jsonl, ops.csv and ops.jsonl, ...) from their counts with table t, streaming:
 * the energy columns (energy_j and energy_<component>_j, unit J) are dropped from the CSV
 * header and rows and from each JSON line's metrics and units, and t's are appended, as
 * replay --energy writes them; every other column is kept byte for byte. Rows lacking a
 * count t names get empty CSV cells and no JSON energy keys. The folder is locked; files
 * are written to temporaries and renamed; the manifest's energy table becomes t's
 * (energy_hash from results_hash_json_file). A torn or mismatched row is ERR_DATA. *n_rows
 * (may be NULL) receives the rows rewritten. 0 or negative with e set.
 */
int results_energy(const char *dir, const struct energy_table *t, const char *energy_hash,
                   size_t *n_rows, struct errmsg *e);

#endif
